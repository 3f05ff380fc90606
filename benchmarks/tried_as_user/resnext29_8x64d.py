"""ResNeXt-29 (8x64d) for 32x32 images, from the paper's table: stage outputs 256/512/1024 (Apache-2.0;
written 2026-12-06 for trying `nar similar` as a user would)."""
import torch
from torch import nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cardinality, width, stride):
        super().__init__()
        mid = cardinality * width
        self.reduce = nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.grouped = nn.Conv2d(mid, mid, 3, stride, 1, groups=cardinality, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        out = mid // 2  # 256, 512, 1024 channels out of the three stages
        self.expand = nn.Conv2d(mid, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.skip = nn.Sequential()
        if stride != 1 or cin != out:
            self.skip = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.reduce(x)))
        y = F.relu(self.bn2(self.grouped(y)))
        y = self.bn3(self.expand(y))
        return F.relu(y + self.skip(x))


class ResNeXt29(nn.Module):
    def __init__(self, cardinality=8, width=64, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for stage, stride in enumerate((1, 2, 2)):
            w = width * 2 ** stage
            for i in range(3):
                layers.append(Block(cin, cardinality, w, stride if i == 0 else 1))
                cin = cardinality * w // 2
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = self.body(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)
