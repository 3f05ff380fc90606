"""DiT-S/4 style denoiser written the usual way: forward(x, t, y)."""
import math
import torch
from torch import nn


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class TimestepEmbedder(nn.Module):
    def __init__(self, dim, freq=256):
        super().__init__()
        self.freq = freq
        self.mlp = nn.Sequential(nn.Linear(freq, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t):
        half = self.freq // 2
        f = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        a = t[:, None].float() * f[None]
        return self.mlp(torch.cat([torch.cos(a), torch.sin(a)], dim=-1))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    def forward(self, x, c):
        s1, g1, a1, s2, g2, a2 = self.ada(c).chunk(6, dim=1)
        h = modulate(self.norm1(x), s1, g1)
        x = x + a1.unsqueeze(1) * self.attn(h, h, h, need_weights=False)[0]
        return x + a2.unsqueeze(1) * self.mlp(modulate(self.norm2(x), s2, g2))


class DiT(nn.Module):
    def __init__(self, size=32, patch=4, chans=4, dim=384, depth=12, heads=6, classes=1000):
        super().__init__()
        self.patch, self.chans = patch, chans
        self.x_embed = nn.Conv2d(chans, dim, patch, patch)
        self.pos = nn.Parameter(torch.zeros(1, (size // patch) ** 2, dim))
        self.t_embed = TimestepEmbedder(dim)
        self.y_embed = nn.Embedding(classes + 1, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim))
        self.out = nn.Linear(dim, patch * patch * chans * 2)

    def forward(self, x, t, y):
        h = self.x_embed(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_embed(t) + self.y_embed(y)
        for block in self.blocks:
            h = block(h, c)
        shift, scale = self.ada(c).chunk(2, dim=1)
        h = self.out(modulate(self.norm(h), shift, scale))
        n, side = h.shape[0], int(h.shape[1] ** 0.5)
        h = h.reshape(n, side, side, self.patch, self.patch, self.chans * 2)
        return torch.einsum("nhwpqc->nchpwq", h).reshape(n, self.chans * 2, side * self.patch, side * self.patch)
