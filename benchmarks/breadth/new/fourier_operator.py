"""A Fourier neural operator for 2-D fields (Li et al., arXiv:2010.08895): each layer multiplies the
lowest Fourier modes of its input by learned complex weights and adds a pointwise convolution. A
design no library in the zoo ships; `nar` should call it new. Written for nar's breadth set (2026-11-29)."""
import torch
import torch.nn as nn


class SpectralConv2d(nn.Module):
    def __init__(self, channels, modes=12):
        super().__init__()
        self.modes = modes
        scale = 1 / (channels * channels)
        self.low = nn.Parameter(scale * torch.randn(channels, channels, modes, modes, 2))
        self.high = nn.Parameter(scale * torch.randn(channels, channels, modes, modes, 2))

    def forward(self, x):
        b, c, h, w = x.shape
        spectrum = torch.fft.rfft2(x)
        out = torch.zeros(b, c, h, w // 2 + 1, dtype=torch.cfloat, device=x.device)
        m = self.modes
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", spectrum[:, :, :m, :m], torch.view_as_complex(self.low))
        out[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", spectrum[:, :, -m:, :m], torch.view_as_complex(self.high))
        return torch.fft.irfft2(out, s=(h, w))


class FNO2d(nn.Module):
    def __init__(self, channels=32, layers=4, modes=12):
        super().__init__()
        self.lift = nn.Linear(3, channels)  # the field and its two coordinates
        self.spectral = nn.ModuleList(SpectralConv2d(channels, modes) for _ in range(layers))
        self.pointwise = nn.ModuleList(nn.Conv2d(channels, channels, 1) for _ in range(layers))
        self.project = nn.Sequential(nn.Linear(channels, 128), nn.GELU(), nn.Linear(128, 1))

    def forward(self, field):
        b, h, w, _ = field.shape
        ys = torch.linspace(0, 1, h, device=field.device)[None, :, None, None].expand(b, h, w, 1)
        xs = torch.linspace(0, 1, w, device=field.device)[None, None, :, None].expand(b, h, w, 1)
        x = self.lift(torch.cat([field, ys, xs], -1)).permute(0, 3, 1, 2)
        for i, (spectral, pointwise) in enumerate(zip(self.spectral, self.pointwise)):
            x = spectral(x) + pointwise(x)
            if i < len(self.spectral) - 1:
                x = nn.functional.gelu(x)
        return self.project(x.permute(0, 2, 3, 1))
