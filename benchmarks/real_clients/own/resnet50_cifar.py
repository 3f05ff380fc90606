# ResNet-50 adapted to CIFAR-100: bottleneck blocks (1x1 -> 3x3 -> 1x1, expansion 4),
# [3, 4, 6, 3] blocks per stage, 3x3 stride-1 stem, no max-pool.
# Own re-implementation from "Deep Residual Learning for Image Recognition" (He et al., 2015),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# --model: ResNet(depth=50)   (depth 101 / 152 also accepted)
import torch
from torch import nn


def conv_bn(cin, cout, k, stride=1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False),
        nn.BatchNorm2d(cout),
    )


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.reduce = conv_bn(cin, width, 1)
        self.spatial = conv_bn(width, width, 3, stride)   # stride on the 3x3 ("v1.5")
        self.expand = conv_bn(width, cout, 1)
        self.relu = nn.ReLU(inplace=True)
        if stride > 1 or cin != cout:
            self.proj = conv_bn(cin, cout, 1, stride)
        else:
            self.proj = None

    def forward(self, x):
        identity = x if self.proj is None else self.proj(x)
        y = self.relu(self.reduce(x))
        y = self.relu(self.spatial(y))
        y = self.expand(y)
        return self.relu(y + identity)


LAYOUTS = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}


class ResNet(nn.Module):
    def __init__(self, depth=50, num_classes=100):
        super().__init__()
        counts = LAYOUTS[depth]
        self.stem = nn.Sequential(conv_bn(3, 64, 3), nn.ReLU(inplace=True))
        stages = []
        cin = 64
        for i, (n, width) in enumerate(zip(counts, [64, 128, 256, 512])):
            blocks = []
            for j in range(n):
                stride = 2 if (j == 0 and i > 0) else 1
                blocks.append(Bottleneck(cin, width, stride))
                cin = width * 4
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = self.stages(x)
        x = self.pool(x).flatten(1)
        return self.head(x)


if __name__ == "__main__":
    m = ResNet(depth=50)
    print(m(torch.randn(1, 3, 32, 32)).shape)
