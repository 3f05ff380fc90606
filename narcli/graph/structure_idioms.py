"""A graph network's graph is data, not architecture: work done on the edge index alone folds away.

A torch_geometric model is written two ways. Most take the graph as an input (`forward(x,
edge_index)`): the tracer then sees the layers' bookkeeping on the integer edge index — self loops
added, degrees counted, `deg ** -0.5` with its infinities masked, the per-edge weights gathered —
as operations of the model. Others build their graph inside `forward` (a fixed ring, a grid): the
same bookkeeping then runs on constants, which leave no node. Both are the same architecture, so
the canonical graph keeps only what touches features: the per-edge weights become a scale by a
constant (`mul` with one input), exactly as in the second spelling.

An integer input counts as the graph's *structure* when everything computed from it alone (no
parameters involved) is read only by operations that also read features: the index of a gather or a
scatter, the weight of a message. Token ids fail that test (an embedding reads them alone), and so
does an index that is one-hot encoded into a `Linear`, so language models and the like keep theirs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.loop_idioms import expand_loops

INTEGER_DTYPES = frozenset("int8 int16 int32 int64 uint8 bool long int".split())


def _integer_inputs(graph: ArchGraph) -> list[int]:
    """Input nodes whose every declared input of that shape is an integer tensor."""
    declared = graph.meta.get("inputs") or []
    out = []
    for i, node in enumerate(graph.nodes):
        if node.op != "input" or node.shape is None:
            continue
        dtypes = {str(spec.get("dtype", "")).replace("torch.", "") for spec in declared
                  if isinstance(spec, dict) and list(spec.get("shape") or []) == list(node.shape)}
        if dtypes and dtypes <= INTEGER_DTYPES:
            out.append(i)
    return out


def _closure(start: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]]) -> set[int]:
    """`start` and every node computed from it (and other nodes of the set) alone, with no parameters.
    A node whose last parent joins later is checked again then, as that parent's child."""
    inside = {start}
    frontier = [start]
    while frontier:
        i = frontier.pop()
        for c in children[i]:
            if c in inside or nodes[c].params or nodes[c].op == "output":
                continue
            if all(p in inside for p in parents[c]):
                inside.add(c)
                frontier.append(c)
    return inside


def _readers(group: set[int], children: list[list[int]]) -> set[int]:
    """The nodes outside `group` that read a node of it."""
    return {c for i in group for c in children[i]} - group


STRUCTURE_INPUTS = "structure_inputs"  # a kept node's attribute: the folded nodes it read


def fold_graph_structure(graph: ArchGraph) -> ArchGraph:
    """`graph` without the work its integer graph-structure inputs get alone (the same object if
    there is none). The folded nodes' MACs move to `constant_macs`, as constants' work does, and the
    nodes themselves to `meta["structure"]` (their readers name them in `attrs["structure_inputs"]`)
    so that `as_run` can give the latency head what actually runs; the content hash reads neither."""
    integer = _integer_inputs(graph)
    if not integer:
        return graph
    nodes = graph.nodes
    parents, children = graph.parents(), graph.children()
    structure: set[int] = set()
    for start in integer:
        inside = _closure(start, nodes, parents, children)
        readers = _readers(inside, children)
        # every reader must also read something else: features, not the index alone
        if readers and all(any(p not in inside for p in parents[r]) for r in readers):
            structure |= inside
    # each input was judged alone: a node reading only the work on two of them (an edge index and
    # `batch`) would be left with no input at all, so then nothing folds
    if not structure or any(all(p in structure for p in parents[r]) for r in _readers(structure, children)):
        return graph
    folded = sorted(structure)
    slot = {old: k for k, old in enumerate(folded)}
    keep = [i for i in range(len(nodes)) if i not in structure]
    index = {old: new for new, old in enumerate(keep)}
    kept = []
    for i in keep:
        read = sorted(slot[p] for p in parents[i] if p in structure)
        kept.append(replace(nodes[i], attrs={**nodes[i].attrs, STRUCTURE_INPUTS: read}) if read else nodes[i])
    edges = sorted({(index[s], index[d]) for s, d in graph.edges if s in index and d in index})
    meta: dict[str, Any] = dict(graph.meta)
    folded_macs = sum(nodes[i].macs for i in structure)
    if folded_macs:
        meta["constant_macs"] = int(meta.get("constant_macs", 0)) + folded_macs
    meta["structure"] = {"nodes": [nodes[i].to_dict() for i in folded], "macs": folded_macs,
                         "edges": sorted([slot[s], slot[d]] for s, d in graph.edges if s in structure and d in structure)}
    return ArchGraph(kept, edges, meta).canonicalize()


def as_run(graph: ArchGraph) -> ArchGraph:
    """`graph` with the folded graph-structure work and loop steps back in (what forward runs, for
    costing it); `graph` itself when nothing was folded."""
    graph = expand_loops(graph)
    structure = graph.meta.get("structure")
    if not structure:
        return graph
    nodes, edges = [], list(graph.edges)
    base = len(graph.nodes)
    for i, node in enumerate(graph.nodes):
        if STRUCTURE_INPUTS in node.attrs:
            attrs = dict(node.attrs)
            edges += [(base + int(k), i) for k in attrs.pop(STRUCTURE_INPUTS)]
            node = replace(node, attrs=attrs)
        nodes.append(node)
    nodes += [Node.from_dict(data) for data in structure["nodes"]]
    edges += [(base + int(s), base + int(d)) for s, d in structure["edges"]]
    meta = {k: v for k, v in graph.meta.items() if k != "structure"}
    left = int(meta.get("constant_macs", 0)) - int(structure.get("macs", 0))
    if left > 0:
        meta["constant_macs"] = left
    else:
        meta.pop("constant_macs", None)
    return ArchGraph(nodes, sorted(set(edges)), meta).canonicalize()
