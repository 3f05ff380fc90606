"""A discrete-latent autoencoder for 28x28 digits: a batch-normed conv encoder, a learned codebook
held as an nn.Parameter and looked up with torch.cdist, a conv decoder. Written by hand for trying nar."""
import torch
from torch import nn


class CodebookAutoencoder(nn.Module):
    def __init__(self, codes=128, dim=32):
        super().__init__()
        self.encode = nn.Sequential(
            nn.Conv2d(1, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, dim, 1))
        self.codebook = nn.Parameter(torch.randn(codes, dim))
        self.decode = nn.Sequential(
            nn.ConvTranspose2d(dim, 64, 4, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 1, 3, padding=1), nn.Sigmoid())

    def forward(self, x):
        z = self.encode(x)
        b, d, h, w = z.shape
        vectors = z.permute(0, 2, 3, 1).reshape(-1, d)
        index = torch.cdist(vectors, self.codebook).argmin(dim=1)
        snapped = self.codebook[index].view(b, h, w, d).permute(0, 3, 1, 2)
        snapped = z + (snapped - z).detach()
        return self.decode(snapped)
