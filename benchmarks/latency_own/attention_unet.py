"""A U-Net with attention gates on the skip connections, 3 levels, for 128x128 RGB segmentation."""
import torch
from torch import nn


def double(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Gate(nn.Module):
    def __init__(self, skip, gating, inner):
        super().__init__()
        self.theta = nn.Conv2d(skip, inner, 1)
        self.phi = nn.Conv2d(gating, inner, 1)
        self.psi = nn.Conv2d(inner, 1, 1)

    def forward(self, skip, gating):
        a = torch.relu(self.theta(skip) + self.phi(gating))
        return skip * torch.sigmoid(self.psi(a))


class AttentionUNet(nn.Module):
    def __init__(self, classes=3, base=24):
        super().__init__()
        widths = [base, base * 2, base * 4, base * 8]
        self.downs = nn.ModuleList([double(3, widths[0])] + [double(widths[i], widths[i + 1]) for i in range(3)])
        self.ups = nn.ModuleList([nn.ConvTranspose2d(widths[i + 1], widths[i], 2, 2) for i in reversed(range(3))])
        self.gates = nn.ModuleList([Gate(widths[i], widths[i], widths[i] // 2) for i in reversed(range(3))])
        self.decs = nn.ModuleList([double(widths[i] * 2, widths[i]) for i in reversed(range(3))])
        self.out = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, down in enumerate(self.downs):
            x = down(x if i == 0 else nn.functional.max_pool2d(x, 2))
            skips.append(x)
        for up, gate, dec, skip in zip(self.ups, self.gates, self.decs, reversed(skips[:-1])):
            x = up(x)
            x = dec(torch.cat([gate(skip, x), x], 1))
        return self.out(x)
