"""A U-Net over a ResNet-34 encoder, as segmentation_models_pytorch builds one, written without smp
(torchvision-free ResNet-34 blocks), for trying `nar similar` (Apache-2.0)."""
import torch
from torch import nn
import torch.nn.functional as F


def conv_bn_relu(cin, cout, k=3, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn_relu(cin, cout, 3, stride)
        self.b = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.down = None if stride == 1 and cin == cout else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        return F.relu(self.b(self.a(x)) + (x if self.down is None else self.down(x)))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn_relu(3, 64, 7, 2)
        self.pool = nn.MaxPool2d(3, 2, 1)
        stages, cin = [], 64
        for cout, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stages.append(nn.Sequential(*[Basic(cin if i == 0 else cout, cout, stride if i == 0 else 1) for i in range(blocks)]))
            cin = cout
        self.stages = nn.ModuleList(stages)

    def forward(self, x):
        features = [x]
        x = self.stem(x)
        features.append(x)
        x = self.pool(x)
        for stage in self.stages:
            x = stage(x)
            features.append(x)
        return features


class UpBlock(nn.Module):
    def __init__(self, cin, skip, cout):
        super().__init__()
        self.conv1, self.conv2 = conv_bn_relu(cin + skip, cout), conv_bn_relu(cout, cout)

    def forward(self, x, skip=None):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        if skip is not None:
            x = torch.cat([x, skip], dim=1)
        return self.conv2(self.conv1(x))


class UNetResNet34(nn.Module):
    def __init__(self, classes=21):
        super().__init__()
        self.encoder = Encoder()
        channels = (256, 128, 64, 32, 16)
        skips = (256, 128, 64, 64, 0)
        cins = (512, *channels[:-1])
        self.blocks = nn.ModuleList(UpBlock(c, s, o) for c, s, o in zip(cins, skips, channels))
        self.head = nn.Conv2d(16, classes, 3, padding=1)

    def forward(self, x):
        features = self.encoder(x)[1:][::-1]
        x, skips = features[0], features[1:]
        for i, block in enumerate(self.blocks):
            x = block(x, skips[i] if i < len(skips) else None)
        return self.head(x)
