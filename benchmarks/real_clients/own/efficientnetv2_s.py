# EfficientNetV2-S: 3x3/2 stem (24), Fused-MBConv stages (expansion 1/4/4, 24/48/64 channels,
# 2/4/4 layers) followed by MBConv stages with SE (expansion 4/6/6, 128/160/256 channels,
# 6/9/15 layers), SiLU activations, 1x1 conv to 1280, pooling, dropout, FC.
# Own re-implementation from "EfficientNetV2: Smaller Models and Faster Training" (Tan & Le, 2021),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn


def cbs(cin, cout, k, s, groups=1, act=True):
    m = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout, eps=1e-3)]
    if act:
        m.append(nn.SiLU())
    return nn.Sequential(*m)


class SqueezeExcitation(nn.Module):
    def __init__(self, ch, squeeze):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(ch, squeeze, 1)
        self.act = nn.SiLU()
        self.fc2 = nn.Conv2d(squeeze, ch, 1)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))


class FusedMBConv(nn.Module):
    def __init__(self, cin, cout, expand, stride):
        super().__init__()
        if expand == 1:
            self.block = cbs(cin, cout, 3, stride)
        else:
            mid = cin * expand
            self.block = nn.Sequential(cbs(cin, mid, 3, stride), cbs(mid, cout, 1, 1, act=False))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, stride, se_ratio=0.25):
        super().__init__()
        mid = cin * expand
        self.block = nn.Sequential(
            cbs(cin, mid, 1, 1),
            cbs(mid, mid, 3, stride, groups=mid),
            SqueezeExcitation(mid, max(1, int(cin * se_ratio))),
            cbs(mid, cout, 1, 1, act=False),
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.residual else y


class EfficientNetV2S(nn.Module):
    # kind, expand, stride, out, layers
    config = [
        ("fused", 1, 1, 24, 2),
        ("fused", 4, 2, 48, 4),
        ("fused", 4, 2, 64, 4),
        ("mb", 4, 2, 128, 6),
        ("mb", 6, 1, 160, 9),
        ("mb", 6, 2, 256, 15),
    ]

    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [cbs(3, 24, 3, 2)]
        c = 24
        for kind, e, s, o, n in self.config:
            for i in range(n):
                blk = FusedMBConv if kind == "fused" else MBConv
                layers.append(blk(c, o, e, s if i == 0 else 1))
                c = o
        layers.append(cbs(c, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))
