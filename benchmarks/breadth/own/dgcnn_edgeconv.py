"""A DGCNN-style point classifier (Wang et al. arXiv:1801.07829) with torch_geometric's EdgeConv,
written for nar's breadth set: two EdgeConv layers over a fixed ring of the points built inside
forward (the manifest gives one input), their features concatenated, a shared Linear, max pooling
over the points and an MLP head."""
import torch
import torch.nn as nn
from torch_geometric.nn import EdgeConv


def mlp(*widths):
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.LeakyReLU(0.2)]
    return nn.Sequential(*layers)


class DGCNN(nn.Module):
    def __init__(self, classes=40):
        super().__init__()
        self.conv1 = EdgeConv(mlp(2 * 3, 64, 64), aggr="max")
        self.conv2 = EdgeConv(mlp(2 * 64, 64), aggr="max")
        self.lin = mlp(128, 1024)
        self.head = nn.Sequential(mlp(1024, 512, 256), nn.Dropout(0.5), nn.Linear(256, classes))

    def forward(self, pos):  # (points, 3)
        n = pos.size(0)
        src = torch.arange(n, device=pos.device)
        edge_index = torch.stack([torch.cat([src, (src + 1) % n]), torch.cat([(src + 1) % n, src])])
        x1 = self.conv1(pos, edge_index)
        x2 = self.conv2(x1, edge_index)
        x = self.lin(torch.cat([x1, x2], dim=1))
        return self.head(x.max(dim=0, keepdim=True).values)
