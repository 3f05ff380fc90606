"""A Kolmogorov-Arnold network (efficient-KAN style): B-spline bases times learnt coefficients,
plus a SiLU base branch, for 28x28 digits."""
import torch
from torch import nn
import torch.nn.functional as F


class KANLayer(nn.Module):
    def __init__(self, cin, cout, grid=5, order=3):
        super().__init__()
        h = 2.0 / grid
        knots = torch.arange(-order, grid + order + 1, dtype=torch.float32) * h - 1.0
        self.register_buffer("knots", knots.expand(cin, -1).contiguous())
        self.base = nn.Linear(cin, cout, bias=False)
        self.spline = nn.Parameter(torch.randn(cout, cin, grid + order) * 0.1)
        self.order = order

    def bases(self, x):
        g = self.knots
        x = x.unsqueeze(-1)
        b = ((x >= g[:, :-1]) & (x < g[:, 1:])).to(x.dtype)
        for k in range(1, self.order + 1):
            b = ((x - g[:, : -(k + 1)]) / (g[:, k:-1] - g[:, : -(k + 1)]) * b[..., :-1]
                 + (g[:, k + 1:] - x) / (g[:, k + 1:] - g[:, 1:-k]) * b[..., 1:])
        return b

    def forward(self, x):
        spline = F.linear(self.bases(x).flatten(1), self.spline.flatten(1))
        return self.base(F.silu(x)) + spline


class KAN(nn.Module):
    def __init__(self, widths=(784, 64, 10)):
        super().__init__()
        self.layers = nn.ModuleList([KANLayer(a, b) for a, b in zip(widths[:-1], widths[1:])])

    def forward(self, x):
        x = x.flatten(1)
        for layer in self.layers:
            x = layer(x)
        return x

