"""PointNet classification without the T-Nets (Qi et al., arXiv:1612.00593), per-point MLP as Linear layers, written for nar's breadth set."""
import torch.nn as nn


class PointNetCls(nn.Module):
    def __init__(self, k=40):
        super().__init__()
        self.point_mlp = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                       nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1024), nn.ReLU())
        self.cls = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Dropout(0.3), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, k))

    def forward(self, pts):  # pts: batch x points x 3
        return self.cls(self.point_mlp(pts).max(dim=1).values)
