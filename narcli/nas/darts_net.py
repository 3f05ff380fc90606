"""A DARTS genotype as a real `nn.Module` (stem, normal and reduction cells, pooling, classifier),
so that NAS data goes through the same tracer and canonical graph as users' models."""

from __future__ import annotations

import torch
from torch import nn

from narcli.nas.darts_space import Genotype


def _relu_conv_bn(c_in: int, c_out: int, kernel: int, stride: int, padding: int, dilation: int = 1,
                  groups: int = 1) -> list[nn.Module]:
    return [nn.ReLU(), nn.Conv2d(c_in, c_out, kernel, stride, padding, dilation, groups, bias=False),
            nn.BatchNorm2d(c_out)]


def _operation(name: str, c: int, stride: int) -> nn.Module:
    if name == "skip_connect":
        return nn.Identity() if stride == 1 else FactorizedReduce(c, c)
    if name in ("max_pool_3x3", "avg_pool_3x3"):
        pool = nn.MaxPool2d if name.startswith("max") else nn.AvgPool2d
        return pool(3, stride, 1)
    kind, _, size = name.split("_")
    k = int(size[0])
    if kind == "sep":  # separable conv applied twice, as in DARTS
        return nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, k, stride, k // 2, groups=c, bias=False),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c),
                             nn.ReLU(), nn.Conv2d(c, c, k, 1, k // 2, groups=c, bias=False),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))
    return nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, k, stride, k - 1, dilation=2, groups=c, bias=False),
                         nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))


class FactorizedReduce(nn.Module):
    """Halve the resolution with two offset stride-2 1x1 convolutions, concatenated."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.relu = nn.ReLU()
        self.a = nn.Conv2d(c_in, c_out // 2, 1, 2, bias=False)
        self.b = nn.Conv2d(c_in, c_out - c_out // 2, 1, 2, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(x)
        return self.bn(torch.cat([self.a(x), self.b(x[:, :, 1:, 1:])], dim=1))


class Cell(nn.Module):
    def __init__(self, pairs, c_prev_prev: int, c_prev: int, c: int, reduction: bool, reduction_prev: bool):
        super().__init__()
        self.pre0 = FactorizedReduce(c_prev_prev, c) if reduction_prev else \
            nn.Sequential(*_relu_conv_bn(c_prev_prev, c, 1, 1, 0))
        self.pre1 = nn.Sequential(*_relu_conv_bn(c_prev, c, 1, 1, 0))
        self.sources = [source for pair in pairs for _, source in pair]
        self.ops = nn.ModuleList([_operation(op, c, 2 if reduction and source < 2 else 1)
                                  for pair in pairs for op, source in pair])

    def forward(self, s0: torch.Tensor, s1: torch.Tensor) -> torch.Tensor:
        states = [self.pre0(s0), self.pre1(s1)]
        for node in range(len(self.ops) // 2):
            a, b = 2 * node, 2 * node + 1
            states.append(self.ops[a](states[self.sources[a]]) + self.ops[b](states[self.sources[b]]))
        return torch.cat(states[2:], dim=1)


class DartsNetwork(nn.Module):
    """CIFAR-style DARTS network: `cells` cells with reductions at 1/3 and 2/3 of the depth."""

    def __init__(self, genotype: Genotype, channels: int = 16, cells: int = 8, classes: int = 10):
        super().__init__()
        stem = 3 * channels
        self.stem = nn.Sequential(nn.Conv2d(3, stem, 3, padding=1, bias=False), nn.BatchNorm2d(stem))
        c_prev_prev, c_prev, c = stem, stem, channels
        self.cells = nn.ModuleList()
        reduction_prev = False
        for i in range(cells):
            reduction = i in (cells // 3, 2 * cells // 3)
            if reduction:
                c *= 2
            pairs = genotype.reduce if reduction else genotype.normal
            self.cells.append(Cell(pairs, c_prev_prev, c_prev, c, reduction, reduction_prev))
            reduction_prev = reduction
            c_prev_prev, c_prev = c_prev, len(pairs) * c
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_prev, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s0 = s1 = self.stem(x)
        for cell in self.cells:
            s0, s1 = s1, cell(s0, s1)
        return self.classifier(self.pool(s1).flatten(1))
