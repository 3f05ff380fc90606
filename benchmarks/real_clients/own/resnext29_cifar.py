# ResNeXt-29 (8x64d) for CIFAR-10: 3x3 stem with 64 channels, three stages of three
# bottleneck blocks whose 3x3 conv has 8 groups of width 64; output widths 256/512/1024.
# Own re-implementation from "Aggregated Residual Transformations for Deep Neural Networks"
# (Xie et al., 2016), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, cin, cout, stride, cardinality, width):
        super().__init__()
        inner = cardinality * width
        self.c1 = nn.Conv2d(cin, inner, 1, bias=False)
        self.b1 = nn.BatchNorm2d(inner)
        self.c2 = nn.Conv2d(inner, inner, 3, stride, 1, groups=cardinality, bias=False)
        self.b2 = nn.BatchNorm2d(inner)
        self.c3 = nn.Conv2d(inner, cout, 1, bias=False)
        self.b3 = nn.BatchNorm2d(cout)
        self.sc = nn.Sequential()
        if cin != cout or stride != 1:
            self.sc.add_module("conv", nn.Conv2d(cin, cout, 1, stride, bias=False))
            self.sc.add_module("bn", nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return F.relu(y + self.sc(x))


class ResNeXt29(nn.Module):
    def __init__(self, cardinality=8, width=64, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(64)
        widths = [256, 512, 1024]
        blocks = []
        cin = 64
        for i, w in enumerate(widths):
            for j in range(3):
                blocks.append(Block(cin, w, 2 if (j == 0 and i > 0) else 1, cardinality, width * (2 ** i)))
                cin = w
        self.blocks = nn.Sequential(*blocks)
        self.linear = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = self.blocks(x)
        x = F.avg_pool2d(x, 8)
        return self.linear(x.view(x.size(0), -1))
