"""V-Net (Milletari et al. arXiv:1606.04797), written for nar's breadth set: a 3-D encoder-decoder of
residual stages of 5x5x5 convolutions with PReLU, downsampling by 2x2x2 strided convolutions and
upsampling by transposed ones, the encoder's features concatenated into the decoder."""
import torch
import torch.nn as nn


class Stage(nn.Module):
    def __init__(self, cin, channels, convs):
        super().__init__()
        layers = []
        for i in range(convs):
            layers += [nn.Conv3d(cin if i == 0 else channels, channels, 5, padding=2), nn.PReLU(channels)]
        self.body = nn.Sequential(*layers)
        self.skip = nn.Conv3d(cin, channels, 1) if cin != channels else nn.Identity()

    def forward(self, x):
        return self.body(x) + self.skip(x)


class VNet(nn.Module):
    def __init__(self, in_channels=1, classes=2):
        super().__init__()
        self.enc = nn.ModuleList([Stage(in_channels, 16, 1), Stage(32, 32, 2), Stage(64, 64, 3), Stage(128, 128, 3)])
        self.down = nn.ModuleList([nn.Sequential(nn.Conv3d(c, 2 * c, 2, stride=2), nn.PReLU(2 * c))
                                   for c in (16, 32, 64, 128)])
        self.bottom = Stage(256, 256, 3)
        self.up = nn.ModuleList([nn.Sequential(nn.ConvTranspose3d(cin, cout, 2, stride=2), nn.PReLU(cout))
                                 for cin, cout in ((256, 128), (256, 64), (128, 32), (64, 16))])
        self.dec = nn.ModuleList([Stage(256, 256, 3), Stage(128, 128, 3), Stage(64, 64, 2), Stage(32, 32, 1)])
        self.head = nn.Conv3d(32, classes, 1)

    def forward(self, x):
        skips = []
        for stage, down in zip(self.enc, self.down):
            x = stage(x)
            skips.append(x)
            x = down(x)
        x = self.bottom(x)
        for up, stage in zip(self.up, self.dec):
            x = stage(torch.cat([up(x), skips.pop()], dim=1))
        return torch.softmax(self.head(x), dim=1)
