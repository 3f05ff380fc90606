"""Encoder inputs from a canonical graph: operation ids, numeric node attributes, edges, motifs.

Pure numpy, so that the zoo can be featurised once and cached without importing torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from narcli.encode.motifs import MotifSet, sample_motifs
from narcli.graph.arch_graph import ArchGraph
from narcli.graph.vocab import OPS

OP_NAMES = sorted(OPS) + ["unknown"]
OP_INDEX = {op: i for i, op in enumerate(OP_NAMES)}
NUMERIC = ("log_channels", "log_width", "kernel", "stride", "log_groups", "log_size", "log_params")
MAX_NODES = 150_000  # larger graphs are refused: featurising them would take minutes


class GraphTooLarge(ValueError):
    """A graph beyond MAX_NODES."""


@dataclass
class EncodedGraph:
    """Everything the encoders read about one graph, as flat arrays."""

    ops: np.ndarray  # (n,) int64 operation index
    numeric: np.ndarray  # (n, len(NUMERIC)) float32
    edges: np.ndarray  # (2, e) int64, source -> target
    motif_of: np.ndarray  # (n,) int64, the motif instance each node belongs to
    macro_edges: np.ndarray  # (2, m) int64 between motif instances
    wl_index: np.ndarray  # (w,) int64 buckets of the graph's Weisfeiler-Lehman subtree features
    wl_count: np.ndarray  # (w,) float32 their counts

    @property
    def num_nodes(self) -> int:
        return int(self.ops.shape[0])

    @property
    def num_motifs(self) -> int:
        return int(self.motif_of.max()) + 1 if self.num_nodes else 0


def op_index(op: str) -> int:
    return OP_INDEX.get(op, OP_INDEX["unknown"])


def encode_graph(graph: ArchGraph, motifs: MotifSet | None = None) -> EncodedGraph:
    """Featurise `graph` (`motifs`: its motif set, when already sampled); an empty graph becomes
    one `unknown` node so every model has an embedding."""
    if graph.num_nodes > MAX_NODES:
        raise GraphTooLarge(f"the graph has {graph.num_nodes:,} nodes; the encoder takes at most "
                            f"{MAX_NODES:,}")
    if graph.num_nodes == 0:
        graph, motifs = ArchGraph([_unknown_node()], []), None
    ops, numeric, edges = node_arrays(graph)
    motifs = motifs or sample_motifs(graph)
    motif_of = np.array(motifs.node_instance, dtype=np.int64)
    macro = np.array(motifs.macro_edges, dtype=np.int64).reshape(-1, 2).T.copy()
    wl_index, wl_count = wl_features(ops, edges)
    return EncodedGraph(ops, numeric, edges, motif_of, macro, wl_index, wl_count)


def node_arrays(graph: ArchGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ops, numeric, edges) as `encode_graph` has them, without motifs or WL features (cheap)."""
    if graph.num_nodes == 0:
        graph = ArchGraph([_unknown_node()], [])
    ops = np.array([op_index(n.op) for n in graph.nodes], dtype=np.int64)
    numeric = np.array([_numeric(n) for n in graph.nodes], dtype=np.float32)
    edges = np.array(graph.edges, dtype=np.int64).reshape(-1, 2).T.copy()
    return ops, numeric, edges


WL_DIM = 4096
WL_ROUNDS = 3
# bump when what encode_graph produces changes: cached features are keyed by it (6: attention projections, padding, relu6)
FEATURES_VERSION = 6

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_PARENT, _CHILD = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD6E8FEB86659FD93)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise: a well-spread 64-bit hash of each value."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def wl_features(labels: np.ndarray, edges: np.ndarray, rounds: int = WL_ROUNDS,
                dim: int = WL_DIM) -> tuple[np.ndarray, np.ndarray]:
    """Weisfeiler-Lehman subtree features: node labels after 0..`rounds` refinements over parents
    and children, hashed into `dim` buckets; returned sparse (buckets, counts).

    A refined label hashes the node's label with the multiset of its parents' labels and the
    multiset of its children's, each multiset hashed as a sum of element hashes (order-free, so
    no sorting), all in vectorised uint64 arithmetic that wraps around by design.
    """
    labels = _mix(np.asarray(labels, dtype=np.int64).astype(np.uint64))
    source, target = edges  # (2, e), as encode_graph lays them out
    buckets = []
    with np.errstate(over="ignore"):
        for r in range(rounds + 1):
            buckets.append(_mix(labels ^ np.uint64(r + 1) * _PARENT) % np.uint64(dim))
            if r < rounds:
                from_parents = np.zeros_like(labels)
                from_children = np.zeros_like(labels)
                np.add.at(from_parents, target, _mix(labels[source] ^ _PARENT))
                np.add.at(from_children, source, _mix(labels[target] ^ _CHILD))
                labels = _mix(labels * _M1 + _mix(from_parents) + _mix(from_children ^ _CHILD))
    index, count = np.unique(np.concatenate(buckets).astype(np.int64), return_counts=True)
    return index, count.astype(np.float32)


