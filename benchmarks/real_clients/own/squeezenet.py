# SqueezeNet 1.0: 7x7/2 conv stem, eight Fire modules (1x1 squeeze, then parallel 1x1 and 3x3
# expand concatenated), max-pools after conv1, fire4 and fire8, dropout, 1x1 conv classifier and
# global average pooling (no fully connected layer).
# Own re-implementation from "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and
# <0.5MB model size" (Iandola et al., 2016), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


class Fire(nn.Module):
    def __init__(self, cin, s1x1, e1x1, e3x3):
        super().__init__()
        self.squeeze = nn.Conv2d(cin, s1x1, 1)
        self.expand1x1 = nn.Conv2d(s1x1, e1x1, 1)
        self.expand3x3 = nn.Conv2d(s1x1, e3x3, 3, padding=1)

    def forward(self, x):
        s = F.relu(self.squeeze(x))
        return torch.cat((F.relu(self.expand1x1(s)), F.relu(self.expand3x3(s))), dim=1)


class SqueezeNet(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 96, 7, stride=2)
        self.fire2 = Fire(96, 16, 64, 64)
        self.fire3 = Fire(128, 16, 64, 64)
        self.fire4 = Fire(128, 32, 128, 128)
        self.fire5 = Fire(256, 32, 128, 128)
        self.fire6 = Fire(256, 48, 192, 192)
        self.fire7 = Fire(384, 48, 192, 192)
        self.fire8 = Fire(384, 64, 256, 256)
        self.fire9 = Fire(512, 64, 256, 256)
        self.conv10 = nn.Conv2d(512, num_classes, 1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 3, 2, ceil_mode=True)
        x = self.fire4(self.fire3(self.fire2(x)))
        x = F.max_pool2d(x, 3, 2, ceil_mode=True)
        x = self.fire8(self.fire7(self.fire6(self.fire5(x))))
        x = F.max_pool2d(x, 3, 2, ceil_mode=True)
        x = self.fire9(x)
        x = F.dropout(x, 0.5, self.training)
        x = F.relu(self.conv10(x))
        x = F.adaptive_avg_pool2d(x, 1)
        return x.view(x.size(0), -1)
