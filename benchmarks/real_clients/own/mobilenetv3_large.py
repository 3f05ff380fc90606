# MobileNetV3-Large (1.0, 224x224): inverted residuals with optional squeeze-excite (1x1 convs,
# hard-sigmoid gate), ReLU in early layers and hard-swish later, efficient last stage
# (1x1 conv 960 -> pool -> 1x1 conv 1280 without BN -> classifier).
# Own re-implementation from "Searching for MobileNetV3" (Howard et al., 2019),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch.nn as nn
import torch.nn.functional as F


def make_div(v, d=8):
    n = max(d, int(v + d / 2) // d * d)
    if n < 0.9 * v:
        n += d
    return n


def hswish(x):
    return x * F.relu6(x + 3.0) / 6.0


def hsigmoid(x):
    return F.relu6(x + 3.0) / 6.0


class SE(nn.Module):
    def __init__(self, ch):
        super().__init__()
        mid = make_div(ch // 4)
        self.reduce = nn.Conv2d(ch, mid, 1)
        self.expand = nn.Conv2d(mid, ch, 1)

    def forward(self, x):
        w = F.adaptive_avg_pool2d(x, 1)
        w = F.relu(self.reduce(w))
        w = hsigmoid(self.expand(w))
        return x * w


class Bneck(nn.Module):
    def __init__(self, cin, k, exp, cout, use_se, use_hs, stride):
        super().__init__()
        self.hs = use_hs
        self.res = stride == 1 and cin == cout
        self.has_expand = exp != cin
        if self.has_expand:
            self.pw = nn.Conv2d(cin, exp, 1, bias=False)
            self.bn_pw = nn.BatchNorm2d(exp)
        self.dw = nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False)
        self.bn_dw = nn.BatchNorm2d(exp)
        self.se = SE(exp) if use_se else None
        self.pwl = nn.Conv2d(exp, cout, 1, bias=False)
        self.bn_pwl = nn.BatchNorm2d(cout)

    def act(self, x):
        return hswish(x) if self.hs else F.relu(x)

    def forward(self, x):
        y = x
        if self.has_expand:
            y = self.act(self.bn_pw(self.pw(y)))
        y = self.act(self.bn_dw(self.dw(y)))
        if self.se is not None:
            y = self.se(y)
        y = self.bn_pwl(self.pwl(y))
        return x + y if self.res else y


# k, exp, out, SE, HS, stride
LARGE = [
    (3, 16, 16, False, False, 1),
    (3, 64, 24, False, False, 2),
    (3, 72, 24, False, False, 1),
    (5, 72, 40, True, False, 2),
    (5, 120, 40, True, False, 1),
    (5, 120, 40, True, False, 1),
    (3, 240, 80, False, True, 2),
    (3, 200, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 184, 80, False, True, 1),
    (3, 480, 112, True, True, 1),
    (3, 672, 112, True, True, 1),
    (5, 672, 160, True, True, 2),
    (5, 960, 160, True, True, 1),
    (5, 960, 160, True, True, 1),
]


class MobileNetV3Large(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1, bias=False)
        self.stem_bn = nn.BatchNorm2d(16)
        blocks, c = [], 16
        for k, e, o, se, hs, s in LARGE:
            blocks.append(Bneck(c, k, e, o, se, hs, s))
            c = o
        self.blocks = nn.Sequential(*blocks)
        self.last = nn.Conv2d(160, 960, 1, bias=False)
        self.last_bn = nn.BatchNorm2d(960)
        self.head = nn.Conv2d(960, 1280, 1)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = hswish(self.stem_bn(self.stem(x)))
        x = self.blocks(x)
        x = hswish(self.last_bn(self.last(x)))
        x = F.adaptive_avg_pool2d(x, 1)
        x = hswish(self.head(x))
        x = F.dropout(x.flatten(1), 0.2, self.training)
        return self.classifier(x)
