"""`nar compare A B`: two architectures side by side (figures, ops, motifs, cosine)."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from narcli.errors import UsageError


@dataclass
class Side:
    name: str
    kind: str
    params: int
    macs: int
    depth: int
    nodes: int
    ops: Counter
    motifs: list[dict[str, Any]]


@dataclass
class Comparison:
    a: Side
    b: Side
    cosine: float
    same_architecture: bool
    op_difference: list[tuple[str, int, int]]  # (op, count in A, count in B), biggest difference first
    motifs_only_a: list[dict[str, Any]]
    motifs_only_b: list[dict[str, Any]]
    motifs_shared: list[dict[str, Any]]
    # motif types of A and B that are one block told apart only by where the sequence was cut, or
    # close enough to say what differs: {"a": motif, "b": motif, "same_block": bool, "difference": text}
    motifs_paired: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        side = lambda s: {"name": s.name, "kind": s.kind, "params": s.params, "macs": s.macs, "depth": s.depth,  # noqa: E731
                          "nodes": s.nodes}
        return {"a": side(self.a), "b": side(self.b), "cosine": round(self.cosine, 4),
                "same_architecture": self.same_architecture,
                "op_difference": [{"op": op, "a": x, "b": y} for op, x, y in self.op_difference],
                "motifs_only_a": self.motifs_only_a, "motifs_only_b": self.motifs_only_b,
                "motifs_shared": self.motifs_shared, "motifs_paired": self.motifs_paired}


def _one(text: str, options: Any, zoo: Any) -> tuple[Any, Any]:
    """(query, graph) of the single architecture `text` names; the scan options reach it only when it
    is something scanned (a zoo name or a cached scan beside a file keeps its own inputs)."""
    from narcli.scan.targets import CachedName, ZooName, resolve_target
    from narcli.search.query import resolve_queries

    target = resolve_target(text)
    if not isinstance(target, (ZooName, CachedName)):
        target = resolve_target(text, options)
    queries = resolve_queries(target, None, zoo, command="compare")
    if len(queries) != 1:
        names = ", ".join(q.name for q in queries)
        raise UsageError(f"{text} defines {len(queries)} models ({names}); pick one with --model")
    query = queries[0]
    if query.zoo_model is not None:
        graph = zoo.graph(query.zoo_model)
    else:
        from narcli.scan.cache import Cache

        graph = Cache().graph(query.graph_key)
    return query, graph


def compare(a: str, b: str, options: Any = None, options_b: Any = None) -> Comparison:
    """`a` beside `b`; `options` scan `a` (and `b`, unless `options_b` are given for it)."""
    from narcli.zoo.store import Zoo

    zoo = Zoo()
    (qa, ga), (qb, gb) = _one(a, options, zoo), _one(b, options if options_b is None else options_b, zoo)
    sides = []
    for q, g in ((qa, ga), (qb, gb)):
        ops = Counter(n.op for n in g.nodes) if g is not None else Counter()
        sides.append(Side(q.name, q.kind, q.params, q.macs, g.depth if g is not None else 0,
                          g.num_nodes if g is not None else 0, ops, q.motifs))
    ops = sorted(set(sides[0].ops) | set(sides[1].ops),
                 key=lambda op: (-abs(sides[0].ops[op] - sides[1].ops[op]), op))
    difference = [(op, sides[0].ops[op], sides[1].ops[op]) for op in ops if sides[0].ops[op] != sides[1].ops[op]]
    motifs_a, motifs_b = _motifs_with_layers(ga, qa.motifs), _motifs_with_layers(gb, qb.motifs)
    types_a, types_b = {m["type"] for m in motifs_a}, {m["type"] for m in motifs_b}
    only_a = [m for m in motifs_a if m["type"] not in types_b]
    only_b = [m for m in motifs_b if m["type"] not in types_a]
    paired = pair_motifs(only_a, only_b, qa.name, qb.name)
    paired_a, paired_b = {p["a"]["type"] for p in paired}, {p["b"]["type"] for p in paired}
    cosine = float(np.dot(qa.vector, qb.vector) / max(np.linalg.norm(qa.vector) * np.linalg.norm(qb.vector), 1e-12))
    return Comparison(sides[0], sides[1], cosine, qa.graph_hash == qb.graph_hash, difference,
                      [_public(m) for m in only_a if m["type"] not in paired_a],
                      [_public(m) for m in only_b if m["type"] not in paired_b],
                      [_public(m) for m in motifs_a if m["type"] in types_b], paired)


PAIRED_AT = 0.6  # similarity of two motifs' layer sequences from which their difference is worth naming


def _layer(node: Any) -> str:
    """A node as a motif sees it: its operation, with its kernel size when it has one."""
    kernel = node.attrs.get("kernel")
    return f"{node.op} {'×'.join(map(str, kernel))}" if isinstance(kernel, list) else node.op


def _motifs_with_layers(graph: Any, summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary's motifs, each with the layer sequence of its first instance (`layers`), read
    from the graph (as they are without one)."""
    if graph is None:
        return [dict(m) for m in summary]
    from narcli.encode.motifs import describe, sample_motifs
    from narcli.graph.idioms import normalise_idioms

    graph = normalise_idioms(graph)  # the form the summary's motif types were computed on
    rows = {r["type"]: r for r in describe(graph, sample_motifs(graph))}
    out = []
    for motif in summary:
        row, extra = rows.get(motif["type"]), {}
        if row is not None:
            first, size = row["first"], row["size"]
            extra["layers"] = [_layer(graph.nodes[i]) for i in range(first, first + size)]
            # edges inside the first instance and the next `size` nodes: the block read from any point
            extra["_edges"] = {(s - first, d - first) for s, d in graph.edges
                               if first <= s < first + 2 * size and first <= d < first + 2 * size}
        out.append({**motif, **extra})
    return out


