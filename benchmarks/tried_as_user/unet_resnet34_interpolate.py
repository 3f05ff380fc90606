"""A U-Net over a ResNet-34 encoder, upsampling with F.interpolate as smp does, written without smp
(Apache-2.0; written 2026-12-06 for trying `nar similar` as a user would)."""
import torch
from torch import nn
import torch.nn.functional as F


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + idt)


def stage(cin, cout, n, stride):
    return nn.Sequential(Basic(cin, cout, stride), *[Basic(cout, cout, 1) for _ in range(n - 1)])


class ConvBnRelu(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Up(nn.Module):
    def __init__(self, cin, skip, cout):
        super().__init__()
        self.conv1 = ConvBnRelu(cin + skip, cout)
        self.conv2 = ConvBnRelu(cout, cout)

    def forward(self, x, skip=None):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        if skip is not None:
            x = torch.cat([x, skip], dim=1)
        return self.conv2(self.conv1(x))


class ResNetUNet(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.l1, self.l2 = stage(64, 64, 3, 1), stage(64, 128, 4, 2)
        self.l3, self.l4 = stage(128, 256, 6, 2), stage(256, 512, 3, 2)
        self.d1, self.d2 = Up(512, 256, 256), Up(256, 128, 128)
        self.d3, self.d4 = Up(128, 64, 64), Up(64, 64, 32)
        self.d5 = Up(32, 0, 16)
        self.head = nn.Conv2d(16, classes, 3, padding=1)

    def forward(self, x):
        s1 = self.stem(x)
        s2 = self.l1(self.pool(s1))
        s3 = self.l2(s2)
        s4 = self.l3(s3)
        s5 = self.l4(s4)
        y = self.d1(s5, s4)
        y = self.d2(y, s3)
        y = self.d3(y, s2)
        y = self.d4(y, s1)
        return self.head(self.d5(y))
