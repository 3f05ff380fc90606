"""CIFAR classifiers as their papers wrote them for 32x32 images: a 3x3 stride-1 stem, no max-pool,
and their own stage layouts (not an ImageNet network with its stem swapped). These are the designs
CIFAR code re-implements most: He et al.'s ResNet-20..110, pre-activation ResNets, Wide ResNets,
ResNeXt-29, DenseNet-BC, VGG with batch norm and a MobileNetV2 with its early strides removed."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _conv_bn(cin, cout, kernel=3, stride=1, groups=1):
    return [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]


class _PaddedShortcut(nn.Module):
    """He et al. 2016's option A: a strided identity, the new channels zero-padded (no weights)."""

    def __init__(self, extra):
        super().__init__()
        self.extra = extra

    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.extra // 2, self.extra - self.extra // 2))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions and an identity; post-activation (He et al. 2016a) or with batch norm
    and ReLU before each convolution (pre-activation, He et al. 2016b, and Wide ResNets)."""

    def __init__(self, cin, cout, stride, pre=False, shortcut="conv", dropout=0.0):
        super().__init__()
        self.pre = pre
        if pre:
            self.bn1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn2, self.conv2 = nn.BatchNorm2d(cout), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.drop = nn.Dropout(dropout) if dropout else nn.Identity()
        else:
            self.body = nn.Sequential(*_conv_bn(cin, cout, 3, stride), nn.ReLU(inplace=True), *_conv_bn(cout, cout))
        if stride == 1 and cin == cout:
            self.shortcut = nn.Identity()
        elif shortcut == "pad":
            self.shortcut = _PaddedShortcut(cout - cin)
        else:
            self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) if pre else nn.Sequential(*_conv_bn(cin, cout, 1, stride))

    def forward(self, x):
        if not self.pre:
            return F.relu(self.body(x) + self.shortcut(x))
        out = F.relu(self.bn1(x))
        # the projection reads the activated input, as the pre-activation paper's code does
        skip = x if isinstance(self.shortcut, nn.Identity) else self.shortcut(out)
        out = self.conv2(self.drop(F.relu(self.bn2(self.conv1(out)))))
        return out + skip


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped: ResNeXt's cardinality), 1x1 expand, post-activation."""

    def __init__(self, cin, mid, cout, stride, groups=1):
        super().__init__()
        self.body = nn.Sequential(*_conv_bn(cin, mid, 1), nn.ReLU(inplace=True), *_conv_bn(mid, mid, 3, stride, groups),
                                  nn.ReLU(inplace=True), *_conv_bn(mid, cout, 1))
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(*_conv_bn(cin, cout, 1, stride))

    def forward(self, x):
        return F.relu(self.body(x) + self.shortcut(x))


def _stages(cin, stages, make):
    """The blocks of `stages` ((blocks, out channels) each), the first of every stage after the
    first at stride 2: make(in channels, out channels, stride, stage). Returns (blocks, channels)."""
    blocks = []
    for stage, (count, cout) in enumerate(stages):
        for i in range(count):
            blocks.append(make(cin, cout, 2 if stage and not i else 1, stage))
            cin = cout
    return blocks, cin


