"""Image-to-image and medical designs as their papers lay them out: pix2pix's PatchGAN
discriminator, V-Net and the Attention U-Net. MONAI ships its own spellings of the last three
families (a multi-output PatchGAN, an ELU V-Net); these are the papers', which is what people
re-implement."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class PatchGAN(nn.Module):
    """Isola et al. 2017 (pix2pix), appendix 6.1.2: C64-C128-C256-C512 of 4x4 convolutions, the
    first without a norm, stride 2 except the last, leaky ReLU 0.2, then a 4x4 convolution to one
    logit per patch. `layers` strided blocks give the 16x16 (1), 70x70 (3) and 286x286 (5)
    discriminators; pix2pix sees the input and the output image (6 channels) with batch norm,
    CycleGAN (Zhu et al. 2017) one image with instance norm; `layers=0` is the 1x1 PixelGAN."""

    def __init__(self, channels=6, ndf=64, layers=3, norm="batch"):
        super().__init__()
        affine = norm == "batch"  # a norm with its own shift makes the convolution's bias redundant
        make_norm = nn.BatchNorm2d if norm == "batch" else nn.InstanceNorm2d
        if layers == 0:
            self.net = nn.Sequential(nn.Conv2d(channels, ndf, 1), nn.LeakyReLU(0.2, True),
                                     nn.Conv2d(ndf, ndf * 2, 1, bias=not affine), make_norm(ndf * 2),
                                     nn.LeakyReLU(0.2, True), nn.Conv2d(ndf * 2, 1, 1, bias=not affine))
            return
        blocks, width = [nn.Conv2d(channels, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True)], ndf
        for i in range(1, layers + 1):
            out = ndf * 2 ** min(i, 3)
            blocks += [nn.Conv2d(width, out, 4, 2 if i < layers else 1, 1, bias=not affine), make_norm(out),
                       nn.LeakyReLU(0.2, True)]
            width = out
        blocks.append(nn.Conv2d(width, 1, 4, 1, 1))
        self.net = nn.Sequential(*blocks)

    def forward(self, x):
        return self.net(x)


class _VStage(nn.Module):
    """`convs` 5x5x5 convolutions, each followed by the activation but the last, whose output is
    added to the stage's input before it (the residual function of Milletari et al.)."""

    def __init__(self, width, convs, act, norm):
        super().__init__()
        layers = []
        for i in range(convs):
            layers += [nn.Conv3d(width, width, 5, padding=2)] + ([nn.BatchNorm3d(width)] if norm else [])
            if i < convs - 1:
                layers.append(act(width))
        self.convs = nn.Sequential(*layers)
        self.act = act(width)

    def forward(self, x):
        return self.act(self.convs(x) + x)


def _activation(name):
    return (lambda width: nn.PReLU(width)) if name == "prelu" else (lambda width: nn.ELU(inplace=True))


