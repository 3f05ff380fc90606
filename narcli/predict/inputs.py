"""A canonical graph as predictor input: per node its operation and numeric attributes (the
encoder's seven, plus log MACs), the edges, and a few whole-model figures (`GLOBALS`).

Pure numpy: the bundled predictor runs without torch (`network.forward_numpy`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GLOBALS = ("log_params", "log_macs", "log_activations", "log_pixels", "log_nodes", "log_depth")
SCALES = {"log_params": 20, "log_macs": 25, "log_activations": 20, "log_pixels": 12, "log_nodes": 8, "log_depth": 7}
FIGURE_NAMES = {"log_params": "parameter count", "log_macs": "MACs", "log_activations": "activation count",
                "log_pixels": "input size", "log_nodes": "node count", "log_depth": "depth"}


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
    from narcli.encode.features import node_arrays

    ops, numeric, edges = node_arrays(graph)
    node_macs = np.array([[math.log1p(max(n.macs, 0)) / 24] for n in graph.nodes] or [[0.0]], dtype=np.float32)
    numeric = np.concatenate([numeric, node_macs[: len(ops)]], axis=1).astype(np.float32)
    graph_macs = max(graph.macs, 1)
    macs = graph.macs if macs is None else macs
    params = graph.params if params is None else params
    activations = sum(math.prod(d for d in (n.shape or []) if isinstance(d, int) and d > 0)
                      for n in graph.nodes if n.shape) * (max(macs, 1) / graph_macs)
    raw = (max(params, 0), max(macs, 0), activations, input_pixels(graph), graph.num_nodes, graph.depth)
    figures = np.array([math.log1p(v) / SCALES[name] for name, v in zip(GLOBALS, raw)], dtype=np.float32)
    return GraphInput(ops, numeric, edges, figures)


def describe_figure(name: str, scaled: float) -> str:
    """A whole-model figure back in its own units: "23.5 M", "32×32", "152"."""
    value = math.expm1(float(scaled) * SCALES[name])
    if name == "log_pixels":
        side = math.sqrt(max(value, 0))
        return f"{side:.0f}×{side:.0f} px"
    if name in ("log_nodes", "log_depth"):
        return f"{value:.0f}"
    billions = "B" if name == "log_params" else "G"  # parameter counts in billions say B, as model cards do
    for unit, size in ((billions, 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f}"


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
