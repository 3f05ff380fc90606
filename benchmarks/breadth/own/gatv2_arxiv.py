"""GATv2 (Brody et al. arXiv:2105.14491) for node classification, written for nar's breadth set with
torch_geometric's GATv2Conv: three layers (8 heads concatenated, then 8, then one averaged head for
the classes), ELU and dropout between, a linear skip around each hidden layer. The graph (a ring
with chords every 7 nodes) is built inside so that the model takes only the features."""
import torch
import torch.nn.functional as F
from torch_geometric.nn import GATv2Conv


class GATv2(torch.nn.Module):
    def __init__(self, features=128, hidden=32, heads=8, classes=40):
        super().__init__()
        self.conv1 = GATv2Conv(features, hidden, heads=heads, dropout=0.2)
        self.skip1 = torch.nn.Linear(features, hidden * heads)
        self.conv2 = GATv2Conv(hidden * heads, hidden, heads=heads, dropout=0.2)
        self.conv3 = GATv2Conv(hidden * heads, classes, heads=1, concat=False, dropout=0.2)

    def forward(self, x):
        n = x.size(0)
        src = torch.arange(n, device=x.device)
        dst = torch.cat([(src + 1) % n, (src + 7) % n])
        src = torch.cat([src, src])
        edge_index = torch.stack([torch.cat([src, dst]), torch.cat([dst, src])])
        h = F.elu(self.conv1(x, edge_index) + self.skip1(x))
        h = F.dropout(h, p=0.5, training=self.training)
        h = F.elu(self.conv2(h, edge_index) + h)
        h = F.dropout(h, p=0.5, training=self.training)
        return self.conv3(h, edge_index).log_softmax(dim=-1)
