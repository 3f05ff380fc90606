import torch
from torch import nn


class SiameseNet(nn.Module):
    """Koch et al. (2015) one-shot Siamese network: a shared conv tower, L1 distance, sigmoid."""

    def __init__(self):
        super().__init__()
        self.tower = nn.Sequential(
            nn.Conv2d(1, 64, 10), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 7), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, 128, 4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, 256, 4), nn.ReLU(), nn.Flatten(),
            nn.Linear(256 * 6 * 6, 4096), nn.Sigmoid())
        self.out = nn.Linear(4096, 1)

    def forward(self, x1, x2):
        return torch.sigmoid(self.out(torch.abs(self.tower(x1) - self.tower(x2))))
