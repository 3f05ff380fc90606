"""`nar compare A B`: two architectures side by side (figures, ops, motifs, cosine)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
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

    def to_json(self) -> dict[str, Any]:
        side = lambda s: {"name": s.name, "kind": s.kind, "params": s.params, "macs": s.macs, "depth": s.depth,  # noqa: E731
                          "nodes": s.nodes}
        return {"a": side(self.a), "b": side(self.b), "cosine": round(self.cosine, 4),
                "same_architecture": self.same_architecture,
                "op_difference": [{"op": op, "a": x, "b": y} for op, x, y in self.op_difference],
                "motifs_only_a": self.motifs_only_a, "motifs_only_b": self.motifs_only_b,
                "motifs_shared": self.motifs_shared}


def _one(target: str, options: Any, zoo: Any) -> tuple[Any, Any]:
    """(query, graph) of the single architecture `target` names."""
    from narcli.search.query import resolve_queries

    queries = resolve_queries(target, options, zoo)
    if len(queries) != 1:
        names = ", ".join(q.name for q in queries)
        raise UsageError(f"{target} defines {len(queries)} models ({names}); pick one with --model")
    query = queries[0]
    if query.zoo_model is not None:
        graph = zoo.graph(query.zoo_model)
    else:
        from narcli.scan.cache import Cache

        graph = Cache().graph(query.graph_key)
    return query, graph


def compare(a: str, b: str, options: Any = None) -> Comparison:
    from narcli.zoo.store import Zoo

    zoo = Zoo()
    (qa, ga), (qb, gb) = _one(a, options, zoo), _one(b, options, zoo)
    sides = []
    for q, g in ((qa, ga), (qb, gb)):
        ops = Counter(n.op for n in g.nodes) if g is not None else Counter()
        sides.append(Side(q.name, q.kind, q.params, q.macs, g.depth if g is not None else 0,
                          g.num_nodes if g is not None else 0, ops, q.motifs))
    ops = sorted(set(sides[0].ops) | set(sides[1].ops),
                 key=lambda op: (-abs(sides[0].ops[op] - sides[1].ops[op]), op))
    difference = [(op, sides[0].ops[op], sides[1].ops[op]) for op in ops if sides[0].ops[op] != sides[1].ops[op]]
    types_a, types_b = {m["type"] for m in qa.motifs}, {m["type"] for m in qb.motifs}
    cosine = float(np.dot(qa.vector, qb.vector) / max(np.linalg.norm(qa.vector) * np.linalg.norm(qb.vector), 1e-12))
    return Comparison(sides[0], sides[1], cosine, qa.graph_hash == qb.graph_hash, difference,
                      [m for m in qa.motifs if m["type"] not in types_b],
                      [m for m in qb.motifs if m["type"] not in types_a],
                      [m for m in qa.motifs if m["type"] in types_b])
