"""A ResNeXt-29 (8x64d) for CIFAR-10, written for trying `nar similar` as a user would (Apache-2.0)."""
import torch
from torch import nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cardinality, width, stride):
        super().__init__()
        mid = cardinality * width
        cout = 2 * mid
        self.reduce = nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.grouped = nn.Conv2d(mid, mid, 3, stride, 1, groups=cardinality, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.expand = nn.Conv2d(mid, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.reduce(x)))
        y = F.relu(self.bn2(self.grouped(y)))
        y = self.bn3(self.expand(y))
        return F.relu(y + self.shortcut(x))


class ResNeXt29(nn.Module):
    def __init__(self, cardinality=8, width=64, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
        layers, cin = [], 64
        for stage in range(3):
            for i in range(3):
                stride = 2 if stage > 0 and i == 0 else 1
                layers.append(Block(cin, cardinality, width * 2 ** stage, stride))
                cin = 2 * cardinality * width * 2 ** stage
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
