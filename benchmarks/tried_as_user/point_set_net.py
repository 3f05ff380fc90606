"""A point-set classifier in the manner of PointNet++ (farthest-point sampling, kNN grouping, shared
MLP, max), written by hand for trying `nar similar` (Apache-2.0). Points in as (B, N, 3)."""
import torch
from torch import nn


def sample_farthest(xyz, m):
    b, n, _ = xyz.shape
    picked = torch.zeros(b, m, dtype=torch.long)
    far = torch.zeros(b, n).fill_(float("inf"))
    current = torch.zeros(b, dtype=torch.long)
    batch = torch.arange(b)
    for step in range(m):
        picked[:, step] = current
        anchor = xyz[batch, current].unsqueeze(1)
        far = torch.minimum(far, ((xyz - anchor) ** 2).sum(-1))
        current = far.argmax(-1)
    return picked


def group(xyz, feats, centres_idx, k):
    b = xyz.shape[0]
    batch = torch.arange(b)[:, None]
    centres = xyz[batch, centres_idx]                       # (B, M, 3)
    d = torch.cdist(centres, xyz)                           # (B, M, N)
    knn = d.topk(k, dim=-1, largest=False).indices          # (B, M, K)
    local = xyz[batch[..., None], knn] - centres[:, :, None]  # (B, M, K, 3)
    if feats is not None:
        local = torch.cat([local, feats[batch[..., None], knn]], -1)
    return centres, local.permute(0, 3, 2, 1)               # (B, C, K, M)


class Abstraction(nn.Module):
    def __init__(self, m, k, cin, widths):
        super().__init__()
        self.m, self.k = m, k
        layers = []
        for w in widths:
            layers += [nn.Conv2d(cin, w, 1), nn.BatchNorm2d(w), nn.ReLU()]
            cin = w
        self.mlp = nn.Sequential(*layers)

    def forward(self, xyz, feats):
        centres, local = group(xyz, feats, sample_farthest(xyz, self.m), self.k)
        return centres, self.mlp(local).amax(2).transpose(1, 2)


class PointSetNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.sa1 = Abstraction(256, 16, 3, [32, 32, 64])
        self.sa2 = Abstraction(64, 16, 67, [64, 64, 128])
        self.glob = nn.Sequential(nn.Linear(131, 256), nn.ReLU(), nn.Linear(256, 512), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Dropout(0.4), nn.Linear(256, classes))

    def forward(self, xyz):  # (B, N, 3)
        c1, f1 = self.sa1(xyz, None)
        c2, f2 = self.sa2(c1, f1)
        g = self.glob(torch.cat([c2, f2], -1)).amax(1)
        return self.head(g)


if __name__ == "__main__":
    print(PointSetNet()(torch.randn(2, 1024, 3)).shape)
