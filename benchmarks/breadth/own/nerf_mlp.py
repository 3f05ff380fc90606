"""The NeRF MLP (Mildenhall et al., arXiv:2003.08934) on already encoded inputs (63 + 27 features), written for nar's breadth set."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class NeRFMLP(nn.Module):
    def __init__(self, D=8, W=256, in_xyz=63, in_dir=27, skips=(4,)):
        super().__init__()
        self.in_xyz, self.skips = in_xyz, skips
        self.layers = nn.ModuleList([nn.Linear(in_xyz, W)] + [nn.Linear(W + in_xyz if i in skips else W, W) for i in range(D - 1)])
        self.sigma = nn.Linear(W, 1)
        self.feat = nn.Linear(W, W)
        self.rgb = nn.Sequential(nn.Linear(W + in_dir, W // 2), nn.ReLU(), nn.Linear(W // 2, 3), nn.Sigmoid())

    def forward(self, x):
        xyz, d = x[:, :self.in_xyz], x[:, self.in_xyz:]
        h = xyz
        for i, layer in enumerate(self.layers):
            h = F.relu(layer(h))
            if i in self.skips:
                h = torch.cat([xyz, h], -1)
        return torch.cat([self.rgb(torch.cat([self.feat(h), d], -1)), self.sigma(h)], -1)
