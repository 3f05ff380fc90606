"""DCGAN generator (Radford et al., arXiv:1511.06434) for 64x64 RGB, written for nar's breadth set."""
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, latent_dim=128, width=64):
        super().__init__()
        self.project = nn.Sequential(nn.ConvTranspose2d(latent_dim, width * 8, 4, 1, 0, bias=False),
                                     nn.BatchNorm2d(width * 8), nn.ReLU(True))
        self.up = nn.Sequential(
            nn.ConvTranspose2d(width * 8, width * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(width * 4), nn.ReLU(True),
            nn.ConvTranspose2d(width * 4, width * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(width * 2), nn.ReLU(True),
            nn.ConvTranspose2d(width * 2, width, 4, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(True),
        )
        self.to_rgb = nn.ConvTranspose2d(width, 3, 4, 2, 1, bias=False)

    def forward(self, z):
        return self.to_rgb(self.up(self.project(z))).tanh()
