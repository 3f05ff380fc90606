"""The NAR-Former-style network over folded tokens (`tokens.py`), and its numpy twin.

Token encoding as NAR-Former's: operation embedding, a sinusoidal code of the token's position and
the sum of its parents' position codes (concatenated, then projected), plus the token's mean node
attributes and repeat count. Each block first passes messages along the token graph (from parents
and from children, separate weights), then attends with a learnt bias per head for each relation
between two tokens (itself, its parent, its child, sibling: a shared parent, or none): the graph
is known inside every block, as in NAR-Former V2. The readout is attention pooling with learnt queries (NAR-Former's
aggregation stage, one stage) beside the mean token and the whole-model figures; the head is the
graph network's (`head1`, `head2`), so `network.head_numpy` serves both.

Training uses the torch module; `latents_numpy` reads the same weights without torch.
"""

from __future__ import annotations

import math

import numpy as np

from narcli.predict.inputs import GLOBALS
from narcli.predict.network import _gelu, _linear
from narcli.predict.network import _layer_norm as _norm
from narcli.predict.tokens import TokenInput

FREQUENCIES = 16  # position code: sin and cos at 16 frequencies (32 values)
RELATIONS = 5  # none, self, parent, child, sibling
QUERIES = 4
HEADS = 4


def position_code(positions: np.ndarray) -> np.ndarray:
    """(n,) positions -> (n, 2 * FREQUENCIES); frequencies geometric from 1 to 1/256 per step."""
    rates = 1.0 / (256.0 ** (np.arange(FREQUENCIES) / (FREQUENCIES - 1)))
    angle = np.asarray(positions, dtype=np.float64)[:, None] * rates[None, :]
    return np.concatenate([np.sin(angle), np.cos(angle)], 1).astype(np.float32)


