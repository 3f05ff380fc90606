"""SegResNet (Myronenko, arXiv:1810.11654), the 3-D brain-tumour segmentation network, written for
nar's breadth set without its VAE branch: an initial 3x3x3 convolution to 16 channels, encoder
stages of pre-activation residual blocks (group norm, ReLU, 3x3x3 convolution, twice) with 1, 2, 2
and 4 blocks, each stage after the first entered by a strided convolution doubling the channels;
a decoder that halves the channels with a 1x1x1 convolution, upsamples trilinearly, adds the
encoder's features of that size and applies one residual block; then group norm, ReLU and a 1x1x1
convolution to three output channels."""
import torch.nn as nn
import torch.nn.functional as F


class PreActBlock(nn.Module):
    def __init__(self, channels, groups=8):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(groups, channels), nn.Conv3d(channels, channels, 3, padding=1, bias=False)
        self.n2, self.c2 = nn.GroupNorm(groups, channels), nn.Conv3d(channels, channels, 3, padding=1, bias=False)

    def forward(self, x):
        y = self.c1(F.relu(self.n1(x)))
        y = self.c2(F.relu(self.n2(y)))
        return x + y


class SegResNet(nn.Module):
    def __init__(self, in_channels=4, out_channels=3, width=16, blocks=(1, 2, 2, 4)):
        super().__init__()
        self.first = nn.Conv3d(in_channels, width, 3, padding=1, bias=False)
        self.drop = nn.Dropout3d(0.2)
        self.down = nn.ModuleList()
        self.encoder = nn.ModuleList()
        for i, count in enumerate(blocks):
            channels = width * 2 ** i
            self.down.append(nn.Identity() if i == 0 else nn.Conv3d(channels // 2, channels, 3, 2, 1, bias=False))
            self.encoder.append(nn.Sequential(*[PreActBlock(channels) for _ in range(count)]))
        self.reduce = nn.ModuleList()
        self.decoder = nn.ModuleList()
        for i in reversed(range(len(blocks) - 1)):
            channels = width * 2 ** i
            self.reduce.append(nn.Conv3d(channels * 2, channels, 1, bias=False))
            self.decoder.append(PreActBlock(channels))
        self.final = nn.Sequential(nn.GroupNorm(8, width), nn.ReLU(), nn.Conv3d(width, out_channels, 1))

    def forward(self, x):
        x = self.drop(self.first(x))
        skips = []
        for down, stage in zip(self.down, self.encoder):
            x = stage(down(x))
            skips.append(x)
        for reduce, block, skip in zip(self.reduce, self.decoder, reversed(skips[:-1])):
            x = F.interpolate(reduce(x), scale_factor=2, mode="trilinear", align_corners=False)
            x = block(x + skip)
        return self.final(x)
