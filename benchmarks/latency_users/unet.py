"""A small U-Net for 1-channel 256x256 segmentation, written from the paper's figure."""
import torch
from torch import nn


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, channels=1, classes=2, width=32):
        super().__init__()
        widths = [width * 2 ** i for i in range(5)]
        self.downs = nn.ModuleList()
        cin = channels
        for w in widths:
            self.downs.append(double_conv(cin, w))
            cin = w
        self.ups = nn.ModuleList()
        self.merges = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.ups.append(nn.ConvTranspose2d(w * 2, w, 2, stride=2))
            self.merges.append(double_conv(w * 2, w))
        self.head = nn.Conv2d(widths[0], classes, 1)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        skips = []
        for i, down in enumerate(self.downs):
            x = down(x)
            if i < len(self.downs) - 1:
                skips.append(x)
                x = self.pool(x)
        for up, merge in zip(self.ups, self.merges):
            x = up(x)
            x = merge(torch.cat([skips.pop(), x], 1))
        return self.head(x)

