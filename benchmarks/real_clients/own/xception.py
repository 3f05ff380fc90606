# Xception (299x299): entry flow (two plain convs, three residual blocks of separable convs with
# strided max-pool and 1x1 strided projection shortcuts), middle flow (8 x three ReLU-SepConv-BN
# with identity shortcut), exit flow (residual block to 1024, SepConv 1536 and 2048), GAP, FC.
# Own re-implementation from "Xception: Deep Learning with Depthwise Separable Convolutions"
# (Chollet, 2016), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


class SeparableConv2d(nn.Module):
    def __init__(self, cin, cout, k=3, padding=1):
        super().__init__()
        self.depthwise = nn.Conv2d(cin, cin, k, padding=padding, groups=cin, bias=False)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class XBlock(nn.Module):
    """`reps` separable convs; optional leading ReLU; optional strided pool + projection skip."""

    def __init__(self, cin, cout, reps, stride=1, start_relu=True, grow_first=True):
        super().__init__()
        layers = []
        c = cin
        chans = [cout] * reps if grow_first else [cin] * (reps - 1) + [cout]
        for i, co in enumerate(chans):
            if i > 0 or start_relu:
                layers.append(nn.ReLU(inplace=False))
            layers += [SeparableConv2d(c, co), nn.BatchNorm2d(co)]
            c = co
        if stride != 1:
            layers.append(nn.MaxPool2d(3, stride, 1))
        self.rep = nn.Sequential(*layers)
        if cout != cin or stride != 1:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
        else:
            self.skip = None

    def forward(self, x):
        s = x if self.skip is None else self.skip(x)
        return self.rep(x) + s


class Xception(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 2, 0, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.entry = nn.Sequential(
            XBlock(64, 128, 2, 2, start_relu=False),
            XBlock(128, 256, 2, 2),
            XBlock(256, 728, 2, 2),
        )
        self.middle = nn.Sequential(*[XBlock(728, 728, 3, 1) for _ in range(8)])
        self.exit = XBlock(728, 1024, 2, 2, grow_first=False)
        self.conv3 = SeparableConv2d(1024, 1536)
        self.bn3 = nn.BatchNorm2d(1536)
        self.conv4 = SeparableConv2d(1536, 2048)
        self.bn4 = nn.BatchNorm2d(2048)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.exit(self.middle(self.entry(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = F.relu(self.bn4(self.conv4(x)))
        x = F.adaptive_avg_pool2d(x, 1).view(x.size(0), -1)
        return self.fc(x)
