# ResNeXt-50 (32x4d): ResNet-50 macro layout with aggregated residual transformations
# implemented as grouped 3x3 convolutions (cardinality 32, bottleneck width 4 per group).
# Own re-implementation from "Aggregated Residual Transformations for Deep Neural Networks"
# (Xie et al., 2016), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# --model: resnext50_32x4d()
import torch.nn as nn
import torch.nn.functional as F


class ResNeXtBlock(nn.Module):
    def __init__(self, in_planes, planes, cardinality, base_width, stride=1):
        super().__init__()
        D = int(planes * (base_width / 64.0)) * cardinality
        out_planes = planes * 4
        self.conv_reduce = nn.Conv2d(in_planes, D, 1, bias=False)
        self.bn_reduce = nn.BatchNorm2d(D)
        self.conv_group = nn.Conv2d(D, D, 3, stride=stride, padding=1, groups=cardinality, bias=False)
        self.bn_group = nn.BatchNorm2d(D)
        self.conv_expand = nn.Conv2d(D, out_planes, 1, bias=False)
        self.bn_expand = nn.BatchNorm2d(out_planes)
        self.downsample = None
        if stride != 1 or in_planes != out_planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, out_planes, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_planes))

    def forward(self, x):
        residual = x
        y = F.relu(self.bn_reduce(self.conv_reduce(x)), inplace=True)
        y = F.relu(self.bn_group(self.conv_group(y)), inplace=True)
        y = self.bn_expand(self.conv_expand(y))
        if self.downsample is not None:
            residual = self.downsample(x)
        return F.relu(residual + y, inplace=True)


class ResNeXt(nn.Module):
    def __init__(self, layers, cardinality=32, base_width=4, num_classes=1000):
        super().__init__()
        self.cardinality = cardinality
        self.base_width = base_width
        self.in_planes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.pool1 = nn.MaxPool2d(3, 2, 1)
        self.stage1 = self._make(64, layers[0], 1)
        self.stage2 = self._make(128, layers[1], 2)
        self.stage3 = self._make(256, layers[2], 2)
        self.stage4 = self._make(512, layers[3], 2)
        self.classifier = nn.Linear(2048, num_classes)

    def _make(self, planes, n, stride):
        mods = [ResNeXtBlock(self.in_planes, planes, self.cardinality, self.base_width, stride)]
        self.in_planes = planes * 4
        for _ in range(1, n):
            mods.append(ResNeXtBlock(self.in_planes, planes, self.cardinality, self.base_width))
        return nn.Sequential(*mods)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.stage4(self.stage3(self.stage2(self.stage1(x))))
        x = x.mean(dim=(2, 3))
        return self.classifier(x)


def resnext50_32x4d(num_classes=1000):
    return ResNeXt([3, 4, 6, 3], cardinality=32, base_width=4, num_classes=num_classes)
