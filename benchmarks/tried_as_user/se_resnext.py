"""An SE-ResNeXt-26 (32x4d) written from the SENet and ResNeXt papers, not from any library."""
import torch
from torch import nn


class SE(nn.Module):
    def __init__(self, c, r=16):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(nn.Linear(c, c // r), nn.ReLU(inplace=True), nn.Linear(c // r, c), nn.Sigmoid())

    def forward(self, x):
        b, c = x.shape[:2]
        return x * self.fc(self.pool(x).view(b, c)).view(b, c, 1, 1)


class Block(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride=1, groups=32, width=4):
        super().__init__()
        mid = groups * width * planes // 64
        out = planes * self.expansion
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=groups, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
            nn.Conv2d(mid, out, 1, bias=False), nn.BatchNorm2d(out))
        self.se = SE(out)
        self.short = nn.Sequential() if stride == 1 and cin == out else nn.Sequential(
            nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        return torch.relu(self.se(self.body(x)) + self.short(x))


class SEResNeXt26(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for planes, blocks, stride in ((64, 2, 1), (128, 2, 2), (256, 2, 2), (512, 2, 2)):
            for i in range(blocks):
                layers.append(Block(cin, planes, stride if i == 0 else 1))
                cin = planes * 4
        self.layers = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))

    def forward(self, x):
        return self.head(self.layers(self.stem(x)))


if __name__ == "__main__":
    print(SEResNeXt26()(torch.randn(2, 3, 224, 224)).shape)
