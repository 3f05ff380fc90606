"""A canonical graph as predictor input: per node its operation and numeric attributes (the
encoder's seven, plus log MACs), the edges, and a few whole-model figures (`GLOBALS`).

Pure numpy: the bundled predictor runs without torch (`network.forward_numpy`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GLOBALS = ("log_params", "log_macs", "log_activations", "log_pixels", "log_nodes", "log_depth")


@dataclass
class GraphInput:
    ops: np.ndarray  # (n,) int64 operation index
    numeric: np.ndarray  # (n, 8) float32
    edges: np.ndarray  # (2, e) int64, source -> target
    figures: np.ndarray  # (len(GLOBALS),) float32

    @property
    def num_nodes(self) -> int:
        return int(self.ops.shape[0])


def graph_input(graph, macs: int | None = None, params: int | None = None) -> GraphInput:
    """Featurise an ArchGraph. `macs` / `params`: the model's own figures when they differ from the
    stored graph's (zoo variants that share one graph at another input size)."""
    from narcli.encode.features import encode_graph

    encoded = encode_graph(graph)
    node_macs = np.array([[math.log1p(max(n.macs, 0)) / 24] for n in graph.nodes] or [[0.0]], dtype=np.float32)
    numeric = np.concatenate([encoded.numeric, node_macs[: encoded.num_nodes]], axis=1).astype(np.float32)
    graph_macs = max(graph.macs, 1)
    macs = graph.macs if macs is None else macs
    params = graph.params if params is None else params
    activations = sum(math.prod(d for d in (n.shape or []) if isinstance(d, int) and d > 0)
                      for n in graph.nodes if n.shape) * (max(macs, 1) / graph_macs)
    figures = np.array([
        math.log1p(max(params, 0)) / 20, math.log1p(max(macs, 0)) / 25, math.log1p(activations) / 20,
        math.log1p(input_pixels(graph)) / 12, math.log1p(graph.num_nodes) / 8, math.log1p(graph.depth) / 7,
    ], dtype=np.float32)
    return GraphInput(encoded.ops, numeric, encoded.edges, figures)


def input_pixels(graph) -> int:
    """Height x width of the first image-shaped input (N, C, H, W), 0 when there is none."""
    for node in graph.nodes:
        if node.op == "input" and node.shape and len(node.shape) == 4:
            return int(node.shape[2]) * int(node.shape[3])
    return 0


def image_input(graph) -> tuple[int, int, int] | None:
    """(channels, height, width) when the graph's only input is an image batch, else None."""
    inputs = [n for n in graph.nodes if n.op == "input"]
    if len(inputs) != 1 or not inputs[0].shape or len(inputs[0].shape) != 4:
        return None
    _, c, h, w = inputs[0].shape
    return int(c), int(h), int(w)


def output_classes(graph) -> int | None:
    """The width of the single output when it is a (batch, classes) vector, else None."""
    outputs = [n for n in graph.nodes if n.op == "output"]
    if len(outputs) != 1:
        return None
    parents = graph.parents()[graph.nodes.index(outputs[0])]
    shape = outputs[0].shape or (graph.nodes[parents[0]].shape if len(parents) == 1 else None)
    if shape and len(shape) == 2:
        return int(shape[1])
    return None
