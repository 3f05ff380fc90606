"""Generative designs as their papers lay them out: the Diffusion Transformer with adaLN-Zero
(Peebles & Xie 2023), the VQ-VAE (van den Oord et al. 2017) and the Context Encoder for inpainting
(Pathak et al. 2016). diffusers ships DiT with the timestep embedded again inside every block, and
MONAI a VQ-VAE of its own layout; these are the papers' spellings, which is what people write."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from nar_classics.vision import DCGANGenerator


def _timestep_frequencies(t, dim=256, max_period=10000):
    """The sinusoidal embedding of a (float) diffusion timestep, as in the Transformer's positions."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def _sincos_positions(width, side):
    """Fixed 2-D sine-cosine positions (half the width per axis), a buffer rather than a weight."""
    axis = torch.arange(side, dtype=torch.float32)
    omega = 1.0 / 10000 ** (torch.arange(width // 4, dtype=torch.float32) / (width / 4))
    rows, cols = torch.meshgrid(axis, axis, indexing="ij")
    parts = [f(grid.reshape(-1, 1) * omega[None]) for grid in (rows, cols) for f in (torch.sin, torch.cos)]
    return torch.cat(parts, dim=1)[None]


def _modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class DiTBlock(nn.Module):
    """One block: the conditioning regresses shift, scale and a gate for the attention and the MLP
    (adaLN-Zero); the layer norms have no parameters of their own."""

    def __init__(self, width, heads, mlp_ratio=4.0):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        hidden = int(width * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(width, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, width))
        self.modulation = nn.Sequential(nn.SiLU(), nn.Linear(width, 6 * width))

    def attention(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))

    def forward(self, x, c):
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.modulation(c).chunk(6, dim=1)
        x = x + gate_a.unsqueeze(1) * self.attention(_modulate(self.norm1(x), shift_a, scale_a))
        return x + gate_m.unsqueeze(1) * self.mlp(_modulate(self.norm2(x), shift_m, scale_m))


class DiT(nn.Module):
    """Peebles & Xie 2023, section 3: the latent (4 x 32 x 32 for 256-pixel images) cut into
    patch x patch tokens with fixed sine-cosine positions; the timestep's frequency embedding through
    a two-layer MLP plus a class embedding (one extra row for the unconditional label) condition every
    block; a final adaLN layer and a linear map back to patches, with twice the input's channels
    (noise and its variance), reassembled into the latent. Sizes of table 1: S 384 x 12 (6 heads),
    B 768 x 12 (12), L 1024 x 24 (16), XL 1152 x 28 (16)."""

    def __init__(self, width=384, depth=12, heads=6, patch=2, side=32, channels=4, classes=1000):
        super().__init__()
        self.patch, self.channels, self.grid = patch, channels * 2, side // patch
        self.embed_patches = nn.Conv2d(channels, width, patch, stride=patch)
        self.register_buffer("positions", _sincos_positions(width, self.grid), persistent=False)
        self.time_mlp = nn.Sequential(nn.Linear(256, width), nn.SiLU(), nn.Linear(width, width))
        self.labels = nn.Embedding(classes + 1, width)
        self.blocks = nn.ModuleList(DiTBlock(width, heads) for _ in range(depth))
        self.norm_final = nn.LayerNorm(width, elementwise_affine=False, eps=1e-6)
        self.final_modulation = nn.Sequential(nn.SiLU(), nn.Linear(width, 2 * width))
        self.to_patches = nn.Linear(width, patch * patch * self.channels)

    def forward(self, x, t, y):
        x = self.embed_patches(x).flatten(2).transpose(1, 2) + self.positions
        c = self.time_mlp(_timestep_frequencies(t)) + self.labels(y)
        for block in self.blocks:
            x = block(x, c)
        shift, scale = self.final_modulation(c).chunk(2, dim=1)
        x = self.to_patches(_modulate(self.norm_final(x), shift, scale))
        b, g, p = x.shape[0], self.grid, self.patch
        x = x.reshape(b, g, g, p, p, self.channels).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(b, self.channels, g * p, g * p)


class _Residual(nn.Module):
    """VQ-VAE's residual block: ReLU, 3x3 convolution, ReLU, 1x1 convolution, added to the input."""

    def __init__(self, width, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(width, hidden, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(hidden, width, 1))

    def forward(self, x):
        return x + self.body(x)


class VectorQuantizer(nn.Module):
    """Each latent vector replaced by its nearest codebook entry (squared distances written out as
    |z|^2 + |e|^2 - 2 z.e), with the straight-through estimator's identity for the gradient."""

    def __init__(self, codes, dim):
        super().__init__()
        self.codebook = nn.Embedding(codes, dim)

    def forward(self, z):
        b, d, h, w = z.shape
        flat = z.permute(0, 2, 3, 1).reshape(-1, d)
        distances = (flat.pow(2).sum(1, keepdim=True) + self.codebook.weight.pow(2).sum(1)
                     - 2 * flat @ self.codebook.weight.t())
        quantized = self.codebook(distances.argmin(1)).reshape(b, h, w, d).permute(0, 3, 1, 2)
        return z + (quantized - z).detach()


class VQVAE(nn.Module):
    """van den Oord et al. 2017, section 4.1: two 4x4 stride-2 convolutions and two residual blocks
    (256 units) encode; a 1x1 convolution to the codebook's dimension; the nearest of K codes; two
    residual blocks (after a 3x3 convolution back from the codes' dimension) and two 4x4 stride-2
    transposed convolutions decode. ImageNet 128 x 128 gives a 32 x 32 latent, CIFAR-10 an 8 x 8 one
    with D = 10; K = 512 for both."""

    def __init__(self, channels=3, hidden=256, codes=512, dim=64, residual_hidden=None, downsamples=2):
        super().__init__()
        residual_hidden = residual_hidden or hidden
        down, width = [], channels
        for _ in range(downsamples):
            down += [nn.Conv2d(width, hidden, 4, 2, 1), nn.ReLU()]
            width = hidden
        self.encoder = nn.Sequential(*down[:-1], _Residual(hidden, residual_hidden), _Residual(hidden, residual_hidden),
                                     nn.ReLU())
        self.to_codes = nn.Conv2d(hidden, dim, 1)
        self.quantize = VectorQuantizer(codes, dim)
        up = []
        for i in range(downsamples):
            last = i == downsamples - 1
            up += [nn.ConvTranspose2d(hidden, channels if last else hidden, 4, 2, 1)] + ([] if last else [nn.ReLU()])
        self.decoder = nn.Sequential(nn.Conv2d(dim, hidden, 3, padding=1), _Residual(hidden, residual_hidden),
                                     _Residual(hidden, residual_hidden), nn.ReLU(), *up)

    def forward(self, x):
        return self.decoder(self.quantize(self.to_codes(self.encoder(x))))


class ContextEncoder(nn.Module):
    """Pathak et al. 2016, the inpainting network: an encoder of 4x4 stride-2 convolutions (64, 64,
    128, 256, 512; batch norm and leaky ReLU 0.2 after all but the first's norm) down to a 4000-unit
    bottleneck, and DCGAN's generator with the bottleneck as its noise (4x4 transposed convolutions,
    batch norm, ReLU, halving the widths from the encoder's last) painting the missing centre, half
    the input's side (64 or 128), through a tanh."""

    def __init__(self, channels=3, side=128, bottleneck=4000, widths=(64, 64, 128, 256, 512)):
        super().__init__()
        steps = int(math.log2(side)) - 2  # strided convolutions down to 4 x 4
        widths = widths[-steps:] if steps < len(widths) else widths
        layers, width = [], channels
        for i, out in enumerate(widths):
            layers += [nn.Conv2d(width, out, 4, 2, 1, bias=i == 0)] + ([nn.BatchNorm2d(out)] if i else [])
            layers.append(nn.LeakyReLU(0.2, True))
            width = out
        layers += [nn.Conv2d(width, bottleneck, 4, bias=False), nn.BatchNorm2d(bottleneck), nn.LeakyReLU(0.2, True)]
        self.encoder = nn.Sequential(*layers)
        # DCGAN starts at ngf x 2^(its steps - 1) and has one step fewer than the encoder: start at its last width
        ngf = widths[-1] // 2 ** (steps - 2)
        self.decoder = DCGANGenerator(nz=bottleneck, ngf=ngf, channels=channels, size=side // 2).main

    def forward(self, x):
        return self.decoder(self.encoder(x))
