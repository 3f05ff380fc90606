# GoogLeNet (Inception v1) without the auxiliary classifiers: 7x7 stem, LRN, nine inception
# modules (1x1 / 1x1->3x3 / 1x1->5x5 / maxpool->1x1 branches concatenated), dropout 0.4, FC.
# Own re-implementation from "Going Deeper with Convolutions" (Szegedy et al., 2014),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvReLU(nn.Module):
    def __init__(self, cin, cout, k, s=1, p=0):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, p)

    def forward(self, x):
        return F.relu(self.conv(x), inplace=True)


class Inception(nn.Module):
    def __init__(self, cin, c1, c3r, c3, c5r, c5, pp):
        super().__init__()
        self.b1 = ConvReLU(cin, c1, 1)
        self.b2 = nn.Sequential(ConvReLU(cin, c3r, 1), ConvReLU(c3r, c3, 3, p=1))
        self.b3 = nn.Sequential(ConvReLU(cin, c5r, 1), ConvReLU(c5r, c5, 5, p=2))
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), ConvReLU(cin, pp, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)


class GoogLeNet(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.pre = nn.Sequential(
            ConvReLU(3, 64, 7, 2, 3),
            nn.MaxPool2d(3, 2, ceil_mode=True),
            nn.LocalResponseNorm(5),
            ConvReLU(64, 64, 1),
            ConvReLU(64, 192, 3, p=1),
            nn.LocalResponseNorm(5),
            nn.MaxPool2d(3, 2, ceil_mode=True),
        )
        self.i3a = Inception(192, 64, 96, 128, 16, 32, 32)
        self.i3b = Inception(256, 128, 128, 192, 32, 96, 64)
        self.i4a = Inception(480, 192, 96, 208, 16, 48, 64)
        self.i4b = Inception(512, 160, 112, 224, 24, 64, 64)
        self.i4c = Inception(512, 128, 128, 256, 24, 64, 64)
        self.i4d = Inception(512, 112, 144, 288, 32, 64, 64)
        self.i4e = Inception(528, 256, 160, 320, 32, 128, 128)
        self.i5a = Inception(832, 256, 160, 320, 32, 128, 128)
        self.i5b = Inception(832, 384, 192, 384, 48, 128, 128)
        self.drop = nn.Dropout(0.4)
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = self.pre(x)
        x = self.i3b(self.i3a(x))
        x = F.max_pool2d(x, 3, 2, ceil_mode=True)
        x = self.i4e(self.i4d(self.i4c(self.i4b(self.i4a(x)))))
        x = F.max_pool2d(x, 3, 2, ceil_mode=True)
        x = self.i5b(self.i5a(x))
        x = F.avg_pool2d(x, 7)
        x = self.drop(x.flatten(1))
        return self.fc(x)
