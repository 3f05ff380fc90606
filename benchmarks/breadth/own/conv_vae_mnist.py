"""A convolutional VAE for 28x28 digits (Kingma & Welling, arXiv:1312.6114), written for nar's breadth set."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvVAE(nn.Module):
    def __init__(self, z_dim=16):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.fc_mu = nn.Linear(64 * 7 * 7, z_dim)
        self.fc_logvar = nn.Linear(64 * 7 * 7, z_dim)
        self.fc_up = nn.Linear(z_dim, 64 * 7 * 7)
        self.d1 = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)
        self.d2 = nn.ConvTranspose2d(32, 1, 4, stride=2, padding=1)

    def forward(self, x):
        h = F.relu(self.c2(F.relu(self.c1(x)))).flatten(1)
        mu, logvar = self.fc_mu(h), self.fc_logvar(h)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        h = F.relu(self.fc_up(z)).view(-1, 64, 7, 7)
        return torch.sigmoid(self.d2(F.relu(self.d1(h))))
