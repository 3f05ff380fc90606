"""Attention U-Net (Oktay et al. arXiv:1804.03999), written for nar's breadth set: a 2-D U-Net whose
skip connections pass through additive attention gates (1x1 convolutions of the skip and of the
coarser gating signal, ReLU, 1x1 convolution to one channel, sigmoid, multiplied into the skip)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class AttentionGate(nn.Module):
    def __init__(self, skip, gate, inner):
        super().__init__()
        self.theta = nn.Conv2d(skip, inner, 1, bias=False)
        self.phi = nn.Conv2d(gate, inner, 1)
        self.psi = nn.Conv2d(inner, 1, 1)

    def forward(self, x, g):
        g = F.interpolate(self.phi(g), size=x.shape[2:], mode="bilinear", align_corners=False)
        alpha = torch.sigmoid(self.psi(F.relu(self.theta(x) + g)))
        return x * alpha


class AttentionUNet(nn.Module):
    def __init__(self, in_channels=1, classes=2, widths=(32, 64, 128, 256, 512)):
        super().__init__()
        self.downs = nn.ModuleList()
        c = in_channels
        for w in widths:
            self.downs.append(double_conv(c, w))
            c = w
        self.gates, self.ups, self.convs = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        for skip in reversed(widths[:-1]):
            self.gates.append(AttentionGate(skip, c, skip // 2))
            self.ups.append(nn.ConvTranspose2d(c, skip, 2, stride=2))
            self.convs.append(double_conv(2 * skip, skip))
            c = skip
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        skips = []
        for i, down in enumerate(self.downs):
            x = down(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        skips.pop()
        for gate, up, conv in zip(self.gates, self.ups, self.convs):
            skip = skips.pop()
            attended = gate(skip, x)
            x = conv(torch.cat([attended, up(x)], dim=1))
        return self.head(x)
