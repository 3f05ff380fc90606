"""The 70x70 PatchGAN discriminator of pix2pix (Isola et al. arXiv:1611.07004), written for nar's
breadth set: C64-C128-C256-C512 blocks of 4x4 convolutions (the first without normalisation, the
last at stride 1) with LeakyReLU 0.2, then a 4x4 convolution to one score per patch. It reads the
input and the output image concatenated."""
import torch.nn as nn


class PatchDiscriminator(nn.Module):
    def __init__(self, channels=6, width=64):
        super().__init__()
        layers = [nn.Conv2d(channels, width, 4, stride=2, padding=1), nn.LeakyReLU(0.2, inplace=True)]
        c = width
        for i, mult in enumerate((2, 4, 8)):
            stride = 1 if i == 2 else 2
            layers += [nn.Conv2d(c, width * mult, 4, stride=stride, padding=1, bias=False),
                       nn.BatchNorm2d(width * mult), nn.LeakyReLU(0.2, inplace=True)]
            c = width * mult
        layers.append(nn.Conv2d(c, 1, 4, stride=1, padding=1))
        self.model = nn.Sequential(*layers)

    def forward(self, pair):
        return self.model(pair)
