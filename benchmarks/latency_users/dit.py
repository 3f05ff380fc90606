"""A small diffusion transformer (DiT-S/4 style) on 32x32x4 latents, with adaLN-zero conditioning."""
import math

import torch
from torch import nn


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], -1)


class DiTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    def forward(self, x, c):
        s1, b1, g1, s2, b2, g2 = self.ada(c).unsqueeze(1).chunk(6, -1)
        h = self.norm1(x) * (1 + s1) + b1
        x = x + g1 * self.attn(h, h, h, need_weights=False)[0]
        h = self.norm2(x) * (1 + s2) + b2
        return x + g2 * self.mlp(h)


class DiT(nn.Module):
    def __init__(self, size=32, channels=4, patch=4, dim=384, depth=12, heads=6, classes=1000):
        super().__init__()
        self.patch, self.channels, self.size = patch, channels, size
        self.embed = nn.Conv2d(channels, dim, patch, patch)
        self.pos = nn.Parameter(torch.zeros(1, (size // patch) ** 2, dim))
        self.t_mlp = nn.Sequential(nn.Linear(256, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.y_embed = nn.Embedding(classes + 1, dim)
        self.blocks = nn.ModuleList([DiTBlock(dim, heads) for _ in range(depth)])
        self.final_norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.final = nn.Linear(dim, patch * patch * channels * 2)

    def forward(self, x, t, y):
        x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_mlp(timestep_embedding(t, 256)) + self.y_embed(y)
        for block in self.blocks:
            x = block(x, c)
        x = self.final(self.final_norm(x))
        g, p = self.size // self.patch, self.patch
        x = x.view(-1, g, g, p, p, self.channels * 2).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(-1, self.channels * 2, self.size, self.size)