def token_features(tokens: TokenInput, positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(codes (k, 4F): own position code ++ sum of parents' codes, relations (k, k) int8)."""
    k = tokens.num_tokens
    positions = np.arange(k) if positions is None else positions
    own = position_code(positions)
    parents = np.zeros_like(own)
    source, target = tokens.edges
    np.add.at(parents, target, own[source])
    relation = np.zeros((k, k), dtype=np.int8)
    adjacency = np.zeros((k, k), dtype=bool)
    adjacency[source, target] = True
    shared = (adjacency.T.astype(np.int32) @ adjacency.astype(np.int32)) > 0  # common parent
    relation[shared] = 4
    relation[target, source] = 2  # row attends to its parent
    relation[source, target] = 3  # row attends to its child
    relation[np.arange(k), np.arange(k)] = 1
    return np.concatenate([own, parents], 1), relation


def build_torch_former(ops: int, numeric: int, targets: int, dim: int, layers: int):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.relation = nn.Embedding(RELATIONS, HEADS)
            self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
            self.up, self.down, self.norm0 = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.LayerNorm(dim)

        def forward(self, h, relation, pad):
            b, k, _ = h.shape
            parents, children = (relation == 2).float(), (relation == 3).float()
            h = h + nn.functional.gelu(self.norm0(parents @ self.up(h) + children @ self.down(h)), approximate="tanh")
            q, key, v = self.qkv(self.norm1(h)).view(b, k, 3, HEADS, dim // HEADS).permute(2, 0, 3, 1, 4)
            scores = q @ key.transpose(-1, -2) / math.sqrt(dim // HEADS)
            scores = scores + self.relation(relation).permute(0, 3, 1, 2)
            scores = scores.masked_fill(pad[:, None, None, :], -1e4)
            mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, k, dim)
            h = h + self.out(mixed)
            return h + self.fc2(nn.functional.gelu(self.fc1(self.norm2(h)), approximate="tanh"))

    class FormerNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dim, self.targets = dim, targets
            self.op_embedding = nn.Embedding(ops, dim)
            self.numeric = nn.Linear(numeric, dim)
            self.codes = nn.Linear(4 * FREQUENCIES, dim)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.final_norm = nn.LayerNorm(dim)
            self.queries = nn.Parameter(torch.randn(QUERIES, dim) * 0.02)
            self.pool = nn.Linear(dim, dim)
            self.figures1, self.figures2 = nn.Linear(len(GLOBALS), dim), nn.Linear(dim, dim)
            self.head1, self.head2 = nn.Linear(3 * dim, dim), nn.Linear(dim, targets)

        def latent(self, batch):
            ops, numeric, codes, relation, pad, figures = batch
            h = self.op_embedding(ops) + self.numeric(numeric) + self.codes(codes)
            for block in self.blocks:
                h = block(h, relation, pad)
            h = self.final_norm(h)
            keep = (~pad).float().unsqueeze(-1)
            mean = (h * keep).sum(1) / keep.sum(1).clamp(min=1)
            scores = (h @ self.queries.T / math.sqrt(self.dim)).masked_fill(pad.unsqueeze(-1), -1e4)
            pooled = self.pool((scores.softmax(1).transpose(1, 2) @ h).mean(1))
            g = self.figures2(nn.functional.gelu(self.figures1(figures), approximate="tanh"))
            return torch.cat([mean, pooled, g], 1)

        def forward(self, batch):
            z = self.latent(batch)
            return self.head2(nn.functional.gelu(self.head1(z), approximate="tanh"))

    return FormerNet()


def padded(items: list[TokenInput], features: list | None = None) -> tuple[np.ndarray, ...]:
    """(ops, numeric, codes, relation, pad, figures) of several token sequences padded to the
    longest, as numpy arrays (`features`: their `token_features`, when already computed or
    computed for another numbering). Training and numpy inference both read this."""
    k = max(i.num_tokens for i in items)
    b = len(items)
    ops = np.zeros((b, k), dtype=np.int64)
    numeric = np.zeros((b, k, items[0].numeric.shape[1]), dtype=np.float32)
    codes = np.zeros((b, k, 4 * FREQUENCIES), dtype=np.float32)
    relation = np.zeros((b, k, k), dtype=np.int64)
    pad = np.ones((b, k), dtype=bool)
    for n, item in enumerate(items):
        m = item.num_tokens
        c, r = token_features(item) if features is None else features[n]
        ops[n, :m], numeric[n, :m], codes[n, :m], relation[n, :m, :m], pad[n, :m] = item.ops, item.numeric, c, r, False
    return ops, numeric, codes, relation, pad, np.stack([i.figures for i in items])


def collate_tokens(items: list[TokenInput], device: str = "cpu", features: list | None = None):
    """`padded` as torch tensors on `device`."""
    import torch

    return tuple(torch.as_tensor(p).to(device) for p in padded(items, features))


# -- numpy inference ------------------------------------------------------------------------------

def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def latents_numpy(weights: dict[str, np.ndarray], items: list[TokenInput], layers: int,
                  batch: int = 64) -> np.ndarray:
    """Readout vectors of several token sequences, padded into batches (large matrix products)."""
    dim = weights["op_embedding.weight"].shape[1]
    if not items:
        return np.zeros((0, 3 * dim), np.float32)
    order = np.argsort([i.num_tokens for i in items], kind="stable")  # similar lengths pad little
    out = np.zeros((len(items), 3 * dim), np.float32)
    for start in range(0, len(items), batch):
        chosen = order[start:start + batch]
        out[chosen] = _latents_padded(weights, [items[i] for i in chosen], layers)
    return out


def _latents_padded(weights: dict[str, np.ndarray], items: list[TokenInput], layers: int) -> np.ndarray:
    ops, numeric, codes, relation, pad, figures = padded(items)
    b, k = ops.shape
    dim = weights["op_embedding.weight"].shape[1]
    part = dim // HEADS
    parents, children = (relation == 2).astype(np.float32), (relation == 3).astype(np.float32)
    h = weights["op_embedding.weight"][ops] + _linear(weights, "numeric", numeric) + _linear(weights, "codes", codes)
    masked = np.where(pad[:, None, None, :], np.float32(-1e4), np.float32(0))
    for i in range(layers):
        p = f"blocks.{i}."
        flow = parents @ _linear(weights, p + "up", h) + children @ _linear(weights, p + "down", h)
        h = h + _gelu(_norm(weights, p + "norm0", flow))
        q, key, v = _linear(weights, p + "qkv", _norm(weights, p + "norm1", h)).reshape(b, k, 3, HEADS, part).transpose(2, 0, 3, 1, 4)
        scores = q @ key.transpose(0, 1, 3, 2) / math.sqrt(part)
        scores = scores + weights[p + "relation.weight"][relation].transpose(0, 3, 1, 2) + masked
        mixed = (_softmax(scores, -1) @ v).transpose(0, 2, 1, 3).reshape(b, k, dim)
        h = h + _linear(weights, p + "out", mixed)
        h = h + _linear(weights, p + "fc2", _gelu(_linear(weights, p + "fc1", _norm(weights, p + "norm2", h))))
    h = _norm(weights, "final_norm", h)
    keep = (~pad).astype(np.float32)[:, :, None]
    mean = (h * keep).sum(1) / np.maximum(keep.sum(1), 1)
    attention = _softmax(h @ weights["queries"].T / math.sqrt(dim) + np.where(pad, -1e4, 0)[:, :, None], 1)
    pooled = _linear(weights, "pool", (attention.transpose(0, 2, 1) @ h).mean(1))
    g = _linear(weights, "figures2", _gelu(_linear(weights, "figures1", figures)))
    return np.concatenate([mean, pooled, g], 1).astype(np.float32)
