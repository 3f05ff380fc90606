"""RealNVP (Dinh et al. arXiv:1605.08803) for tabular data, written for nar's breadth set: affine
coupling layers with alternating binary masks, each scale net a tanh MLP and each shift net a ReLU
MLP; forward returns the latent and the log-determinant."""
import torch
import torch.nn as nn


class Coupling(nn.Module):
    def __init__(self, dim, hidden, parity):
        super().__init__()
        mask = torch.arange(dim) % 2 == parity
        self.register_buffer("mask", mask.float())
        self.scale = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.shift = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, dim))

    def forward(self, x):
        kept = x * self.mask
        s = self.scale(kept) * (1 - self.mask)
        t = self.shift(kept) * (1 - self.mask)
        return kept + (1 - self.mask) * (x * torch.exp(s) + t), s.sum(dim=1)


class RealNVP(nn.Module):
    def __init__(self, dim=8, hidden=256, layers=6):
        super().__init__()
        self.layers = nn.ModuleList(Coupling(dim, hidden, i % 2) for i in range(layers))

    def forward(self, x):
        log_det = torch.zeros(x.shape[0], device=x.device)
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det
