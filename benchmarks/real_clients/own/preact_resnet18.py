# Pre-activation ResNet-18 for CIFAR-10: BN-ReLU before every convolution, identity paths
# kept clean, final BN-ReLU before pooling.
# Own re-implementation from "Identity Mappings in Deep Residual Networks" (He et al., 2016),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch.nn as nn
import torch.nn.functional as F


class PreActBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.has_proj = stride != 1 or in_planes != planes
        if self.has_proj:
            self.proj = nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False)

    def forward(self, x):
        pre = F.relu(self.bn1(x))
        skip = self.proj(pre) if self.has_proj else x
        out = self.conv1(pre)
        out = self.conv2(F.relu(self.bn2(out)))
        return out + skip


class PreActResNet18(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        cfg = [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)]
        blocks, cin = [], 64
        for planes, stride in cfg:
            blocks.append(PreActBlock(cin, planes, stride))
            cin = planes
        self.blocks = nn.ModuleList(blocks)
        self.bn = nn.BatchNorm2d(512)
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x):
        out = self.conv1(x)
        for blk in self.blocks:
            out = blk(out)
        out = F.relu(self.bn(out))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)