class _Classifier(nn.Module):
    """A stem, stages, global average pool and one linear layer: the shape every design here shares."""

    def __init__(self, stem, stages, width, classes, final=None):
        super().__init__()
        self.stem, self.stages = nn.Sequential(*stem), nn.Sequential(*stages)
        self.final = nn.Sequential(*(final or []))
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = self.final(self.stages(self.stem(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def cifar_resnet(depth=20, classes=10, shortcut="pad"):
    """He et al. 2016a, section 4.2: 6n+2 layers in three stages of 16, 32 and 64 channels."""
    n = (depth - 2) // 6
    blocks, width = _stages(16, [(n, 16), (n, 32), (n, 64)],
                            lambda cin, cout, stride, _: BasicBlock(cin, cout, stride, shortcut=shortcut))
    return _Classifier([*_conv_bn(3, 16), nn.ReLU(inplace=True)], blocks, width, classes)


def preact_resnet(blocks=(2, 2, 2, 2), classes=10):
    """He et al. 2016b's pre-activation ordering over the four ResNet-18/34 stages, at 32x32."""
    blocks, width = _stages(64, list(zip(blocks, (64, 128, 256, 512))),
                            lambda cin, cout, stride, _: BasicBlock(cin, cout, stride, pre=True))
    return _Classifier([nn.Conv2d(3, 64, 3, 1, 1, bias=False)], blocks, width, classes,
                       [nn.BatchNorm2d(width), nn.ReLU(inplace=True)])


def wide_resnet(depth=28, widen=10, classes=10, dropout=0.0):
    """Zagoruyko & Komodakis 2016: WRN-depth-k, (depth-4)/6 pre-activation blocks per stage of
    16k, 32k and 64k channels after a 16-channel stem."""
    n = (depth - 4) // 6
    blocks, width = _stages(16, [(n, 16 * widen), (n, 32 * widen), (n, 64 * widen)],
                            lambda cin, cout, stride, _: BasicBlock(cin, cout, stride, pre=True, dropout=dropout))
    return _Classifier([nn.Conv2d(3, 16, 3, 1, 1, bias=False)], blocks, width, classes,
                       [nn.BatchNorm2d(width), nn.ReLU(inplace=True)])


def resnext29(cardinality=8, width=64, classes=10):
    """Xie et al. 2017's CIFAR ResNeXt-29 (C x d): three stages of three grouped bottlenecks whose
    outputs are 256, 512 and 1024 channels, after a 64-channel 3x3 stem."""
    mid = cardinality * width
    blocks, channels = _stages(64, [(3, 256), (3, 512), (3, 1024)],
                               lambda cin, cout, stride, stage: Bottleneck(cin, mid * 2 ** stage, cout, stride, cardinality))
    return _Classifier([*_conv_bn(3, 64), nn.ReLU(inplace=True)], blocks, channels, classes)


class _DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, 4 * growth, 1, bias=False),
                                  nn.BatchNorm2d(4 * growth), nn.ReLU(inplace=True),
                                  nn.Conv2d(4 * growth, growth, 3, 1, 1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


def densenet_bc(depth=100, growth=12, classes=10, reduction=0.5):
    """Huang et al. 2017's DenseNet-BC for CIFAR: three dense blocks of (depth-4)/6 bottleneck
    layers, transitions that halve the channels and average-pool, a 2k-channel 3x3 stem."""
    n, layers, cin = (depth - 4) // 6, [], 2 * growth
    for block in range(3):
        for _ in range(n):
            layers.append(_DenseLayer(cin, growth))
            cin += growth
        if block < 2:
            out = int(cin * reduction)
            layers += [nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, out, 1, bias=False), nn.AvgPool2d(2)]
            cin = out
    return _Classifier([nn.Conv2d(3, 2 * growth, 3, 1, 1, bias=False)], layers, cin, classes,
                       [nn.BatchNorm2d(cin), nn.ReLU(inplace=True)])


VGG_LAYERS = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}


def vgg_bn(depth=16, classes=10):
    """Simonyan & Zisserman's configurations with batch norm; at 32x32 the five pools leave 1x1x512,
    read by one linear layer, as CIFAR code writes it."""
    layers, cin = [], 3
    for count, width in zip(VGG_LAYERS[depth], (64, 128, 256, 512, 512)):
        for _ in range(count):
            layers += [*_conv_bn(cin, width), nn.ReLU(inplace=True)]
            cin = width
        layers.append(nn.MaxPool2d(2))
    return _Classifier([], layers, 512, classes)


class _InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        mid = cin * expand
        self.body = nn.Sequential(*_conv_bn(cin, mid, 1), nn.ReLU6(inplace=True), *_conv_bn(mid, mid, 3, stride, mid),
                                  nn.ReLU6(inplace=True), *_conv_bn(mid, cout, 1))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


# (expansion, channels, blocks, stride): Sandler et al. 2018 with the stem's and the second stage's
# stride 1, as CIFAR code keeps the 32x32 input
MOBILENETV2_CIFAR = ((1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenetv2_cifar(classes=10):
    blocks, cin = [], 32
    for expand, channels, count, stride in MOBILENETV2_CIFAR:
        for i in range(count):
            blocks.append(_InvertedResidual(cin, channels, 1 if i else stride, expand))
            cin = channels
    return _Classifier([*_conv_bn(3, 32), nn.ReLU6(inplace=True)], blocks, 1280, classes,
                       [*_conv_bn(cin, 1280, 1), nn.ReLU6(inplace=True)])


def catalogue(vector: str) -> dict[str, tuple]:
    """name -> (family, task, builder, kwargs, inputs), as the classics catalogue lists them."""
    image = [((1, 3, 32, 32), vector)]
    task = "image-classification"
    out: dict[str, tuple] = {}
    for depth in (20, 32, 44, 56, 110):
        out[f"resnet{depth}_cifar"] = ("resnet", task, cifar_resnet, {"depth": depth}, image)
    out["resnet56_cifar_projection"] = ("resnet", task, cifar_resnet, {"depth": 56, "shortcut": "conv", "classes": 100}, image)
    for name, blocks in {"preact_resnet18_cifar": (2, 2, 2, 2), "preact_resnet34_cifar": (3, 4, 6, 3)}.items():
        out[name] = ("resnetv2", task, preact_resnet, {"blocks": blocks}, image)
    for depth, widen in ((16, 4), (16, 8), (28, 10), (40, 4)):
        # family as the zoo names wide_resnet50_2: a ResNet, widened
        out[f"wrn_{depth}_{widen}_cifar"] = ("resnet", task, wide_resnet, {"depth": depth, "widen": widen}, image)
    for cardinality, width in ((8, 64), (16, 64), (32, 4)):
        out[f"resnext29_{cardinality}x{width}d_cifar"] = ("resnext", task, resnext29,
                                                           {"cardinality": cardinality, "width": width}, image)
    for depth, growth in ((100, 12), (250, 24), (190, 40)):
        out[f"densenet_bc_{depth}_k{growth}_cifar"] = ("densenet", task, densenet_bc, {"depth": depth, "growth": growth}, image)
    for depth in (11, 16, 19):
        out[f"vgg{depth}_bn_cifar"] = ("vgg", task, vgg_bn, {"depth": depth}, image)
    out["mobilenetv2_cifar"] = ("mobilenetv2", task, mobilenetv2_cifar, {}, image)
    return out
