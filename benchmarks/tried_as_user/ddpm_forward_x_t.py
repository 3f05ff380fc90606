"""A small DDPM noise predictor written the usual way: forward(x, t), sinusoidal time embedding."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class TinyDDPM(nn.Module):
    def __init__(self, ch=64, mult=(1, 2, 2)):
        super().__init__()
        self.ch, tdim = ch, ch * 4
        self.time = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.stem = nn.Conv2d(3, ch, 3, padding=1)
        chans = [ch * m for m in mult]
        self.down, self.up = nn.ModuleList(), nn.ModuleList()
        c = ch
        for i, co in enumerate(chans):
            self.down.append(ResBlock(c, co, tdim))
            c = co
        self.mid = ResBlock(c, c, tdim)
        for co in reversed(chans):
            self.up.append(ResBlock(c + co, co, tdim))
            c = co
        self.out = nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

    def forward(self, x, t):
        temb = self.time(timestep_embedding(t, self.ch))
        h = self.stem(x)
        skips = []
        for block in self.down:
            h = block(h, temb)
            skips.append(h)
            h = F.avg_pool2d(h, 2)
        h = self.mid(h, temb)
        for block in self.up:
            h = F.interpolate(h, scale_factor=2.0, mode="nearest")
            h = block(torch.cat([h, skips.pop()], 1), temb)
        return self.out(h)
