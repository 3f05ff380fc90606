"""EDSR baseline, x2 (Lim et al., arXiv:1707.02921), written for nar's breadth set."""
import torch.nn as nn


class ResBlock(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(n, n, 3, padding=1), nn.ReLU(True), nn.Conv2d(n, n, 3, padding=1))

    def forward(self, x):
        return x + self.body(x)


class EDSR(nn.Module):
    def __init__(self, n_resblocks=16, n_feats=64, scale=2):
        super().__init__()
        self.head = nn.Conv2d(3, n_feats, 3, padding=1)
        self.body = nn.Sequential(*[ResBlock(n_feats) for _ in range(n_resblocks)], nn.Conv2d(n_feats, n_feats, 3, padding=1))
        self.tail = nn.Sequential(nn.Conv2d(n_feats, n_feats * scale * scale, 3, padding=1), nn.PixelShuffle(scale),
                                  nn.Conv2d(n_feats, 3, 3, padding=1))

    def forward(self, x):
        x = self.head(x)
        return self.tail(self.body(x) + x)
