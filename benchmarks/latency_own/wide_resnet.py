"""A WideResNet-16-4 for 32x32 images, written from the paper's description (pre-activation blocks)."""
import torch
from torch import nn


class WideBlock(nn.Module):
    def __init__(self, cin, cout, stride, drop=0.0):
        super().__init__()
        self.bn1, self.bn2 = nn.BatchNorm2d(cin), nn.BatchNorm2d(cout)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.drop = nn.Dropout(drop)
        self.short = None if cin == cout and stride == 1 else nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        o = torch.relu(self.bn1(x))
        y = self.conv1(o)
        y = self.conv2(self.drop(torch.relu(self.bn2(y))))
        return y + (x if self.short is None else self.short(o))


class WideResNet(nn.Module):
    def __init__(self, depth=16, widen=4, classes=10):
        super().__init__()
        n = (depth - 4) // 6
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        self.stem = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        layers, cin = [], widths[0]
        for stage, width in enumerate(widths[1:]):
            for i in range(n):
                layers.append(WideBlock(cin, width, 2 if stage > 0 and i == 0 else 1))
                cin = width
        self.blocks = nn.Sequential(*layers)
        self.bn = nn.BatchNorm2d(cin)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = torch.relu(self.bn(self.blocks(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))
