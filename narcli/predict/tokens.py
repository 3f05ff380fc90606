"""A canonical graph as predictor input: per node its operation, numeric attributes (the encoder's,
plus log MACs) and the adjacency, so the model can compute position encodings for any topological
order (the architecture-consistency augmentation renumbers nodes)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_TOKENS = 256  # graphs longer than this are not handled yet (NB201 cells have 36-246 nodes)


@dataclass
class GraphTokens:
    ops: np.ndarray  # (n,) int64
    numeric: np.ndarray  # (n, k) float32
    parents: list[list[int]]  # parents[i]: predecessors of node i, all < i

    @property
    def length(self) -> int:
        return int(self.ops.shape[0])


def graph_tokens(graph) -> GraphTokens:
    """Tokens of an ArchGraph (node order is already topological: every edge points forward)."""
    from narcli.encode.features import encode_graph

    encoded = encode_graph(graph)
    if encoded.num_nodes > MAX_TOKENS:
        raise ValueError(f"{encoded.num_nodes} nodes; the predictor takes at most {MAX_TOKENS} for now")
    macs = np.array([[math.log1p(max(n.macs, 0)) / 24] for n in graph.nodes] or [[0.0]], dtype=np.float32)
    numeric = np.concatenate([encoded.numeric, macs[: encoded.num_nodes]], axis=1)
    parents: list[list[int]] = [[] for _ in range(encoded.num_nodes)]
    for source, target in encoded.edges.T.tolist():
        parents[target].append(source)
    return GraphTokens(encoded.ops, numeric.astype(np.float32), parents)


def random_topological_order(tokens: GraphTokens, rng: np.random.Generator) -> np.ndarray:
    """rank[i] = position of node i in a random topological order (edges still point forward)."""
    n = tokens.length
    waiting = np.array([len(p) for p in tokens.parents])
    children: list[list[int]] = [[] for _ in range(n)]
    for i, parents in enumerate(tokens.parents):
        for p in parents:
            children[p].append(i)
    ready = [i for i in range(n) if waiting[i] == 0]
    rank = np.empty(n, dtype=np.int64)
    for position in range(n):
        pick = ready.pop(int(rng.integers(len(ready))))
        rank[pick] = position
        for child in children[pick]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return rank
