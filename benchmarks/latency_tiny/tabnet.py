"""A small tabular model written by hand: feature-wise scaling, a hand-written layer norm and GELU."""
import math
import torch
from torch import nn


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.g = nn.Parameter(torch.ones(d))
        self.b = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        v = ((x - m) * (x - m)).mean(-1, keepdim=True)
        return (x - m) / torch.sqrt(v + 1e-5) * self.g + self.b


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = Norm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(gelu(self.fc1(self.norm(x))))


class TabNet(nn.Module):
    def __init__(self, features=32, d=64, blocks=3):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(features))
        self.shift = nn.Parameter(torch.zeros(features))
        self.inp = nn.Linear(features, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(blocks)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        x = (x - self.shift) * self.scale
        h = self.inp(x)
        for b in self.blocks:
            h = b(h)
        return torch.sigmoid(self.out(h))
