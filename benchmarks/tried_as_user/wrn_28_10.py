"""Wide ResNet 28-10 for CIFAR, pre-activation blocks with dropout (Apache-2.0; written 2026-12-06 for
trying `nar similar` as a user would)."""
import torch.nn as nn
import torch.nn.functional as F


class WideBasic(nn.Module):
    def __init__(self, in_planes, planes, dropout, stride=1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, 3, padding=1, bias=True)
        self.dropout = nn.Dropout(p=dropout)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=True)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride, bias=True))

    def forward(self, x):
        out = self.dropout(self.conv1(F.relu(self.bn1(x))))
        out = self.conv2(F.relu(self.bn2(out)))
        return out + self.shortcut(x)


class WideResNet(nn.Module):
    def __init__(self, depth=28, widen=10, dropout=0.3, num_classes=10):
        super().__init__()
        n = (depth - 4) // 6
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        self.conv1 = nn.Conv2d(3, widths[0], 3, padding=1, bias=True)
        self.in_planes = widths[0]
        self.layer1 = self._stage(widths[1], n, dropout, 1)
        self.layer2 = self._stage(widths[2], n, dropout, 2)
        self.layer3 = self._stage(widths[3], n, dropout, 2)
        self.bn = nn.BatchNorm2d(widths[3], momentum=0.9)
        self.linear = nn.Linear(widths[3], num_classes)

    def _stage(self, planes, blocks, dropout, stride):
        layers = []
        for s in [stride] + [1] * (blocks - 1):
            layers.append(WideBasic(self.in_planes, planes, dropout, s))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.conv1(x)
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.relu(self.bn(out))
        out = F.avg_pool2d(out, 8)
        out = out.view(out.size(0), -1)
        return self.linear(out)
