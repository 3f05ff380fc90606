"""`ArchGraph`: the canonical architecture graph, its JSON form and its content hash."""

from __future__ import annotations

import hashlib
import heapq
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Attributes that describe the architecture itself. Output shapes depend on the example input and
# scopes on naming, so neither enters the content hash.
STRUCTURAL_ATTRS = (
    "in_channels", "out_channels", "in_features", "out_features", "kernel", "stride",
    "dilation", "groups", "padding", "features",
)

# Refinement rounds for node classes: enough to tell apart any real architectures, bounded so that
# graphs with thousands of nodes still hash in well under a second.
WL_ROUNDS = 24


@dataclass
class Node:
    """One operation: canonical type, output shape, key attributes, parameters it owns."""

    op: str
    shape: list[int] | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    params: int = 0
    macs: int = 0
    scope: str = ""

    def label(self) -> str:
        """The node's identity for hashing: type, structural attributes and parameter count."""
        parts = [self.op, str(self.params)]
        parts += [f"{k}={self.attrs[k]}" for k in STRUCTURAL_ATTRS if k in self.attrs]
        return "|".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        if self.shape is not None:
            out["shape"] = list(self.shape)
        if self.attrs:
            out["attrs"] = {k: self.attrs[k] for k in sorted(self.attrs)}
        if self.params:
            out["params"] = self.params
        if self.macs:
            out["macs"] = self.macs
        if self.scope:
            out["scope"] = self.scope
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Node:
        return cls(
            op=data["op"],
            shape=data.get("shape"),
            attrs=dict(data.get("attrs", {})),
            params=int(data.get("params", 0)),
            macs=int(data.get("macs", 0)),
            scope=data.get("scope", ""),
        )


