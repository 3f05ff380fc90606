import torch
from torch import nn


class Conv(nn.Module):
    def __init__(self, i, o, k=1, s=1, p=None):
        super().__init__()
        self.conv = nn.Conv2d(i, o, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(o)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1, self.cv2, self.add = Conv(c, c, 1), Conv(c, c, 3), shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C3(nn.Module):
    def __init__(self, i, o, n=1, shortcut=True):
        super().__init__()
        h = o // 2
        self.cv1, self.cv2, self.cv3 = Conv(i, h), Conv(i, h), Conv(2 * h, o)
        self.m = nn.Sequential(*[Bottleneck(h, shortcut) for _ in range(n)])

    def forward(self, x):
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))


class SPPF(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.cv1, self.cv2 = Conv(i, i // 2), Conv(i * 2, o)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        a = self.pool(x)
        b = self.pool(a)
        return self.cv2(torch.cat([x, a, b, self.pool(b)], 1))


class YoloNano(nn.Module):
    """A YOLOv5n-like detector written from the diagram: CSP backbone, SPPF, PAN neck, three heads."""

    def __init__(self, classes=80, anchors=3):
        super().__init__()
        self.b1 = nn.Sequential(Conv(3, 16, 6, 2, 2), Conv(16, 32, 3, 2), C3(32, 32), Conv(32, 64, 3, 2), C3(64, 64, 2))
        self.b2 = nn.Sequential(Conv(64, 128, 3, 2), C3(128, 128, 3))
        self.b3 = nn.Sequential(Conv(128, 256, 3, 2), C3(256, 256), SPPF(256, 256))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.l1, self.c1 = Conv(256, 128), C3(256, 128, shortcut=False)
        self.l2, self.c2 = Conv(128, 64), C3(128, 64, shortcut=False)
        self.d1, self.c3 = Conv(64, 64, 3, 2), C3(128, 128, shortcut=False)
        self.d2, self.c4 = Conv(128, 128, 3, 2), C3(256, 256, shortcut=False)
        out = anchors * (classes + 5)
        self.heads = nn.ModuleList([nn.Conv2d(c, out, 1) for c in (64, 128, 256)])

    def forward(self, x):
        p3 = self.b1(x)
        p4 = self.b2(p3)
        p5 = self.b3(p4)
        h5 = self.l1(p5)
        n4 = self.c1(torch.cat([self.up(h5), p4], 1))
        h4 = self.l2(n4)
        small = self.c2(torch.cat([self.up(h4), p3], 1))
        medium = self.c3(torch.cat([self.d1(small), h4], 1))
        large = self.c4(torch.cat([self.d2(medium), h5], 1))
        return [head(f) for head, f in zip(self.heads, (small, medium, large))]
