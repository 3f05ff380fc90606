"""UNet++ (Zhou et al. arXiv:1807.10165), written for nar's breadth set: a five-level backbone of
double 3x3 convolution blocks (VGG style, batch norm) and nested dense skip pathways: node X(i, j)
takes every earlier node of its level X(i, 0..j-1) and the upsampled X(i+1, j-1), concatenated;
the output is a 1x1 convolution over X(0, 4) (no deep supervision)."""
import torch
import torch.nn as nn


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                                 nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.net(x)


class NestedUNet(nn.Module):
    def __init__(self, in_channels=3, classes=1, widths=(32, 64, 128, 256, 512)):
        super().__init__()
        self.levels = len(widths)
        self.pool = nn.MaxPool2d(2)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.nodes = nn.ModuleDict()
        for i in range(self.levels):
            for j in range(self.levels - i):
                if j == 0:
                    cin = in_channels if i == 0 else widths[i - 1]
                else:
                    cin = widths[i] * j + widths[i + 1]
                self.nodes[f"{i}_{j}"] = DoubleConv(cin, widths[i])
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        grid = {}
        for i in range(self.levels):
            grid[(i, 0)] = self.nodes[f"{i}_0"](x if i == 0 else self.pool(grid[(i - 1, 0)]))
        for j in range(1, self.levels):
            for i in range(self.levels - j):
                inputs = [grid[(i, k)] for k in range(j)] + [self.up(grid[(i + 1, j - 1)])]
                grid[(i, j)] = self.nodes[f"{i}_{j}"](torch.cat(inputs, dim=1))
        return self.head(grid[(0, self.levels - 1)])
