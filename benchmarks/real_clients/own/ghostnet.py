# GhostNet 1.0x (224x224): Ghost modules (primary 1x1 conv producing half the channels plus a
# cheap 3x3 depthwise "ghost" operation, concatenated), Ghost bottlenecks with optional
# depthwise stride-2 conv and squeeze-excite, 960 -> pool -> 1280 1x1 conv head.
# Own re-implementation from "GhostNet: More Features from Cheap Operations" (Han et al., 2019),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _div(v, d=4):
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


class SELayer(nn.Module):
    def __init__(self, ch, ratio=0.25):
        super().__init__()
        mid = _div(ch * ratio)
        self.fc1 = nn.Conv2d(ch, mid, 1)
        self.fc2 = nn.Conv2d(mid, ch, 1)

    def forward(self, x):
        g = F.adaptive_avg_pool2d(x, 1)
        g = self.fc2(F.relu(self.fc1(g)))
        g = torch.clamp(g + 3, 0, 6) / 6  # hard sigmoid
        return x * g


class GhostModule(nn.Module):
    def __init__(self, cin, cout, relu=True, ratio=2, dw_size=3):
        super().__init__()
        self.cout = cout
        init_ch = math.ceil(cout / ratio)
        new_ch = init_ch * (ratio - 1)
        self.primary = nn.Sequential(
            nn.Conv2d(cin, init_ch, 1, bias=False), nn.BatchNorm2d(init_ch),
            nn.ReLU(inplace=True) if relu else nn.Identity())
        self.cheap = nn.Sequential(
            nn.Conv2d(init_ch, new_ch, dw_size, 1, dw_size // 2, groups=init_ch, bias=False),
            nn.BatchNorm2d(new_ch),
            nn.ReLU(inplace=True) if relu else nn.Identity())

    def forward(self, x):
        a = self.primary(x)
        b = self.cheap(a)
        return torch.cat([a, b], dim=1)[:, : self.cout]


class GhostBottleneck(nn.Module):
    def __init__(self, cin, mid, cout, k, stride, se):
        super().__init__()
        self.stride = stride
        self.ghost1 = GhostModule(cin, mid, relu=True)
        if stride > 1:
            self.dw = nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False)
            self.dw_bn = nn.BatchNorm2d(mid)
        self.se = SELayer(mid) if se else None
        self.ghost2 = GhostModule(mid, cout, relu=False)
        if cin == cout and stride == 1:
            self.shortcut = nn.Identity()
        else:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cin, k, stride, k // 2, groups=cin, bias=False), nn.BatchNorm2d(cin),
                nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.ghost1(x)
        if self.stride > 1:
            y = self.dw_bn(self.dw(y))
        if self.se is not None:
            y = self.se(y)
        y = self.ghost2(y)
        return y + self.shortcut(x)


# k, exp, out, se, stride
CFGS = [
    [[3, 16, 16, 0, 1]],
    [[3, 48, 24, 0, 2]],
    [[3, 72, 24, 0, 1]],
    [[5, 72, 40, 1, 2]],
    [[5, 120, 40, 1, 1]],
    [[3, 240, 80, 0, 2]],
    [[3, 200, 80, 0, 1], [3, 184, 80, 0, 1], [3, 184, 80, 0, 1], [3, 480, 112, 1, 1], [3, 672, 112, 1, 1]],
    [[5, 672, 160, 1, 2]],
    [[5, 960, 160, 0, 1], [5, 960, 160, 1, 1], [5, 960, 160, 0, 1], [5, 960, 160, 1, 1]],
]


class GhostNet(nn.Module):
    def __init__(self, num_classes=1000, width=1.0):
        super().__init__()
        c = _div(16 * width)
        self.conv_stem = nn.Conv2d(3, c, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        stages = []
        for cfg in CFGS:
            layers = []
            for k, e, o, se, s in cfg:
                o2, e2 = _div(o * width), _div(e * width)
                layers.append(GhostBottleneck(c, e2, o2, k, s, se))
                c = o2
            stages.append(nn.Sequential(*layers))
        e2 = _div(960 * width)
        stages.append(nn.Sequential(nn.Conv2d(c, e2, 1, bias=False), nn.BatchNorm2d(e2), nn.ReLU(inplace=True)))
        self.blocks = nn.Sequential(*stages)
        self.conv_head = nn.Conv2d(e2, 1280, 1)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv_stem(x)))
        x = self.blocks(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = F.relu(self.conv_head(x))
        x = x.view(x.size(0), -1)
        x = F.dropout(x, p=0.2, training=self.training)
        return self.classifier(x)
