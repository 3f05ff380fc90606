import torch
from torch import nn


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pw2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(1e-6 * torch.ones(dim))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.gamma * self.pw2(self.act(self.pw1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtT(nn.Module):
    """ConvNeXt-T written from the paper: patchify stem, (3, 3, 9, 3) blocks, downsampling layers."""

    def __init__(self, depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), classes=1000):
        super().__init__()
        layers = [nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0]))]
        for i, (depth, dim) in enumerate(zip(depths, dims)):
            if i:
                layers.append(nn.Sequential(LayerNorm2d(dims[i - 1]), nn.Conv2d(dims[i - 1], dim, 2, 2)))
            layers.append(nn.Sequential(*[Block(dim) for _ in range(depth)]))
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dims[-1])
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        return self.head(self.norm(self.features(x).mean((2, 3))))
