"""A hypernetwork (Ha et al., arXiv:1609.09106 in spirit): one MLP makes the weights of a two-layer
target network from a task embedding, applied with batched matrix products. Written for nar's
breadth set as a design no zoo library ships; `nar` should call it new."""
import torch
import torch.nn as nn


class HyperNet(nn.Module):
    def __init__(self, task_dim=8, cin=32, hidden=64, cout=10):
        super().__init__()
        self.shapes = [(cin, hidden), (hidden, cout)]
        total = sum(a * b for a, b in self.shapes)
        self.maker = nn.Sequential(nn.Linear(task_dim, 128), nn.ReLU(), nn.Linear(128, total))
        self.task = nn.Parameter(torch.randn(1, task_dim))
        self.cin = cin

    def forward(self, x):  # x: batch x cin
        flat = self.maker(self.task).expand(x.shape[0], -1)
        w1 = flat[:, : self.shapes[0][0] * self.shapes[0][1]].view(-1, *self.shapes[0])
        w2 = flat[:, self.shapes[0][0] * self.shapes[0][1]:].view(-1, *self.shapes[1])
        h = torch.relu(torch.bmm(x.unsqueeze(1), w1))
        return torch.bmm(h, w2).squeeze(1)
