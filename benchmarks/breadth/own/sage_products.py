"""GraphSAGE with mean aggregation, three layers (Hamilton et al., arXiv:1706.02216), written for nar's breadth set."""
import torch
import torch.nn.functional as F
from torch_geometric.nn import SAGEConv


class SAGE(torch.nn.Module):
    def __init__(self, cin=100, hidden=256, cout=47):
        super().__init__()
        self.convs = torch.nn.ModuleList([SAGEConv(cin, hidden), SAGEConv(hidden, hidden), SAGEConv(hidden, cout)])

    def forward(self, x):
        n = x.size(0)
        src = torch.arange(n, device=x.device)
        edge_index = torch.stack([src, (src * 7 + 3) % n])
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = F.relu(x)
        return x
