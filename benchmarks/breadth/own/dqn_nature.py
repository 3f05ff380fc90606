"""The Nature DQN (Mnih et al. 2015), written for nar's breadth set."""
import torch.nn as nn


class QNetwork(nn.Module):
    def __init__(self, n_actions=18):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
                                 nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, n_actions))

    def forward(self, x):
        return self.net(x / 255.0)
