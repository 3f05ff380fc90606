"""Motif sampling and the macro graph (NAR §3.2–3.3): pure functions over a canonical ArchGraph.

1. Neighbour encoding: every node starts from its operation type (plus kernel size); at each of `s`
   steps its label becomes a digest of its own label and the sorted labels of its parents and
   children, so a label describes the node's order-`s` neighbourhood.
2. In the graph's canonical topological order the labels form a sequence. Greedily, the segment
   (2..`max_size` labels, rolling hashes) whose non-overlapping repeats save the most nodes (count-1
   times length, as in grammar compression) among nodes not yet covered is taken, each occurrence
   becoming a motif instance, so a stack of 12 identical blocks gives one block repeated 12 times,
   not 6 pairs of blocks.
3. Nodes left over once nothing repeats are motifs of size one, so the instances cover the graph.
4. Motif instances joined by at least one edge of the graph are joined in the macro graph.

This replaces the reference code's length-2 windows of one encoding step, which only ever finds
pairs, with maximal repeated segments of bounded size.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from narcli.graph.arch_graph import ArchGraph

STEPS = 1  # neighbour-encoding steps: 1 keeps the blocks of different stages alike
MAX_SIZE = 64  # nodes in one motif at most
MAX_ROUNDS = 48  # repeats chosen at most; what is left then is single nodes (bounds time on huge graphs)


@dataclass(frozen=True)
class Motif:
    """One motif instance: the graph nodes it covers (sorted) and its type."""

    nodes: tuple[int, ...]
    type: str  # digest of the ops inside and the edges between them, position-independent


@dataclass
class MotifSet:
    """A graph cut into motif instances, with the macro graph that joins them."""

    instances: list[Motif]
    macro_edges: list[tuple[int, int]]  # (instance, instance), first < second
    node_instance: list[int] = field(default_factory=list)  # graph node -> its instance

    def types(self) -> Counter[str]:
        return Counter(m.type for m in self.instances)


def node_labels(graph: ArchGraph, steps: int = STEPS) -> list[str]:
    """Labels after `steps` rounds of neighbour encoding over parents and children."""
    labels = [_base_label(n.op, n.attrs) for n in graph.nodes]
    parents, children = graph.parents(), graph.children()
    for _ in range(steps):
        labels = [
            _digest(labels[i] + "<" + ",".join(sorted(labels[p] for p in parents[i]))
                    + ">" + ",".join(sorted(labels[c] for c in children[i])))
            for i in range(len(labels))
        ]
    return labels


def sample_motifs(graph: ArchGraph, steps: int = STEPS, max_size: int = MAX_SIZE) -> MotifSet:
    """Cut `graph` into motif instances (see the module docstring) and build the macro graph."""
    if max_size < 1:
        raise ValueError("max_size must be at least 1")
    labels = node_labels(graph, steps)
    segments = _segments(labels, max_size, [_base_label(n.op, n.attrs) for n in graph.nodes])
    node_instance = [0] * graph.num_nodes
    for index, (start, stop) in enumerate(segments):
        for node in range(start, stop):
            node_instance[node] = index
    inner_edges: list[list[tuple[int, int]]] = [[] for _ in segments]
    for s, d in graph.edges:
        if node_instance[s] == node_instance[d]:
            inner_edges[node_instance[s]].append((s, d))
    instances = [Motif(tuple(range(start, stop)), _motif_type(graph, start, stop, inner_edges[index]))
                 for index, (start, stop) in enumerate(segments)]
    macro = sorted({(min(a, b), max(a, b)) for a, b in
                    ((node_instance[s], node_instance[d]) for s, d in graph.edges) if a != b})
    return MotifSet(instances, macro, node_instance)


def describe(graph: ArchGraph, motifs: MotifSet) -> list[dict]:
    """One row per motif type: size, instance count and the ops inside, most repeated first."""
    rows: dict[str, dict] = {}
    for motif in motifs.instances:
        row = rows.get(motif.type)
        if row is None:
            ops = Counter(graph.nodes[i].op for i in motif.nodes)
            rows[motif.type] = row = {"type": motif.type[:8], "size": len(motif.nodes), "count": 0,
                                      "ops": dict(ops.most_common()), "first": motif.nodes[0]}
        row["count"] += 1
    return sorted(rows.values(), key=lambda r: (-(r["count"] > 1), -r["count"] * r["size"], r["first"]))


# -- repeated segments of the label sequence --------------------------------------------------------
_BASE = 0x9E3779B97F4A7C15  # odd multiplier of the rolling hash (arithmetic mod 2**64)


def _segments(labels: list[str], max_size: int, ops: list[str] | None = None) -> list[tuple[int, int]]:
    """Segments [start, stop) covering the sequence: chosen repeats, then single nodes.

    A chosen repeat grows while every occurrence is followed by a free node of the same operation
    (the nodes where two blocks meet have different neighbourhoods, and belong to the block), and
    then takes in every other free window with the same operations (the first and last block of a
    stack differ from the others only in their neighbours outside the block).
    """
    import numpy as np

    n = len(labels)
    ops = ops or labels
    prefix, powers = _prefix_hashes(labels)
    op_prefix, _ = _prefix_hashes(ops)
    taken = np.zeros(n, dtype=bool)
    chosen: list[tuple[int, int]] = []
    for _ in range(MAX_ROUNDS):
        best = _best_repeat(prefix, powers, taken, max_size)
        if best is None:
            break
        length, starts = best
        while length < max_size and all(
                start + length < n and not taken[start + length]
                and ops[start + length] == ops[starts[0] + length]
                and (k + 1 == len(starts) or start + length < starts[k + 1])
                for k, start in enumerate(starts)):
            length += 1
        starts = _same_ops_elsewhere(op_prefix, powers, taken, starts, length)
        for start in starts:
            chosen.append((start, start + length))
            taken[start:start + length] = True
    chosen += [(i, i + 1) for i in np.flatnonzero(~taken).tolist()]
    return sorted(chosen)


def _prefix_hashes(sequence: list[str]):
    """Prefix hashes and powers for O(1) window hashes: h[i:j] = P[j] - P[i] * B**(j-i) mod 2**64."""
    import numpy as np

    ids: dict[str, int] = {}
    values = [ids.setdefault(item, len(ids)) + 1 for item in sequence]
    prefix = np.zeros(len(values) + 1, dtype=np.uint64)
    powers = np.ones(len(values) + 1, dtype=np.uint64)
    p, q, base, mask = 0, 1, _BASE, (1 << 64) - 1
    for i, value in enumerate(values):  # Python ints: exact mod 2**64, no numpy scalar overhead
        p = (p * base + value) & mask
        q = (q * base) & mask
        prefix[i + 1], powers[i + 1] = p, q
    return prefix, powers


def _window_hashes(prefix, powers, length: int):
    import numpy as np

    with np.errstate(over="ignore"):
        return prefix[length:] - prefix[:-length] * powers[length]


def _same_ops_elsewhere(op_prefix, powers, taken, starts: list[int], length: int) -> list[int]:
    """`starts` plus every other free window, not overlapping them, with the same operations."""
    import numpy as np

    hashes = _window_hashes(op_prefix, powers, length)
    blocked = np.concatenate(([0], np.cumsum(taken)))
    free = blocked[length:] - blocked[:-length] == 0
    candidates = np.flatnonzero((hashes == hashes[starts[0]]) & free).tolist()
    chosen = set(starts)
    found, end = [], -1
    for start in sorted(chosen | set(candidates)):
        if start in chosen or (start >= end and not any(start < c < start + length for c in chosen)):
            found.append(start)
            end = start + length
    return found


def _best_repeat(prefix, powers, taken, max_size: int):
    """(length, starts) of the free segment whose non-overlapping repeats save the most nodes."""
    import numpy as np

    n = len(taken)
    blocked = np.concatenate(([0], np.cumsum(taken)))
    best, best_key = None, None
    for length in range(2, min(max_size, n) + 1):
        starts = np.arange(n - length + 1)
        free = blocked[length:] - blocked[:-length] == 0
        if free.sum() < 2:
            break
        starts = starts[free]
        hashes = _window_hashes(prefix, powers, length)[starts]
        values, counts = np.unique(hashes, return_counts=True)
        top = int(counts.argmax())
        if counts[top] < 2:
            break  # no segment of this length repeats, so no longer one does either
        where = starts[hashes == values[top]].tolist()
        kept, end = [], -1
        for start in where:  # non-overlapping occurrences, left to right
            if start >= end:
                kept.append(start)
                end = start + length
        if len(kept) < 2:
            continue
        # nodes saved by writing the segment once (as in grammar compression): favours more, shorter
        # instances over fewer long ones that each span several blocks
        key = ((len(kept) - 1) * length, len(kept), -length)
        if best_key is None or key > best_key:
            best, best_key = (length, kept), key
    return best


def _motif_type(graph: ArchGraph, start: int, stop: int, inner_edges: list[tuple[int, int]]) -> str:
    inside = [_base_label(graph.nodes[i].op, graph.nodes[i].attrs) for i in range(start, stop)]
    edges = sorted((s - start, d - start) for s, d in inner_edges)
    return _digest("|".join(inside) + "#" + ";".join(f"{s}>{d}" for s, d in edges))


def _base_label(op: str, attrs: dict) -> str:
    kernel = attrs.get("kernel")
    return f"{op}:{kernel}" if kernel is not None else op


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
