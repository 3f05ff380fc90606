"""A Kolmogorov-Arnold network (Liu et al., arXiv:2404.19756) with Gaussian radial basis edges: a design no
library in the zoo ships; `nar` should call it new. Written for nar's breadth set."""
import torch
import torch.nn as nn


class KANLayer(nn.Module):
    def __init__(self, cin, cout, grid=8):
        super().__init__()
        self.register_buffer("centres", torch.linspace(-2, 2, grid))
        self.spline = nn.Parameter(torch.randn(cin * grid, cout) * 0.1)
        self.base = nn.Linear(cin, cout)

    def forward(self, x):
        basis = torch.exp(-((x.unsqueeze(-1) - self.centres) ** 2))
        return self.base(torch.nn.functional.silu(x)) + basis.flatten(1) @ self.spline


class KAN(nn.Module):
    def __init__(self, widths=(16, 32, 32, 4)):
        super().__init__()
        self.layers = nn.Sequential(*[KANLayer(a, b) for a, b in zip(widths, widths[1:])])

    def forward(self, x):
        return self.layers(x)
