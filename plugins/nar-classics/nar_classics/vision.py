"""Image and 3D designs: DCGAN, VAE and autoencoders, the original U-Net, PointNet, NeRF,
SRCNN / ESPCN / EDSR, LeNet-5, a siamese network, and DQN / actor-critic for RL."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _upsampling(cin, cout, resize, bias=False):
    """A stride-2 4x4 transposed convolution, or (`resize`) the resize-convolution Odena et al. 2016
    put in its place against checkerboard artifacts: nearest-neighbour x2, then a 3x3 convolution."""
    if resize:
        return [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(cin, cout, 3, 1, 1, bias=bias)]
    return [nn.ConvTranspose2d(cin, cout, 4, 2, 1, bias=bias)]


class DCGANGenerator(nn.Module):
    """Radford et al. 2016: a projected noise vector upsampled by stride-2 transposed convolutions
    (`resize`: by resize-convolutions)."""

    def __init__(self, nz=100, ngf=64, channels=3, size=64, resize=False):
        super().__init__()
        steps = {32: 3, 64: 4, 128: 5}[size]
        width = ngf * 2 ** (steps - 1)
        layers = [nn.ConvTranspose2d(nz, width, 4, 1, 0, bias=False), nn.BatchNorm2d(width), nn.ReLU(True)]
        for _ in range(steps - 1):
            layers += [*_upsampling(width, width // 2, resize), nn.BatchNorm2d(width // 2), nn.ReLU(True)]
            width //= 2
        layers += [*_upsampling(width, channels, resize), nn.Tanh()]
        self.main = nn.Sequential(*layers)

    def forward(self, z):
        return self.main(z)


class DCGANDiscriminator(nn.Module):
    """The mirror of the generator: stride-2 convolutions, leaky ReLU; a WGAN critic drops the
    batch norm and the sigmoid (Arjovsky et al. 2017, Gulrajani et al.)."""

    def __init__(self, ndf=64, channels=3, size=64, critic=False):
        super().__init__()
        steps = {32: 3, 64: 4, 128: 5}[size]
        layers, width = [nn.Conv2d(channels, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True)], ndf
        for _ in range(steps - 1):
            layers += [nn.Conv2d(width, width * 2, 4, 2, 1, bias=False)]
            # a critic's norm may not couple the samples of a batch: layer norm (one group)
            layers += [nn.GroupNorm(1, width * 2) if critic else nn.BatchNorm2d(width * 2), nn.LeakyReLU(0.2, True)]
            width *= 2
        layers += [nn.Conv2d(width, 1, 4, 1, 0, bias=False)] + ([] if critic else [nn.Sigmoid()])
        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x).flatten(1)


class DenseVAE(nn.Module):
    """Kingma & Welling 2014: an MLP encoder to a mean and log-variance, the reparameterised sample
    decoded by an MLP. As a plain autoencoder (`variational=False`) the code is the bottleneck."""

    def __init__(self, inputs=784, hidden=(400,), latent=20, variational=True):
        super().__init__()
        self.variational = variational
        dims = [inputs, *hidden]
        self.encoder = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())])
        self.mu = nn.Linear(dims[-1], latent)
        self.logvar = nn.Linear(dims[-1], latent) if variational else None
        back = [latent, *reversed(hidden)]
        self.decoder = nn.Sequential(*[m for a, b in zip(back, back[1:]) for m in (nn.Linear(a, b), nn.ReLU())],
                                     nn.Linear(back[-1], inputs), nn.Sigmoid())

    def forward(self, x):
        h = self.encoder(x)
        z = self.mu(h)
        if self.variational:
            z = z + torch.randn_like(z) * torch.exp(0.5 * self.logvar(h))
        return self.decoder(z)


class ConvVAE(nn.Module):
    """A convolutional VAE / autoencoder: stride-2 convolutions down, transposed convolutions up."""

    def __init__(self, channels=3, size=64, widths=(32, 64, 128, 256), latent=128, variational=True):
        super().__init__()
        self.variational = variational
        layers, cin = [], channels
        for w in widths:
            layers += [nn.Conv2d(cin, w, 4, 2, 1), nn.BatchNorm2d(w), nn.LeakyReLU(0.2)]
            cin = w
        self.encoder = nn.Sequential(*layers)
        self.side = size // 2 ** len(widths)
        flat = widths[-1] * self.side ** 2
        self.mu = nn.Linear(flat, latent)
        self.logvar = nn.Linear(flat, latent) if variational else None
        self.project = nn.Linear(latent, flat)
        layers = []
        for a, b in zip(reversed(widths), list(reversed(widths))[1:]):
            layers += [nn.ConvTranspose2d(a, b, 4, 2, 1), nn.BatchNorm2d(b), nn.LeakyReLU(0.2)]
        layers += [nn.ConvTranspose2d(widths[0], channels, 4, 2, 1), nn.Sigmoid()]
        self.decoder = nn.Sequential(*layers)
        self.widths = widths

    def forward(self, x):
        h = self.encoder(x).flatten(1)
        z = self.mu(h)
        if self.variational:
            z = z + torch.randn_like(z) * torch.exp(0.5 * self.logvar(h))
        return self.decoder(self.project(z).view(-1, self.widths[-1], self.side, self.side))


class PoolingAutoencoder(nn.Module):
    """The convolutional autoencoder of Masci et al. 2011: 3x3 convolutions and 2x2 max pools down,
    nearest-neighbour upsampling and 3x3 convolutions back up, a sigmoid on the reconstruction."""

    def __init__(self, channels=1, widths=(32, 64)):
        super().__init__()
        down, cin = [], channels
        for w in widths:
            down += [nn.Conv2d(cin, w, 3, padding=1), nn.ReLU(True), nn.MaxPool2d(2)]
            cin = w
        up = []
        for w in [*reversed(widths[:-1]), channels]:
            up += [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(cin, w, 3, padding=1), nn.ReLU(True)]
            cin = w
        self.encoder, self.decoder = nn.Sequential(*down), nn.Sequential(*up[:-1], nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


def _double_conv(cin, cout, batch_norm):
    layers = []
    for a in (cin, cout):
        layers += [nn.Conv2d(a, cout, 3, padding=1, bias=not batch_norm)]
        layers += ([nn.BatchNorm2d(cout)] if batch_norm else []) + [nn.ReLU(inplace=True)]
    return nn.Sequential(*layers)


class UNet(nn.Module):
    """Ronneberger et al. 2015: a contracting path of double 3x3 convolutions and max pools, an
    expanding path of up-convolutions concatenated with the matching encoder features."""

    def __init__(self, channels=1, classes=2, base=64, depth=4, bilinear=False, batch_norm=False):
        super().__init__()
        widths = [base * 2 ** i for i in range(depth + 1)]
        self.down = nn.ModuleList([_double_conv(channels, widths[0], batch_norm)] +
                                  [_double_conv(a, b, batch_norm) for a, b in zip(widths, widths[1:])])
        self.up = nn.ModuleList(nn.Upsample(scale_factor=2, mode="bilinear") if bilinear else
                                nn.ConvTranspose2d(b, a, 2, stride=2) for a, b in zip(widths, widths[1:]))
        self.fuse = nn.ModuleList(_double_conv(a + (b if bilinear else a), a, batch_norm) for a, b in zip(widths, widths[1:]))
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        x = skips.pop()
        for up, fuse in zip(reversed(self.up), reversed(self.fuse)):
            x = fuse(torch.cat([skips.pop(), up(x)], 1))
        return self.head(x)
