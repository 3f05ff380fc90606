# RegNetY-400MF: stem 3x3/2 (32 ch), four stages of X-blocks (1x1, 3x3 group conv with group
# width 8, 1x1; bottleneck ratio 1) with squeeze-excite (ratio 0.25 of block input), depths
# [1, 3, 6, 6], widths [48, 104, 208, 440]; widths taken from the quantised linear rule.
# Own re-implementation from "Designing Network Design Spaces" (Radosavovic et al., 2020),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# --model: RegNet()   (RegNet(se=False) gives the RegNetX-400MF-like variant with the same widths)
import torch
import torch.nn as nn


class SE(nn.Module):
    def __init__(self, w_in, w_se):
        super().__init__()
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.f = nn.Sequential(
            nn.Conv2d(w_in, w_se, 1, bias=True), nn.ReLU(inplace=True),
            nn.Conv2d(w_se, w_in, 1, bias=True), nn.Sigmoid())

    def forward(self, x):
        return x * self.f(self.avg(x))


class XBlock(nn.Module):
    def __init__(self, w_in, w_out, stride, group_w, se_ratio):
        super().__init__()
        groups = w_out // group_w
        self.a = nn.Sequential(nn.Conv2d(w_in, w_out, 1, bias=False), nn.BatchNorm2d(w_out), nn.ReLU(inplace=True))
        self.b = nn.Sequential(nn.Conv2d(w_out, w_out, 3, stride, 1, groups=groups, bias=False),
                               nn.BatchNorm2d(w_out), nn.ReLU(inplace=True))
        self.se = SE(w_out, int(round(w_in * se_ratio))) if se_ratio else None
        self.c = nn.Sequential(nn.Conv2d(w_out, w_out, 1, bias=False), nn.BatchNorm2d(w_out))
        self.proj = None
        if w_in != w_out or stride != 1:
            self.proj = nn.Sequential(nn.Conv2d(w_in, w_out, 1, stride, bias=False), nn.BatchNorm2d(w_out))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.b(self.a(x))
        if self.se is not None:
            y = self.se(y)
        y = self.c(y)
        sc = x if self.proj is None else self.proj(x)
        return self.relu(y + sc)


class RegNet(nn.Module):
    def __init__(self, depths=(1, 3, 6, 6), widths=(48, 104, 208, 440), group_w=8, se=True, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        w_in = 32
        stages = []
        for d, w in zip(depths, widths):
            blocks = []
            for i in range(d):
                blocks.append(XBlock(w_in, w, 2 if i == 0 else 1, group_w, 0.25 if se else 0))
                w_in = w
            stages.append(nn.Sequential(*blocks))
        self.trunk = nn.Sequential(*stages)
        self.head = nn.Linear(w_in, num_classes)

    def forward(self, x):
        x = self.trunk(self.stem(x))
        x = torch.mean(x, dim=(2, 3))
        return self.head(x)
