# MnasNet-A1 (224x224): searched architecture from the paper's Figure 7 -- SepConv stem block,
# MBConv6/MBConv3 blocks with 3x3 or 5x5 depthwise kernels, squeeze-excite in the 40-, 112- and
# 160-channel stages, ReLU activations, 1280-channel 1x1 head.
# Own re-implementation from "MnasNet: Platform-Aware Neural Architecture Search for Mobile"
# (Tan et al., 2018), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


class SqEx(nn.Module):
    def __init__(self, ch, squeeze):
        super().__init__()
        self.conv_reduce = nn.Conv2d(ch, squeeze, 1, bias=True)
        self.conv_expand = nn.Conv2d(squeeze, ch, 1, bias=True)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        s = self.conv_expand(F.relu(self.conv_reduce(s)))
        return x * torch.sigmoid(s)


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, k, stride, se):
        super().__init__()
        mid = cin * expand
        self.pw = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True))
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
                                nn.BatchNorm2d(mid), nn.ReLU(inplace=True))
        self.se = SqEx(mid, max(1, cin // 4)) if se else nn.Identity()
        self.pwl = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.add = cin == cout and stride == 1

    def forward(self, x):
        y = self.pwl(self.se(self.dw(self.pw(x))))
        if self.add:
            y = y + x
        return y


class MnasNetA1(nn.Module):
    # expand, kernel, out, repeats, stride, SE
    arch = [
        (6, 3, 24, 2, 2, False),
        (3, 5, 40, 3, 2, True),
        (6, 3, 80, 4, 2, False),
        (6, 3, 112, 2, 1, True),
        (6, 5, 160, 3, 2, True),
        (6, 3, 320, 1, 1, False),
    ]

    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        # SepConv 3x3, 16 channels, no residual
        self.sep = nn.Sequential(
            nn.Conv2d(32, 32, 3, 1, 1, groups=32, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.Conv2d(32, 16, 1, bias=False), nn.BatchNorm2d(16),
        )
        layers, c = [], 16
        for e, k, o, n, s, se in self.arch:
            for i in range(n):
                layers.append(MBConv(c, o, e, k, s if i == 0 else 1, se))
                c = o
        self.blocks = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Conv2d(320, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU(inplace=True))
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = self.sep(self.stem(x))
        x = self.head(self.blocks(x))
        x = x.mean((2, 3))
        return self.classifier(F.dropout(x, 0.2, self.training))
