"""A capsule network with dynamic routing (Sabour, Frosst and Hinton, arXiv:1710.09829): a design no
library in the zoo ships; `nar` should call it new. Written for nar's breadth set (2026-11-29)."""
import torch
import torch.nn as nn


def squash(s, dim=-1):
    norm2 = (s * s).sum(dim, keepdim=True)
    return norm2 / (1 + norm2) * s / torch.sqrt(norm2 + 1e-8)


class PrimaryCapsules(nn.Module):
    def __init__(self, cin=256, capsules=32, size=8):
        super().__init__()
        self.size = size
        self.conv = nn.Conv2d(cin, capsules * size, 9, stride=2)

    def forward(self, x):
        u = self.conv(x)
        return squash(u.view(x.shape[0], -1, self.size))


class RoutedCapsules(nn.Module):
    def __init__(self, inputs=1152, cin=8, outputs=10, cout=16, iterations=3):
        super().__init__()
        self.iterations = iterations
        self.weights = nn.Parameter(torch.randn(1, inputs, outputs, cout, cin) * 0.01)

    def forward(self, u):
        # every input capsule's prediction of every output capsule
        u_hat = (self.weights @ u[:, :, None, :, None]).squeeze(-1)
        logits = torch.zeros(u_hat.shape[:3], device=u.device)
        for step in range(self.iterations):
            coupling = logits.softmax(dim=2)
            v = squash((coupling[..., None] * u_hat).sum(1))
            if step < self.iterations - 1:
                logits = logits + (u_hat * v[:, None]).sum(-1)
        return v


class CapsNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 256, 9), nn.ReLU())
        self.primary = PrimaryCapsules()
        self.digits = RoutedCapsules(outputs=classes)
        self.decoder = nn.Sequential(nn.Linear(16 * classes, 512), nn.ReLU(), nn.Linear(512, 1024), nn.ReLU(),
                                     nn.Linear(1024, 784), nn.Sigmoid())

    def forward(self, x):
        v = self.digits(self.primary(self.stem(x)))
        lengths = v.norm(dim=-1)
        mask = nn.functional.one_hot(lengths.argmax(1), v.shape[1]).to(v.dtype)
        return lengths, self.decoder((v * mask[..., None]).flatten(1))
