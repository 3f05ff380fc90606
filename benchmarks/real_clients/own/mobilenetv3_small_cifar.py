# MobileNetV3-Small for CIFAR-100: the paper's Small configuration (11 bottlenecks, SE on most
# of them with a Linear-layer squeeze-excite and hard-sigmoid gate), stem stride changed to 1 for
# 32x32 inputs, hard-swish written out by hand, 1024-d Linear head with BN + hswish.
# Own re-implementation from "Searching for MobileNetV3" (Howard et al., 2019),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch.nn as nn
import torch.nn.functional as F


class HSwish(nn.Module):
    def forward(self, x):
        return x * F.relu6(x + 3, inplace=False) / 6


class HSigmoid(nn.Module):
    def forward(self, x):
        return F.relu6(x + 3) / 6


class SEModule(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc = nn.Sequential(
            nn.Linear(c, c // r, bias=False),
            nn.ReLU(inplace=True),
            nn.Linear(c // r, c, bias=False),
            HSigmoid(),
        )

    def forward(self, x):
        b, c = x.size(0), x.size(1)
        y = F.adaptive_avg_pool2d(x, 1).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class Block(nn.Module):
    def __init__(self, k, cin, exp, cout, act, se, stride):
        super().__init__()
        self.stride = stride
        self.body = nn.Sequential(
            nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act(),
            nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False), nn.BatchNorm2d(exp),
            SEModule(exp) if se else nn.Identity(), act(),
            nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )
        self.skip = stride == 1 and cin == cout

    def forward(self, x):
        out = self.body(x)
        return out + x if self.skip else out


class MobileNetV3Small(nn.Module):
    def __init__(self, num_classes=100):
        super().__init__()
        R, H = nn.ReLU, HSwish
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.hs1 = HSwish()
        self.bneck = nn.Sequential(
            Block(3, 16, 16, 16, R, True, 2),
            Block(3, 16, 72, 24, R, False, 2),
            Block(3, 24, 88, 24, R, False, 1),
            Block(5, 24, 96, 40, H, True, 2),
            Block(5, 40, 240, 40, H, True, 1),
            Block(5, 40, 240, 40, H, True, 1),
            Block(5, 40, 120, 48, H, True, 1),
            Block(5, 48, 144, 48, H, True, 1),
            Block(5, 48, 288, 96, H, True, 2),
            Block(5, 96, 576, 96, H, True, 1),
            Block(5, 96, 576, 96, H, True, 1),
        )
        self.conv2 = nn.Conv2d(96, 576, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(576)
        self.hs2 = HSwish()
        self.linear3 = nn.Linear(576, 1024)
        self.bn3 = nn.BatchNorm1d(1024)
        self.hs3 = HSwish()
        self.linear4 = nn.Linear(1024, num_classes)

    def forward(self, x):
        out = self.hs1(self.bn1(self.conv1(x)))
        out = self.bneck(out)
        out = self.hs2(self.bn2(self.conv2(out)))
        out = F.avg_pool2d(out, 2).view(out.size(0), -1)
        out = self.hs3(self.bn3(self.linear3(out)))
        return self.linear4(out)
