"""The DDPM noise-prediction U-Net (Ho et al., arXiv:2006.11239), written for nar's breadth set.

Wide ResNet blocks with GroupNorm and SiLU, a sinusoidal timestep embedding added in every block,
self-attention at 16x16, two blocks per level. `forward(x, t)`: the noisy image and its timestep.
(Until 2026-12-05 the manifest gave one input and the timestep was a fixed buffer, which the
canonical graph folded into constants.)
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim, dropout=0.1):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.drop = nn.Dropout(dropout)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return self.skip(x) + h


class Attention(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.norm, self.qkv, self.proj = nn.GroupNorm(32, ch), nn.Conv2d(ch, 3 * ch, 1), nn.Conv2d(ch, ch, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).unbind(1)
        weights = torch.softmax(torch.einsum("bci,bcj->bij", q, k) / math.sqrt(c), dim=-1)
        out = torch.einsum("bij,bcj->bci", weights, v).reshape(b, c, h, w)
        return x + self.proj(out)


class DDPMUNet(nn.Module):
    def __init__(self, ch=128, mult=(1, 2, 2, 2), blocks=2, attn_res=(16,), resolution=32):
        super().__init__()
        self.ch, tdim = ch, ch * 4
        self.time = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.stem = nn.Conv2d(3, ch, 3, padding=1)
        self.down, chans, cur, res = nn.ModuleList(), [ch], ch, resolution
        for level, m in enumerate(mult):
            for _ in range(blocks):
                self.down.append(nn.ModuleList([ResBlock(cur, ch * m, tdim),
                                                Attention(ch * m) if res in attn_res else nn.Identity()]))
                cur = ch * m
                chans.append(cur)
            if level != len(mult) - 1:
                self.down.append(nn.Conv2d(cur, cur, 3, stride=2, padding=1))
                chans.append(cur)
                res //= 2
        self.mid1, self.mid_attn, self.mid2 = ResBlock(cur, cur, tdim), Attention(cur), ResBlock(cur, cur, tdim)
        self.up = nn.ModuleList()
        for level, m in reversed(list(enumerate(mult))):
            for _ in range(blocks + 1):
                self.up.append(nn.ModuleList([ResBlock(cur + chans.pop(), ch * m, tdim),
                                              Attention(ch * m) if res in attn_res else nn.Identity()]))
                cur = ch * m
            if level != 0:
                self.up.append(nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(cur, cur, 3, padding=1)))
                res *= 2
        self.out = nn.Sequential(nn.GroupNorm(32, cur), nn.SiLU(), nn.Conv2d(cur, 3, 3, padding=1))

    def forward(self, x, t):
        temb = self.time(timestep_embedding(t, self.ch))
        h = self.stem(x)
        skips = [h]
        for layer in self.down:
            if isinstance(layer, nn.ModuleList):
                h = layer[1](layer[0](h, temb))
            else:
                h = layer(h)
            skips.append(h)
        h = self.mid2(self.mid_attn(self.mid1(h, temb)), temb)
        for layer in self.up:
            if isinstance(layer, nn.ModuleList):
                h = layer[1](layer[0](torch.cat([h, skips.pop()], dim=1), temb))
            else:
                h = layer(h)
        return self.out(h)
