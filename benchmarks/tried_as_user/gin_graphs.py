import torch
from torch import nn
from torch_geometric.nn import GINConv, global_add_pool


class GIN(nn.Module):
    """GIN for graph classification (Xu et al. 2019), as PyG tutorials write it."""

    def __init__(self, features=7, hidden=64, classes=2, layers=3):
        super().__init__()
        self.convs = nn.ModuleList()
        for i in range(layers):
            mlp = nn.Sequential(nn.Linear(features if i == 0 else hidden, hidden), nn.BatchNorm1d(hidden),
                                nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.convs.append(GINConv(mlp, train_eps=True))
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x, edge_index, batch):
        for conv in self.convs:
            x = conv(x, edge_index)
        return self.head(global_add_pool(x, batch))