def _wired_alike(a: dict[str, Any], b: dict[str, Any], offset: int) -> bool:
    """Whether B's block is A's read from layer `offset` on: the same edges inside it."""
    size = len(b["layers"])
    window = {(s - offset, d - offset) for s, d in a.get("_edges", ())
              if offset <= s < offset + size and offset <= d < offset + size}
    return window == {(s, d) for s, d in b.get("_edges", ()) if s < size and d < size}


def _rotations(layers: list[str]) -> list[list[str]]:
    return [layers[i:] + layers[:i] for i in range(len(layers))]


def pair_motifs(only_a: list[dict[str, Any]], only_b: list[dict[str, Any]], name_a: str = "A",
                name_b: str = "B") -> list[dict[str, Any]]:
    """Each motif of A matched with the most alike motif of B (each used once), with what differs.

    A motif's type hashes its layers in sequence order and its inner edges, so one repeated block
    (a transformer layer) cut at another point of the sequence — starting at its attention instead
    of its layer norm — gets another type: such a pair is the same block. Other pairs are named by
    the layers one has and the other lacks, or the order they come in."""
    scored = []
    for i, a in enumerate(only_a):
        for j, b in enumerate(only_b):
            la, lb = a.get("layers"), b.get("layers")
            if not la or not lb:
                continue
            if 2 * sum((Counter(la) & Counter(lb)).values()) / (len(la) + len(lb)) < PAIRED_AT:
                continue  # too few layers in common for any order of them to pair
            offsets = [k for k, r in enumerate(_rotations(la)) if r == lb] if len(la) == len(lb) else []
            same = any(_wired_alike(a, b, k) or _wired_alike(b, a, (len(la) - k) % len(la)) for k in offsets)
            starts = [r for r in _rotations(la) if r[0] == lb[0]] or [la]  # A read from where B starts
            ratio = 1.0 if offsets else max(difflib.SequenceMatcher(None, r, lb, autojunk=False).ratio() for r in starts)
            if ratio >= PAIRED_AT:
                scored.append((-ratio, not same, i, j, same, bool(offsets)))
    paired, used_a, used_b = [], set(), set()
    for *_, i, j, same, rotated in sorted(scored):
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        a, b = only_a[i], only_b[j]
        difference = ("the same block, cut at another point of the sequence" if same else
                      "the same layers in the same order, connected differently (the residual or skip edges)"
                      if rotated else _difference(a["layers"], b["layers"], name_a, name_b))
        paired.append({"a": _public(a), "b": _public(b), "same_block": same, "difference": difference})
    return paired


def _public(motif: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in motif.items() if not k.startswith("_")}


def _difference(a: list[str], b: list[str], name_a: str, name_b: str) -> str:
    """The layers one block has and the other lacks, or that they come in another order."""
    only_in_a, only_in_b = Counter(a) - Counter(b), Counter(b) - Counter(a)
    if not only_in_a and not only_in_b:
        return "the same layers in another order"
    def listed(layers: Counter) -> str:
        return ", ".join(f"{layer} ×{n}" if n > 1 else layer for layer, n in layers.items())

    return "; ".join([f"{name} has {listed(extra)} more" for name, extra in ((name_a, only_in_a), (name_b, only_in_b))
                      if extra])
