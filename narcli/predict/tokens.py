"""Token sequences for the NAR-Former-style head: the canonical graph folded into its repeated blocks.

NAR-Former tokenises an 8-node cell, one token per operation. A traced network repeats its cells
and blocks (NAS-Bench-201: 15 cells, a ResNet-50: 16 bottlenecks), so tokens per node would be
36-2,000 long and mostly copies. Here nodes are folded into classes by Weisfeiler-Lehman
refinement over parents and children, starting from the operation and its kernel, stride and
groups (never the width): after `ROUNDS` rounds two nodes share a class when their neighbourhoods
of that radius look alike, so the k-th conv of every repeat of a block becomes one token whose
repeat count is a feature. Token edges join classes joined by a graph edge (the quotient graph).
Folding is order-free, so the same network always gives the same tokens.

Each token carries NAR-Former's encoding ingredients: its operation, its position (classes in
order of first appearance in the canonical topological order) and its parents' positions, plus
the mean numeric attributes of the nodes it stands for and log repeat count. Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from narcli.predict.inputs import GraphInput

ROUNDS = 3
MAX_TOKENS = 256  # classes beyond this are merged by op (huge, irregular graphs)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_UP, _DOWN = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD6E8FEB86659FD93)


@dataclass
class TokenInput:
    ops: np.ndarray  # (k,) operation index per token
    numeric: np.ndarray  # (k, d + 1): mean node attributes, then log1p(repeats) / 4
    edges: np.ndarray  # (2, e) token -> token, no duplicates, no self loops
    figures: np.ndarray  # whole-model figures (GraphInput's)

    @property
    def num_tokens(self) -> int:
        return int(self.ops.shape[0])


def _mix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
        return x ^ (x >> np.uint64(31))


def _neighbour_sum(labels: np.ndarray, into: np.ndarray, source: np.ndarray, size: int) -> np.ndarray:
    # a sum of mixed labels is a multiset digest (order-free)
    out = np.zeros(size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.add.at(out, into, _mix(labels[source]))
    return out


def node_classes(item: GraphInput, rounds: int = ROUNDS) -> np.ndarray:
    """Class id per node (0..k-1, numbered by first appearance)."""
    n = item.num_nodes
    shape_free = np.round(item.numeric[:, 2:5] * 64).astype(np.int64)  # kernel, stride, groups
    labels = _mix(item.ops.astype(np.uint64) * np.uint64(1_000_003)
                  + _mix(shape_free[:, 0].astype(np.uint64)) + _mix(shape_free[:, 1].astype(np.uint64) + _UP)
                  + _mix(shape_free[:, 2].astype(np.uint64) + _DOWN))
    source, target = item.edges
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            up = _neighbour_sum(labels, target, source, n)
            down = _neighbour_sum(labels, source, target, n)
            labels = _mix(labels * _M1 + _mix(up + _UP) + _mix(down + _DOWN))
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    classes = rank[inverse.reshape(-1)]
    if classes.max(initial=0) >= MAX_TOKENS:  # irregular giant: one token per (op, kind) class
        return node_classes(item, rounds=0) if rounds else np.minimum(classes, MAX_TOKENS - 1)
    return classes


def tokenise(item: GraphInput, rounds: int = ROUNDS) -> TokenInput:
    classes = node_classes(item, rounds)
    k = int(classes.max(initial=-1)) + 1
    counts = np.bincount(classes, minlength=k).astype(np.float32)
    ops = np.zeros(k, dtype=np.int64)
    ops[classes[::-1]] = item.ops[::-1]  # the first node's op (all nodes of a class share it)
    numeric = np.zeros((k, item.numeric.shape[1]), dtype=np.float32)
    np.add.at(numeric, classes, item.numeric)
    numeric /= counts[:, None]
    numeric = np.concatenate([numeric, (np.log1p(counts) / 4)[:, None]], 1).astype(np.float32)
    pairs = classes[item.edges].T if item.edges.size else np.zeros((0, 2), dtype=np.int64)
    pairs = np.unique(pairs[pairs[:, 0] != pairs[:, 1]], axis=0) if len(pairs) else pairs.reshape(0, 2)
    return TokenInput(ops, numeric, pairs.T.astype(np.int64).reshape(2, -1), item.figures)


def reordered(tokens: TokenInput, rng: np.random.Generator) -> np.ndarray:
    """Another numbering of the tokens that keeps every forward edge forward where the token graph
    allows it (NAR-Former's architecture-consistency augmentation): a random topological order,
    ties broken at random; tokens on a cycle (folded repeats) keep their relative order."""
    k = tokens.num_tokens
    source, target = tokens.edges
    forward = source < target
    indegree = np.bincount(target[forward], minlength=k)
    children: list[list[int]] = [[] for _ in range(k)]
    for s, t in zip(source[forward], target[forward]):
        children[s].append(int(t))
    ready = [i for i in range(k) if indegree[i] == 0]
    order: list[int] = []
    while ready:
        pick = ready.pop(int(rng.integers(len(ready))))
        order.append(pick)
        for c in children[pick]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    position = np.empty(k, dtype=np.int64)
    position[np.array(order, dtype=np.int64)] = np.arange(k)
    return position
