"""PSPNet (Zhao et al. arXiv:1612.01105) in the encoder-decoder layout segmentation libraries use,
written for nar's breadth set: a ResNet-34 encoder read at stride 8 (its second stage's output; the
two later stages are not built), a pyramid pooling module (average pooling to 1, 2, 3 and 6 cells, each a 1x1 convolution, upsampled
and concatenated with the features), a 1x1 fusion convolution, dropout, a classifier and 8x bilinear
upsampling."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) \
            if stride != 1 or cin != cout else None

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + identity)


class PyramidPooling(nn.Module):
    def __init__(self, cin, bins=(1, 2, 3, 6)):
        super().__init__()
        cout = cin // len(bins)
        self.levels = nn.ModuleList([nn.Sequential(nn.AdaptiveAvgPool2d(b), nn.Conv2d(cin, cout, 1, bias=False),
                                                   nn.BatchNorm2d(cout), nn.ReLU(inplace=True)) for b in bins])

    def forward(self, x):
        h, w = x.shape[-2:]
        return torch.cat([x] + [F.interpolate(level(x), (h, w), mode="bilinear", align_corners=True)
                                for level in self.levels], dim=1)


class PSPNet(nn.Module):
    def __init__(self, classes=1):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, blocks, stride in ((64, 3, 1), (128, 4, 2)):
            for i in range(blocks):
                layers.append(BasicBlock(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.encoder = nn.Sequential(*layers)
        self.ppm = PyramidPooling(128)
        self.fuse = nn.Sequential(nn.Conv2d(256, 512, 1, bias=False), nn.BatchNorm2d(512), nn.ReLU(inplace=True),
                                  nn.Dropout2d(0.2))
        self.classifier = nn.Conv2d(512, classes, 3, padding=1)

    def forward(self, x):
        y = self.fuse(self.ppm(self.encoder(self.stem(x))))
        return F.interpolate(self.classifier(y), scale_factor=8, mode="bilinear", align_corners=True)
