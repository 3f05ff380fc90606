"""Fills a masked square in the middle of a 96x96 photo: strided convolutions down to a 3x3 map, a
wide bottleneck, transposed convolutions back up to the 48x48 hole. Written by hand for trying nar."""
from torch import nn


def down(cin, cout, norm=True):
    return [nn.Conv2d(cin, cout, 4, 2, 1)] + ([nn.BatchNorm2d(cout)] if norm else []) + [nn.LeakyReLU(0.2)]


def up(cin, cout):
    return [nn.ConvTranspose2d(cin, cout, 4, 2, 1), nn.BatchNorm2d(cout), nn.ReLU()]


class HoleFiller(nn.Module):
    def __init__(self, bottleneck=2048):
        super().__init__()
        self.encoder = nn.Sequential(*down(3, 48, norm=False), *down(48, 96), *down(96, 192), *down(192, 384),
                                     *down(384, 384), nn.Conv2d(384, bottleneck, 3), nn.BatchNorm2d(bottleneck),
                                     nn.LeakyReLU(0.2))
        self.decoder = nn.Sequential(nn.ConvTranspose2d(bottleneck, 384, 3), nn.BatchNorm2d(384), nn.ReLU(),
                                     *up(384, 192), *up(192, 96), *up(96, 48), nn.ConvTranspose2d(48, 3, 4, 2, 1),
                                     nn.Tanh())

    def forward(self, x):
        return self.decoder(self.encoder(x))
