"""The predictor network (NAR-Former, METHODS.md §4): node tokens = operation embedding + sinusoidal
codes of the node's position and of its predecessors' positions + projected numeric attributes; a
transformer encoder; multi-stage fusion (learnable queries of 4, 2, 1 tokens attending to the
encoder output); an MLP head with one output per target."""

from __future__ import annotations

import math

import torch
from torch import nn

from narcli.predict.tokens import GraphTokens


def sinusoid(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """(..., ) integer positions -> (..., dim) sin/cos codes."""
    half = dim // 2
    freq = torch.exp(-math.log(10_000.0) * torch.arange(half, device=positions.device) / half)
    angle = positions.float().unsqueeze(-1) * freq
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


class Batch:
    """Padded tensors of a list of GraphTokens, with node ranks (an order) per graph."""

    def __init__(self, items: list[GraphTokens], ranks: list, device: str = "cpu"):
        n = max(t.length for t in items)
        b = len(items)
        k = items[0].numeric.shape[1]
        self.ops = torch.zeros(b, n, dtype=torch.long)
        self.numeric = torch.zeros(b, n, k)
        self.rank = torch.zeros(b, n, dtype=torch.long)
        self.adjacency = torch.zeros(b, n, n)  # adjacency[g, i, j] = 1 when j is a parent of i
        self.mask = torch.ones(b, n, dtype=torch.bool)  # True = padding
        for g, (t, r) in enumerate(zip(items, ranks)):
            m = t.length
            self.ops[g, :m] = torch.from_numpy(t.ops)
            self.numeric[g, :m] = torch.from_numpy(t.numeric)
            self.rank[g, :m] = torch.from_numpy(r)
            self.mask[g, :m] = False
            for i, parents in enumerate(t.parents):
                if parents:
                    self.adjacency[g, i, parents] = 1.0
        self.lengths = torch.tensor([t.length for t in items])
        for name in ("ops", "numeric", "rank", "adjacency", "mask", "lengths"):
            setattr(self, name, getattr(self, name).to(device))


class Predictor(nn.Module):
    def __init__(self, ops: int, numeric: int, targets: int, dim: int = 128, layers: int = 4, heads: int = 4,
                 dropout: float = 0.1):
        super().__init__()
        self.dim = dim
        self.op_embedding = nn.Embedding(ops, dim)
        self.position = nn.Linear(2 * dim, dim)  # [own position code, sum of parents' codes]
        self.numeric = nn.Sequential(nn.Linear(numeric, dim), nn.GELU(), nn.Linear(dim, dim))
        self.depth = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())  # the graph-length token
        block = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.queries = nn.ParameterList([nn.Parameter(torch.randn(q, dim) * 0.02) for q in (4, 2, 1)])
        self.aggregate = nn.ModuleList([nn.MultiheadAttention(dim, heads, batch_first=True) for _ in range(3)])
        self.fuse = nn.ModuleList([nn.MultiheadAttention(dim, heads, batch_first=True) for _ in range(3)])
        self.norms = nn.ModuleList([nn.LayerNorm(dim) for _ in range(6)])
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, targets))

    def forward(self, batch: Batch) -> torch.Tensor:
        codes = sinusoid(batch.rank, self.dim)  # (b, n, d)
        parents = torch.bmm(batch.adjacency, codes)  # sum of the parents' codes
        tokens = self.op_embedding(batch.ops) + self.position(torch.cat([codes, parents], -1)) \
            + self.numeric(batch.numeric)
        depth = self.depth(sinusoid(batch.lengths, self.dim)).unsqueeze(1)
        tokens = torch.cat([depth, tokens], 1)
        mask = torch.cat([torch.zeros_like(batch.mask[:, :1]), batch.mask], 1)
        hidden = self.encoder(tokens, src_key_padding_mask=mask)
        current, current_mask = hidden, mask
        for stage in range(3):
            query = self.queries[stage].unsqueeze(0).expand(hidden.shape[0], -1, -1)
            pooled, _ = self.aggregate[stage](query, current, current, key_padding_mask=current_mask)
            pooled = self.norms[2 * stage](pooled + query)
            fused, _ = self.fuse[stage](pooled, hidden, hidden, key_padding_mask=mask)
            current = self.norms[2 * stage + 1](pooled + fused)
            current_mask = None
        return self.head(current[:, 0])