SKETCH_LABELS = ("ops", "ops+width", "coarse")  # node labels the WL features of a retrieval sketch may start from
DECODER = "decoder"  # the decoder sketch's WL features: coarse labels over the part after the deepest feature map


def wl_dense(graph: EncodedGraph, labels: str = "ops", dim: int = WL_DIM) -> np.ndarray:
    """The WL features as a log-count vector with unit length, from operation labels (as stored)
    or from operation + feature-width labels (`width_labels`, computed here)."""
    if labels == "ops":
        index, count = graph.wl_index, graph.wl_count
    elif labels == "ops+width":
        index, count = wl_features(width_labels(graph), graph.edges, dim=dim)
    elif labels == "coarse":
        index, count = wl_features(coarse_labels(graph), graph.edges, dim=dim)
    elif labels == DECODER:
        index, count = decoder_wl(graph, dim)
    else:
        raise ValueError(f"unknown WL labels {labels!r}; use one of {', '.join(SKETCH_LABELS)}")
    out = np.zeros(dim, dtype=np.float32)
    out[index] = np.log1p(count)
    norm = float(np.linalg.norm(out))
    return out / norm if norm else out


def _feature_maps(graph: EncodedGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per node: channels, last dimension and size, read back from the numeric attributes
    (ln(1 + value) / 8, and ln(1 + size) / 16), and whether the node is a spatial feature map."""
    numeric = graph.numeric.astype(np.float64)
    channels, last = np.expm1(numeric[:, 0] * 8), np.expm1(numeric[:, 1] * 8)
    size = np.expm1(numeric[:, 5] * 16)
    # with batch 1, only a tensor with spatial dimensions holds more than channels x last values
    return channels, last, size, size > 1.5 * channels * last


def width_labels(graph: EncodedGraph) -> np.ndarray:
    """One label per node: its operation and its feature width to half a natural-log step.

    The feature width is the channel count of a feature map (N, C, H, W, ...) and the last
    dimension otherwise (a transformer's hidden size), so it does not follow the input's
    resolution or sequence length (only nodes shaped like the input itself, e.g. token ids, do).
    WL over these labels tells apart graphs of one structure at different sizes, which ranked
    the right family first more often on validation (README). A grouped convolution is marked as
    such (depthwise ones are their own operation already).
    """
    channels, last, size, spatial = _feature_maps(graph)
    width = np.where(spatial, channels, last)
    # a grouped convolution (ResNeXt) is not a plain one of the same width (a wide ResNet)
    grouped = _CONVOLUTIONS[graph.ops] & (np.expm1(graph.numeric[:, 4].astype(np.float64) * 8) > 1.5)
    return graph.ops * 1000 + np.rint(2 * np.log1p(width)).astype(np.int64) + 500 * grouped


MIN_DECODER_NODES = 16  # fewer nodes after the deepest feature map are a classifier's head, not a decoder


def decoder_part(graph: EncodedGraph) -> np.ndarray | None:
    """Which nodes come after the deepest feature map: a mask, or None for a graph with no spatial
    feature maps or fewer than MIN_DECODER_NODES after them (a classifier's pooled head names no
    design: there the whole graph stands in, `decoder_wl`).

    A segmentation model is an encoder (most of its nodes) and a decoder that names its family
    (a U-Net and an FPN over one ResNet share 80-95 % of their graph). The deepest feature map is
    the last node at the smallest spatial size; the encoder is it and every node it depends on;
    the rest is the decoder (a U-Net's up-path, an FPN's pyramid, a detector's transformer), found
    from shapes alone, so it works on code nobody labelled.
    """
    channels, _, size, spatial = _feature_maps(graph)
    if not spatial.any():
        return None
    area = np.where(spatial, size / np.maximum(channels, 1.0), np.inf)
    deepest = int(np.flatnonzero(area <= area.min() * 1.05).max())  # log-rounded sizes: a tolerance
    encoder = np.zeros(graph.num_nodes, bool)
    encoder[deepest] = True
    source, target = graph.edges
    # edges run from lower to higher index, so one sweep by falling target finds every ancestor
    for j in np.argsort(-target, kind="stable"):
        if encoder[target[j]]:
            encoder[source[j]] = True
    return None if (~encoder).sum() < MIN_DECODER_NODES else ~encoder


def decoder_wl(graph: EncodedGraph, dim: int = WL_DIM) -> tuple[np.ndarray, np.ndarray]:
    """WL features (coarse labels) of the decoder part's own subgraph; the whole graph's when
    `decoder_part` finds none (a classifier, a language model), so every graph has a decoder sketch."""
    part = decoder_part(graph)
    if part is None:
        return wl_features(coarse_labels(graph), graph.edges, dim=dim)
    kept = np.flatnonzero(part)
    renumber = np.full(graph.num_nodes, -1, dtype=np.int64)
    renumber[kept] = np.arange(len(kept))
    source, target = graph.edges
    inside = part[source] & part[target]
    edges = np.stack([renumber[source[inside]], renumber[target[inside]]])
    return wl_features(coarse_labels(graph)[kept], edges, dim=dim)


# Coarse operation classes for the robust sketch: what an author may swap without changing the
# design (one activation for another, one normalisation for another, how a pool is spelled).
_GATES = {"sigmoid": "sigmoid", "hard_sigmoid": "sigmoid", "softmax": "softmax", "log_softmax": "softmax",
          "tanh": "tanh", "glu": "glu"}


def _coarse_op(op: str) -> str:
    category = OPS.get(op)
    if category == "activation":
        return _GATES.get(op, "activation")
    if category == "normalization":
        return "normalization"
    if op.startswith("global_"):
        return "global_pool"
    if category == "pooling":
        return "max_pool" if "max" in op else "avg_pool"
    if op in ("matmul", "bmm", "einsum"):
        return "matmul"
    return op


COARSE_OPS = sorted({_coarse_op(op) for op in OP_NAMES})
_COARSE_OF = np.array([COARSE_OPS.index(_coarse_op(op)) for op in OP_NAMES], dtype=np.int64)
_CONVOLUTIONS = np.array([OPS.get(op) == "convolution" for op in OP_NAMES])


def coarse_labels(graph: EncodedGraph) -> np.ndarray:
    """One label per node for the robust sketch: its coarse operation class (`_coarse_op`), and for
    a convolution whether its kernel is 1 or larger; no widths, so a CIFAR-width or a 3-stage
    re-implementation still shares most of its subtrees with the library design."""
    kernel = np.rint(graph.numeric[:, 2] * 7) > 1
    return _COARSE_OF[graph.ops] * 4 + np.where(_CONVOLUTIONS[graph.ops], 1 + kernel, 0)


def _unknown_node():
    from narcli.graph.arch_graph import Node

    return Node("unknown")


def _numeric(node) -> list[float]:
    shape = [d for d in (node.shape or []) if isinstance(d, int) and d > 0]
    channels = shape[1] if len(shape) >= 2 else (shape[0] if shape else 0)
    width = shape[-1] if shape else 0
    size = math.prod(shape) if shape else 0
    attrs = node.attrs
    return [
        math.log1p(channels) / 8, math.log1p(width) / 8,
        _first(attrs.get("kernel")) / 7, _first(attrs.get("stride")) / 4,
        math.log1p(_first(attrs.get("groups"))) / 8,
        math.log1p(size) / 16, math.log1p(node.params) / 16,
    ]


def _first(value) -> float:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else 0
    return float(value) if isinstance(value, (int, float)) else 0.0
