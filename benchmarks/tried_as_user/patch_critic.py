"""A conditional image-to-image critic written for a sketch-to-photo GAN: it sees the sketch and
the photo side by side and scores overlapping patches. Written by hand for trying nar."""
import torch
from torch import nn


def block(cin, cout, stride, norm=True):
    layers = [nn.Conv2d(cin, cout, kernel_size=4, stride=stride, padding=1, bias=not norm)]
    if norm:
        layers.append(nn.InstanceNorm2d(cout, affine=True))
    layers.append(nn.LeakyReLU(0.2, inplace=True))
    return layers


class SketchPhotoCritic(nn.Module):
    def __init__(self, base=48):
        super().__init__()
        self.body = nn.Sequential(
            *block(4, base, 2, norm=False),      # 1-channel sketch + 3-channel photo
            *block(base, base * 2, 2),
            *block(base * 2, base * 4, 2),
            *block(base * 4, base * 8, 1),
            nn.Conv2d(base * 8, 1, kernel_size=4, stride=1, padding=1),
        )

    def forward(self, pair):
        return self.body(pair)
