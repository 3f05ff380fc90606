"""U-Net (Ronneberger et al., arXiv:1505.04597), written for nar's breadth set: padded convolutions."""
import torch
import torch.nn as nn


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, in_ch=3, n_classes=2):
        super().__init__()
        self.enc1, self.enc2, self.enc3, self.enc4 = block(in_ch, 64), block(64, 128), block(128, 256), block(256, 512)
        self.bottom = block(512, 1024)
        self.pool = nn.MaxPool2d(2)
        self.up4, self.dec4 = nn.ConvTranspose2d(1024, 512, 2, 2), block(1024, 512)
        self.up3, self.dec3 = nn.ConvTranspose2d(512, 256, 2, 2), block(512, 256)
        self.up2, self.dec2 = nn.ConvTranspose2d(256, 128, 2, 2), block(256, 128)
        self.up1, self.dec1 = nn.ConvTranspose2d(128, 64, 2, 2), block(128, 64)
        self.out = nn.Conv2d(64, n_classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        e4 = self.enc4(self.pool(e3))
        b = self.bottom(self.pool(e4))
        d4 = self.dec4(torch.cat([self.up4(b), e4], dim=1))
        d3 = self.dec3(torch.cat([self.up3(d4), e3], dim=1))
        d2 = self.dec2(torch.cat([self.up2(d3), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.out(d1)