class VNet(nn.Module):
    """Milletari et al. 2016: a volumetric encoder-decoder whose stages (1, 2, 3, 3 convolutions
    down, 3 at the bottom, 3, 3, 2, 1 up) learn residuals; 2x2x2 stride-2 convolutions halve the
    volume and double the channels, transposed ones undo it; skips are concatenated; PReLU; a 1x1x1
    convolution to two channels and a voxel-wise softmax. `norm` and `act="elu"` are the batch-norm
    ELU variant most re-implementations train."""

    def __init__(self, channels=1, classes=2, base=16, act="prelu", norm=False):
        super().__init__()
        make_act = _activation(act)
        widths = [base * 2 ** i for i in range(5)]
        self.stem = nn.Sequential(nn.Conv3d(channels, base, 5, padding=2), *([nn.BatchNorm3d(base)] if norm else []))
        self.stem_act = make_act(base)
        self.down = nn.ModuleList(nn.Sequential(nn.Conv3d(a, b, 2, 2), make_act(b)) for a, b in zip(widths, widths[1:]))
        self.down_stages = nn.ModuleList(_VStage(b, n, make_act, norm) for b, n in zip(widths[1:], (2, 3, 3, 3)))
        # up: the transposed convolution brings half the stage's width; the skip brings the other half
        ups = list(zip((widths[4], widths[4], widths[3], widths[2]), (widths[4], widths[3], widths[2], widths[1])))
        self.up = nn.ModuleList(nn.Sequential(nn.ConvTranspose3d(a, b // 2, 2, 2), make_act(b // 2)) for a, b in ups)
        self.up_stages = nn.ModuleList(_VStage(b, n, make_act, norm) for (_, b), n in zip(ups, (3, 3, 2, 1)))
        self.head = nn.Conv3d(widths[1], classes, 1)

    def forward(self, x):
        x = self.stem_act(self.stem(x) + x)  # the input repeated across the first stage's channels
        skips = [x]
        for down, stage in zip(self.down, self.down_stages):
            x = stage(down(x))
            skips.append(x)
        skips.pop()
        for up, stage in zip(self.up, self.up_stages):
            x = up(x)
            x = stage(torch.cat([x, skips.pop()], 1))
        return F.softmax(self.head(x), dim=1)


# per dimensionality: convolution, batch norm, max pool, interpolation mode
_LAYERS = {2: (nn.Conv2d, nn.BatchNorm2d, F.max_pool2d, "bilinear"),
           3: (nn.Conv3d, nn.BatchNorm3d, F.max_pool3d, "trilinear")}


class AttentionGate(nn.Module):
    """Oktay et al. 2018: the skip features `x` and the coarser gating signal `g` projected to
    `inter` channels and added, ReLU, a 1x1 projection to one coefficient per position, sigmoid;
    `x` scaled by it. The paper's gate is grid-based: `x` is strided down to `g`'s resolution and
    the coefficients resampled up."""

    def __init__(self, skip, gate, inter, dims=2):
        super().__init__()
        conv, norm, _, self.mode = _LAYERS[dims]
        self.theta = conv(skip, inter, 2, 2, bias=False)
        self.phi = conv(gate, inter, 1)
        self.psi = conv(inter, 1, 1)
        self.out = nn.Sequential(conv(skip, skip, 1), norm(skip))

    def forward(self, x, g):
        a = torch.sigmoid(self.psi(F.relu(self.theta(x) + self.phi(g))))
        return self.out(x * F.interpolate(a, size=x.shape[2:], mode=self.mode))


def _conv_block(cin, cout, dims):
    conv, norm, _, _ = _LAYERS[dims]
    return nn.Sequential(conv(cin, cout, 3, padding=1), norm(cout), nn.ReLU(True),
                         conv(cout, cout, 3, padding=1), norm(cout), nn.ReLU(True))


class AttentionUNet(nn.Module):
    """Oktay et al. 2018: a U-Net whose skip connections pass through attention gates gated by the
    next coarser decoder level; 2-D or 3-D (the paper's abdominal CT)."""

    def __init__(self, channels=1, classes=2, base=16, depth=4, dims=3):
        super().__init__()
        widths = [base * 2 ** i for i in range(depth + 1)]
        self.dims = dims
        self.encoder = nn.ModuleList(_conv_block(a, b, dims) for a, b in zip([channels, *widths], widths))
        self.gates = nn.ModuleList(AttentionGate(a, b, a, dims) for a, b in zip(widths, widths[1:]))
        self.fuse = nn.ModuleList(_conv_block(a + b, a, dims) for a, b in zip(widths, widths[1:]))
        self.head = _LAYERS[dims][0](widths[0], classes, 1)

    def forward(self, x):
        _, _, pool, mode = _LAYERS[self.dims]
        skips = []
        for i, block in enumerate(self.encoder):
            x = block(x if i == 0 else pool(x, 2))
            skips.append(x)
        g = skips.pop()
        for gate, fuse in zip(reversed(self.gates), reversed(self.fuse)):
            skip = skips.pop()
            attended = gate(skip, g)
            g = fuse(torch.cat([attended, F.interpolate(g, size=skip.shape[2:], mode=mode)], 1))
        return self.head(g)
