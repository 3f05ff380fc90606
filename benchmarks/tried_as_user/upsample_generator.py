"""A small face generator: a noise vector projected to a 4x4 map, then doubled four times by
nearest-neighbour upsampling and a 3x3 convolution each. Written by hand for trying nar."""
import torch
from torch import nn


class FaceGenerator(nn.Module):
    def __init__(self, latent=128, width=256):
        super().__init__()
        self.width = width
        self.project = nn.Sequential(nn.Linear(latent, width * 4 * 4), nn.BatchNorm1d(width * 4 * 4), nn.ReLU())
        stages, c = [], width
        for _ in range(3):
            stages += [nn.Upsample(scale_factor=2), nn.Conv2d(c, c // 2, 3, padding=1), nn.BatchNorm2d(c // 2), nn.ReLU()]
            c //= 2
        stages += [nn.Upsample(scale_factor=2), nn.Conv2d(c, 3, 3, padding=1), nn.Tanh()]
        self.stages = nn.Sequential(*stages)

    def forward(self, z):
        return self.stages(self.project(z).view(-1, self.width, 4, 4))
