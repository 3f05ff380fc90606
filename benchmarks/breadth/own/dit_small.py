"""DiT-S/2 (Peebles & Xie, arXiv:2212.09748), written for nar's breadth set: a latent-diffusion
transformer over 2x2 patches of a 32x32x4 latent, adaLN-Zero conditioning on the timestep and the
class label: `forward(x, t, y)`. (Until 2026-12-05 both were fixed buffers, since the manifest gave
one input, and the canonical graph folded the conditioning into constants.)"""
import math

import torch
import torch.nn as nn


def modulate(x, shift, scale):
    return x * (1 + scale[:, None]) + shift[:, None]


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, dim))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    def forward(self, x, c):
        s1, g1, a1, s2, g2, a2 = self.ada(c).chunk(6, dim=1)
        h = modulate(self.norm1(x), s1, g1)
        x = x + a1[:, None] * self.attn(h, h, h, need_weights=False)[0]
        return x + a2[:, None] * self.mlp(modulate(self.norm2(x), s2, g2))


class DiT(nn.Module):
    def __init__(self, size=32, patch=2, channels=4, dim=384, depth=12, heads=6, classes=1000):
        super().__init__()
        self.patch, self.channels = patch, channels
        self.embed = nn.Conv2d(channels, dim, patch, stride=patch)
        self.register_buffer("pos", torch.zeros(1, (size // patch) ** 2, dim))
        self.t_mlp = nn.Sequential(nn.Linear(256, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.y_embed = nn.Embedding(classes + 1, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.final_norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.final_ada = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim))
        self.final = nn.Linear(dim, patch * patch * channels * 2)

    def timestep(self, t, dim=256):
        half = dim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        args = t.float()[:, None] * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, x, t, y):
        b, _, h, w = x.shape
        tokens = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_mlp(self.timestep(t)) + self.y_embed(y)
        for block in self.blocks:
            tokens = block(tokens, c)
        shift, scale = self.final_ada(c).chunk(2, dim=1)
        out = self.final(modulate(self.final_norm(tokens), shift, scale))
        p, gh, gw = self.patch, h // self.patch, w // self.patch
        out = out.reshape(b, gh, gw, p, p, 2 * self.channels).permute(0, 5, 1, 3, 2, 4)
        return out.reshape(b, 2 * self.channels, h, w)
