"""A U-Net++ (nested skip pathways, Zhou et al. 2018) over a ResNet-34 encoder, written by hand
for trying `nar similar` on a composite design (Apache-2.0). The encoder is the one in
smp_style_unet.py; the decoder is not: each node X[i][j] joins every earlier node of its row
with the upsampled node below it."""
import torch
from torch import nn
import torch.nn.functional as F

from smp_style_unet import Encoder, conv_bn_relu


class Node(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(conv_bn_relu(cin, cout), conv_bn_relu(cout, cout))

    def forward(self, below, *row):
        up = F.interpolate(below, scale_factor=2, mode="nearest")
        return self.body(torch.cat([up, *row], dim=1))


class NestedUNet(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.encoder = Encoder()
        self.widths = (64, 64, 128, 256, 512)  # X[i][0]: stem (1/2), stages (1/4 .. 1/32)
        self.nodes = nn.ModuleDict()
        for j in range(1, 5):
            for i in range(5 - j):
                # the upsampled node below, then the j nodes of this row so far
                self.nodes[f"{i}_{j}"] = Node(self.widths[i + 1] + self.widths[i] * j, self.widths[i])
        self.head = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear"), nn.Conv2d(64, classes, 3, padding=1))

    def forward(self, x):
        features = self.encoder(x)[1:]  # five maps, finest first
        grid = [[f] for f in features]
        for j in range(1, 5):
            for i in range(5 - j):
                grid[i].append(self.nodes[f"{i}_{j}"](grid[i + 1][j - 1], *grid[i]))
        return self.head(grid[0][-1])
