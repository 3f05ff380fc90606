"""The predictor network and its numpy twin.

A message-passing network over the canonical graph: node state = operation embedding + projected
numeric attributes; each layer adds what flows in from the parents and from the children (separate
weights, so direction counts) through a residual MLP; the readout is the mean, the max and the
output node's state, beside an MLP of the whole-model figures; a linear head gives one value per
target. It is invariant to node order by construction (NAR-Former's architecture-consistency loss
has nothing left to enforce).

Why not NAR-Former's transformer over node tokens: on NAS-Bench-201 networks (36-246 nodes each)
it reached Kendall tau 0.546 after 100 epochs (31 min) with 781 training cells, this network 0.76
after 50 epochs (3 min); see README, "Predictor".

Training uses the torch module (`GraphNet`); inference reads the same weights with
`forward_numpy`, so `nar predict` and the zoo's precomputed predictions never import torch.
"""

from __future__ import annotations

import math

import numpy as np

from narcli.predict.inputs import GLOBALS, GraphInput


def layer_names(layers: int) -> list[str]:
    return [f"layers.{i}.{part}" for i in range(layers) for part in ("self", "up", "down", "norm", "fc1", "fc2")]


def build_torch_net(ops: int, numeric: int, targets: int, dim: int, layers: int):
    """GraphNet, defined here so that torch is imported only by training."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.self, self.up, self.down = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.norm = nn.LayerNorm(dim)
            self.fc1, self.fc2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

        def forward(self, h, source, target):
            up = torch.zeros_like(h).index_add_(0, target, self.up(h)[source])
            down = torch.zeros_like(h).index_add_(0, source, self.down(h)[target])
            mixed = self.norm(self.self(h) + up + down)
            return h + self.fc2(nn.functional.gelu(self.fc1(mixed), approximate="tanh"))

    class GraphNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dim, self.targets = dim, targets
            self.op_embedding = nn.Embedding(ops, dim)
            self.numeric = nn.Linear(numeric, dim)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.figures1, self.figures2 = nn.Linear(len(GLOBALS), dim), nn.Linear(dim, dim)
            self.head1, self.head2 = nn.Linear(4 * dim, dim), nn.Linear(dim, targets)

        def latent(self, batch):
            ops, numeric, source, target, graph_of, last, figures = batch
            h = self.op_embedding(ops) + self.numeric(numeric)
            for layer in self.layers:
                h = layer(h, source, target)
            count = len(last)
            total = torch.zeros(count, self.dim, device=h.device).index_add_(0, graph_of, h)
            sizes = torch.bincount(graph_of, minlength=count).clamp(min=1).unsqueeze(1)
            maximum = torch.full((count, self.dim), -1e4, device=h.device).scatter_reduce(
                0, graph_of.unsqueeze(1).expand(-1, self.dim), h, reduce="amax", include_self=True)
            g = self.figures2(nn.functional.gelu(self.figures1(figures), approximate="tanh"))
            return torch.cat([total / sizes, maximum, h[last], g], 1)

        def forward(self, batch):
            z = self.latent(batch)
            return self.head2(nn.functional.gelu(self.head1(z), approximate="tanh"))

    return GraphNet()


def collate(items: list[GraphInput], device: str = "cpu"):
    """Torch tensors of several graphs as one disjoint graph."""
    import torch

    ops, numeric, source, target, graph_of, last = [], [], [], [], [], []
    offset = 0
    for k, item in enumerate(items):
        ops.append(item.ops)
        numeric.append(item.numeric)
        source.append(item.edges[0] + offset)
        target.append(item.edges[1] + offset)
        graph_of.append(np.full(item.num_nodes, k))
        offset += item.num_nodes
        last.append(offset - 1)
    parts = (np.concatenate(ops), np.concatenate(numeric), np.concatenate(source), np.concatenate(target),
             np.concatenate(graph_of), np.array(last), np.stack([i.figures for i in items]))
    kinds = (torch.long, torch.float32, torch.long, torch.long, torch.long, torch.long, torch.float32)
    return tuple(torch.as_tensor(p, dtype=t).to(device) for p, t in zip(parts, kinds))


# -- numpy inference ------------------------------------------------------------------------------

def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _linear(w: dict[str, np.ndarray], name: str, x: np.ndarray) -> np.ndarray:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def _layer_norm(w: dict[str, np.ndarray], name: str, x: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * w[f"{name}.weight"] + w[f"{name}.bias"]


class _Scatter:
    """Sums rows into buckets by an index, with the sort done once (np.add.at is ~10x slower)."""

    def __init__(self, gather: np.ndarray, into: np.ndarray, size: int) -> None:
        order = np.argsort(into, kind="stable")
        self.gather, self.size = gather[order], size
        sorted_into = into[order]
        self.starts = np.flatnonzero(np.r_[True, sorted_into[1:] != sorted_into[:-1]]) if len(into) else into
        self.buckets = sorted_into[self.starts] if len(into) else into

    def __call__(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros((self.size, values.shape[1]), dtype=values.dtype)
        if len(self.gather):
            out[self.buckets] = np.add.reduceat(values[self.gather], self.starts, axis=0)
        return out


def latent_numpy(weights: dict[str, np.ndarray], item: GraphInput, layers: int) -> np.ndarray:
    """The readout vector of one graph (what the head reads; also the applicability space)."""
    return latents_numpy(weights, [item], layers)[0]


def latents_numpy(weights: dict[str, np.ndarray], items: list[GraphInput], layers: int) -> np.ndarray:
    """Readout vectors of several graphs, run as one disjoint graph (large matrix products)."""
    sizes = np.array([i.num_nodes for i in items])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    ops = np.concatenate([i.ops for i in items])
    numeric = np.concatenate([i.numeric for i in items])
    source = np.concatenate([i.edges[0] + o for i, o in zip(items, offsets)])
    target = np.concatenate([i.edges[1] + o for i, o in zip(items, offsets)])
    h = weights["op_embedding.weight"][ops] + _linear(weights, "numeric", numeric)
    from_parents = _Scatter(source, target, len(h))
    from_children = _Scatter(target, source, len(h))
    for i in range(layers):
        p = f"layers.{i}."
        up = from_parents(_linear(weights, p + "up", h))
        down = from_children(_linear(weights, p + "down", h))
        mixed = _layer_norm(weights, p + "norm", _linear(weights, p + "self", h) + up + down)
        h = h + _linear(weights, p + "fc2", _gelu(_linear(weights, p + "fc1", mixed)))
    figures = np.stack([i.figures for i in items])
    g = _linear(weights, "figures2", _gelu(_linear(weights, "figures1", figures)))
    mean = np.add.reduceat(h, offsets, axis=0) / sizes[:, None]
    maximum = np.maximum(np.maximum.reduceat(h, offsets, axis=0), -1e4)
    last = h[offsets + sizes - 1]
    return np.concatenate([mean, maximum, last, g], 1).astype(np.float32)


def head_numpy(weights: dict[str, np.ndarray], z: np.ndarray) -> np.ndarray:
    return _linear(weights, "head2", _gelu(_linear(weights, "head1", z)))
