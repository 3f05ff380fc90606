"""A WideResNet-16-8 (pre-activation, dropout) for CIFAR, written for trying `nar similar` (Apache-2.0)."""
from torch import nn


class WideBlock(nn.Module):
    def __init__(self, cin, cout, stride, dropout):
        super().__init__()
        self.norm1, self.act1 = nn.BatchNorm2d(cin), nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.norm2, self.act2 = nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
        self.drop = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.skip = None if cin == cout and stride == 1 else nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        o = self.act1(self.norm1(x))
        y = self.conv2(self.drop(self.act2(self.norm2(self.conv1(o)))))
        return y + (x if self.skip is None else self.skip(o))


class WideResNet(nn.Module):
    def __init__(self, depth=16, widen=8, classes=10, dropout=0.3):
        super().__init__()
        n = (depth - 4) // 6
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        self.conv = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        blocks, cin = [], widths[0]
        for stage, cout in enumerate(widths[1:]):
            for i in range(n):
                blocks.append(WideBlock(cin, cout, 2 if stage and i == 0 else 1, dropout))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(cin, classes))

    def forward(self, x):
        return self.head(self.blocks(self.conv(x)))
