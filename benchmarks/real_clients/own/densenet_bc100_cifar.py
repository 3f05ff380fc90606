# DenseNet-BC (L=100, k=12) for CIFAR: three dense blocks of 16 bottleneck layers,
# 3x3 stem with 2k channels, compression 0.5 in the transitions, 8x8 average pool.
# Own re-implementation from "Densely Connected Convolutional Networks" (Huang et al., 2016),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    def __init__(self, nin, growth):
        super().__init__()
        inter = 4 * growth
        self.bn1 = nn.BatchNorm2d(nin)
        self.conv1 = nn.Conv2d(nin, inter, kernel_size=1, bias=False)
        self.bn2 = nn.BatchNorm2d(inter)
        self.conv2 = nn.Conv2d(inter, growth, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([x, out], dim=1)


class TransitionDown(nn.Module):
    def __init__(self, nin, nout):
        super().__init__()
        self.bn = nn.BatchNorm2d(nin)
        self.conv = nn.Conv2d(nin, nout, kernel_size=1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNetBC(nn.Module):
    def __init__(self, depth=100, growth=12, reduction=0.5, num_classes=10):
        super().__init__()
        n = (depth - 4) // 6
        ch = 2 * growth
        self.conv1 = nn.Conv2d(3, ch, kernel_size=3, padding=1, bias=False)
        self.dense1, ch = self._dense(ch, growth, n)
        out = int(math.floor(ch * reduction))
        self.trans1 = TransitionDown(ch, out)
        ch = out
        self.dense2, ch = self._dense(ch, growth, n)
        out = int(math.floor(ch * reduction))
        self.trans2 = TransitionDown(ch, out)
        ch = out
        self.dense3, ch = self._dense(ch, growth, n)
        self.bn = nn.BatchNorm2d(ch)
        self.fc = nn.Linear(ch, num_classes)

    def _dense(self, ch, growth, n):
        layers = []
        for _ in range(n):
            layers.append(Bottleneck(ch, growth))
            ch += growth
        return nn.Sequential(*layers), ch

    def forward(self, x):
        out = self.conv1(x)
        out = self.trans1(self.dense1(out))
        out = self.trans2(self.dense2(out))
        out = self.dense3(out)
        out = F.avg_pool2d(F.relu(self.bn(out)), 8)
        out = torch.squeeze(torch.squeeze(out, 3), 2)
        return F.log_softmax(self.fc(out), dim=1)
