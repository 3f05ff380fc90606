"""DiT (Peebles & Xie 2022, "Scalable Diffusion Models with Transformers") as its paper describes it:
patches of the latent, a transformer whose blocks are conditioned by adaLN-Zero on the sum of a
timestep and a class embedding computed once per forward, a final adaLN layer and the patches
put back. diffusers' DiT (in the zoo already) recomputes that embedding inside every block, so a
DiT written from the paper sits far from it; this is the paper's layout, at its four sizes."""

from __future__ import annotations

import math

import torch
from torch import nn

SIZES = {"s": (12, 384, 6), "b": (12, 768, 12), "l": (24, 1024, 16), "xl": (28, 1152, 16)}  # depth, width, heads


def _modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class _Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(width, 6 * width))

    def attend(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(b, n, c))

    def forward(self, x, c):
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.ada(c).chunk(6, dim=1)
        x = x + gate_a.unsqueeze(1) * self.attend(_modulate(self.norm1(x), shift_a, scale_a))
        return x + gate_m.unsqueeze(1) * self.mlp(_modulate(self.norm2(x), shift_m, scale_m))


class DiT(nn.Module):
    def __init__(self, size: str = "s", patch: int = 2, latent: int = 32, channels: int = 4, classes: int = 1000,
                 learn_sigma: bool = True, frequencies: int = 256):
        super().__init__()
        depth, width, heads = SIZES[size]
        self.patch, self.channels, self.frequencies = patch, channels, frequencies
        self.out_channels = 2 * channels if learn_sigma else channels
        self.embed = nn.Conv2d(channels, width, patch, patch)
        self.register_buffer("position", torch.zeros(1, (latent // patch) ** 2, width))  # fixed sin-cos table
        self.timestep = nn.Sequential(nn.Linear(frequencies, width), nn.SiLU(), nn.Linear(width, width))
        self.label = nn.Embedding(classes + 1, width)  # the extra row: no class (classifier-free guidance)
        self.blocks = nn.ModuleList(_Block(width, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_ada = nn.Sequential(nn.SiLU(), nn.Linear(width, 2 * width))
        self.final = nn.Linear(width, patch * patch * self.out_channels)

    def frequency_embedding(self, t):
        half = self.frequencies // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
        angles = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(angles), torch.sin(angles)], dim=-1)

    def forward(self, x, t, y):
        b, _, h, w = x.shape
        tokens = self.embed(x).flatten(2).transpose(1, 2) + self.position
        c = self.timestep(self.frequency_embedding(t)) + self.label(y)
        for block in self.blocks:
            tokens = block(tokens, c)
        shift, scale = self.final_ada(c).chunk(2, dim=1)
        tokens = self.final(_modulate(self.final_norm(tokens), shift, scale))
        p, rows, cols = self.patch, h // self.patch, w // self.patch
        tokens = tokens.reshape(b, rows, cols, p, p, self.out_channels)
        return torch.einsum("nhwpqc->nchpwq", tokens).reshape(b, self.out_channels, h, w)
