"""Synthetic canonical graphs of any size, for tests and benchmarks of the largest inputs."""

from __future__ import annotations

from narcli.graph.arch_graph import ArchGraph, Node

_BLOCK = (("conv2d", 3), ("batch_norm", 0), ("relu", 0), ("conv2d", 3), ("batch_norm", 0), ("add", 0), ("relu", 0))


def residual_stack(nodes: int, channels: int = 64) -> ArchGraph:
    """A ResNet-like chain of residual blocks with about `nodes` nodes (input, stem, blocks, head)."""
    graph_nodes = [Node("input", [1, 3, 224, 224]), Node("conv2d", attrs={"in_channels": 3, "out_channels": channels,
                                                                          "kernel": [7, 7], "stride": [2, 2]})]
    edges = [(0, 1)]
    block_start = 1
    while len(graph_nodes) + len(_BLOCK) + 3 <= max(nodes, len(_BLOCK) + 5):
        for op, kernel in _BLOCK:
            attrs = {"in_channels": channels, "out_channels": channels, "kernel": [kernel, kernel],
                     "stride": [1, 1]} if op == "conv2d" else ({"features": channels} if op == "batch_norm" else {})
            graph_nodes.append(Node(op, [1, channels, 56, 56], attrs, params=channels * channels * 9 if kernel else 0))
            edges.append((len(graph_nodes) - 2, len(graph_nodes) - 1))
            if op == "add":
                edges.append((block_start, len(graph_nodes) - 1))
        block_start = len(graph_nodes) - 1
    for op in ("global_avg_pool", "linear", "output"):
        graph_nodes.append(Node(op))
        edges.append((len(graph_nodes) - 2, len(graph_nodes) - 1))
    return ArchGraph(graph_nodes, sorted(edges))