@dataclass
class ArchGraph:
    """A directed acyclic graph of canonical operations with edges along data flow.

    `nodes` are in a canonical topological order (see `canonicalize`) and `edges` are
    `(source, target)` index pairs with `source < target`. `meta` holds where the graph came from:
    source, tracer, input shapes, total parameters (shared tensors counted once).
    """

    nodes: list[Node]
    edges: list[tuple[int, int]]
    meta: dict[str, Any] = field(default_factory=dict)

    # -- derived figures ---------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def params(self) -> int:
        return int(self.meta.get("params", sum(n.params for n in self.nodes)))

    @property
    def macs(self) -> int:
        """Every node's MACs, and those of work on constants alone that forward does (no node)."""
        return sum(n.macs for n in self.nodes) + int(self.meta.get("constant_macs", 0))

    @property
    def depth(self) -> int:
        """Number of nodes on the longest path."""
        longest = [1] * len(self.nodes)
        for src, dst in sorted(self.edges):
            longest[dst] = max(longest[dst], longest[src] + 1)
        return max(longest, default=0)

    def op_histogram(self) -> Counter[str]:
        return Counter(n.op for n in self.nodes)

    def top_ops(self, n: int) -> list[tuple[str, int]]:
        """The `n` most used operation types, inputs and outputs left out."""
        histogram = self.op_histogram()
        for io in ("input", "output"):
            histogram.pop(io, None)
        return histogram.most_common(n)

    def image_signs(self) -> dict[str, Any]:
        """What this trace says about the image size a classifier was built for
        (`trace.image_size.small_image_respec`): the smaller side of each 2-D map a global pool reads (a
        classifier's head, a squeeze-excite gate), the sides of the maps fixed-window pools leave,
        the outputs' shapes, and whether a convolution is dilated (keeps its map large by design)."""
        parents = self.parents()
        pooled, fixed = [], []
        for i, node in enumerate(self.nodes):
            if node.op in ("global_avg_pool", "global_max_pool"):
                pooled += [int(min(self.nodes[p].shape[2:])) for p in parents[i]
                           if self.nodes[p].shape and len(self.nodes[p].shape) == 4]
            elif node.op in ("avg_pool2d", "max_pool2d") and node.shape and len(node.shape) == 4:
                fixed.append(int(min(node.shape[2:])))
        dilated = any(node.op.startswith("conv") and max(node.attrs.get("dilation") or [1]) > 1 for node in self.nodes)
        return {"pooled_sides": pooled, "fixed_pool_sides": fixed, "dilated": dilated,
                "outputs": [node.shape for node in self.nodes if node.op == "output"]}

    def parents(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.nodes]
        for src, dst in self.edges:
            out[dst].append(src)
        return out

    def children(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.nodes]
        for src, dst in self.edges:
            out[src].append(dst)
        return out

    # -- identity ----------------------------------------------------------------------------
    def node_classes(self) -> list[str]:
        """Weisfeiler-Lehman refinement over parents and children until the partition is stable.

        Two nodes end in the same class when their labelled neighbourhoods (up to
        `WL_ROUNDS` hops) are alike, whatever the nodes are called or the order they were listed.
        """
        labels = [_digest(n.label()) for n in self.nodes]
        parents, children = self.parents(), self.children()
        distinct = len(set(labels))
        for _ in range(min(WL_ROUNDS, len(self.nodes))):
            labels = refine_labels(labels, parents, children)
            now = len(set(labels))
            if now == distinct:
                break
            distinct = now
        return labels

    def content_hash(self) -> str:
        """Stable hash of the architecture: independent of node names, order and input size."""
        classes = self.node_classes()
        edge_classes = sorted(f"{classes[s]}>{classes[d]}" for s, d in self.edges)
        body = "\n".join(sorted(classes)) + "\n#\n" + "\n".join(edge_classes)
        return hashlib.sha256(body.encode()).hexdigest()[:32]

    def canonicalize(self) -> ArchGraph:
        """The same graph with nodes in a deterministic topological order (ties by WL class)."""
        classes = self.node_classes()
        parents, children = self.parents(), self.children()
        waiting = [len(p) for p in parents]
        ready = [(classes[i], i) for i in range(len(self.nodes)) if waiting[i] == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            _, i = heapq.heappop(ready)
            order.append(i)
            for c in children[i]:
                waiting[c] -= 1
                if waiting[c] == 0:
                    heapq.heappush(ready, (classes[c], c))
        if len(order) != len(self.nodes):
            raise ValueError("graph has a cycle")
        position = {old: new for new, old in enumerate(order)}
        nodes = [self.nodes[i] for i in order]
        edges = sorted({(position[s], position[d]) for s, d in self.edges})
        return ArchGraph(nodes, edges, dict(self.meta))

    # -- serialisation ---------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Headline figures, as shown by `nar scan`."""
        return {
            "params": self.params,
            "macs": self.macs,
            "depth": self.depth,
            "nodes": self.num_nodes,
            "edges": len(self.edges),
            "hash": self.content_hash(),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "meta": {k: self.meta[k] for k in sorted(self.meta)},
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [list(e) for e in self.edges],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArchGraph:
        nodes = [Node.from_dict(n) for n in data["nodes"]]
        edges = [(int(s), int(d)) for s, d in data["edges"]]
        for s, d in edges:
            if not (0 <= s < len(nodes) and 0 <= d < len(nodes)):
                raise ValueError(f"edge ({s}, {d}) points outside the {len(nodes)} nodes")
        return cls(nodes, edges, dict(data.get("meta", {})))

    @classmethod
    def from_json(cls, text: str) -> ArchGraph:
        return cls.from_dict(json.loads(text))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def refine_labels(labels: list[str], parents: list[list[int]], children: list[list[int]]) -> list[str]:
    """One Weisfeiler-Lehman round: each node's label with its parents' and children's, digested."""
    return [_digest(labels[i] + "<" + ",".join(sorted(labels[p] for p in parents[i]))
                    + ">" + ",".join(sorted(labels[c] for c in children[i])))
            for i in range(len(labels))]
