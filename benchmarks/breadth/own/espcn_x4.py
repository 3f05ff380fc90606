"""ESPCN, x4 (Shi et al., arXiv:1609.05158), written for nar's breadth set."""
import torch.nn as nn


class ESPCN(nn.Module):
    def __init__(self, upscale=4, channels=1):
        super().__init__()
        self.feature = nn.Sequential(nn.Conv2d(channels, 64, 5, 1, 2), nn.Tanh(), nn.Conv2d(64, 32, 3, 1, 1), nn.Tanh())
        self.sub_pixel = nn.Sequential(nn.Conv2d(32, channels * upscale * upscale, 3, 1, 1), nn.PixelShuffle(upscale))

    def forward(self, x):
        return self.sub_pixel(self.feature(x)).clamp(0.0, 1.0)
