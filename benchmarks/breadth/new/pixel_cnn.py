"""PixelCNN (van den Oord et al. arXiv:1601.06759), written for nar's breadth set: a type-A masked 7x7
convolution, residual blocks of type-B masked 3x3 convolutions, and 256-way logits per pixel. The
masks are buffers multiplied into the weights at every call."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedConv2d(nn.Conv2d):
    def __init__(self, kind, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _, _, h, w = self.weight.shape
        mask = torch.ones(h, w)
        mask[h // 2, w // 2 + (kind == "B"):] = 0
        mask[h // 2 + 1:] = 0
        self.register_buffer("mask", mask[None, None])

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)


class ResidualMasked(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.net = nn.Sequential(nn.ReLU(), nn.Conv2d(2 * channels, channels, 1), nn.ReLU(),
                                 MaskedConv2d("B", channels, channels, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(channels, 2 * channels, 1))

    def forward(self, x):
        return x + self.net(x)


class PixelCNN(nn.Module):
    def __init__(self, channels=64, blocks=7):
        super().__init__()
        self.first = MaskedConv2d("A", 1, 2 * channels, 7, padding=3)
        self.blocks = nn.Sequential(*(ResidualMasked(channels) for _ in range(blocks)))
        self.head = nn.Sequential(nn.ReLU(), nn.Conv2d(2 * channels, 256, 1), nn.ReLU(), nn.Conv2d(256, 256, 1))

    def forward(self, x):
        return self.head(self.blocks(self.first(x)))
