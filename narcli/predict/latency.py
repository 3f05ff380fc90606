"""The reference-CPU latency head: a latency for any architecture, with numpy alone at run time.

Eager PyTorch runs a model as one kernel per operation, so a model's latency is close to the sum
of its operations' costs. Each node costs MACs × a compute rate + elements read and written × a
memory rate + a call overhead; a small MLP over the node's operation (an embedding) and its sizes
(MACs, elements, parameters, channels, kernel, stride, groups, rank, whether it starts a module
call) sets the three rates within a factor e^SPREAD of learnt base rates. The prediction is
log(Σ node costs + a fixed overhead), plus a bounded whole-graph correction (at most e^±GLOBAL_SPREAD)
from per-kind MAC and node counts. Being additive over operations, it carries over to families it
never saw: a U-Net is convolutions, up-samplings and concatenations whose costs the classifiers and
segmenters already taught it.

It applies when the graph is of a kind and size the reference dataset covers:
- the operations it never measured hold at most `UNSEEN_SHARE` of the model's MACs and nodes;
- its MACs, parameters and node count lie within the dataset's range (a factor `SIZE_MARGIN` beyond
  the largest and smallest measured; beyond that the answer says "out of range").
The interval is split-conformal on families held out from a second fit (whole families, so it holds
for a new design rather than a sibling of a training one); the shipped head is fitted on every family,
and the held-out fit is kept beside it (`HELD_OUT_FOLDER`) for figures about designs it never saw."""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import NarError
from narcli.graph.structure_idioms import as_run
from narcli.fsutil import write_bytes, write_text
from narcli.predict.latency_parts import (DENSE_MACS, DISPATCH_MS, convolution_leaves_gemm_over_one_thread,
                                          convolution_runs_as_gemm, dispatch_calls, parallel_share, recurrent_steps)

HEAD_NAME = "reference"
COLUMN = "reference-cpu"
GPU_HEAD_NAME, GPU_COLUMN = "reference-gpu", "reference-cuda"  # the same head trained on `nar bench --zoo --device cuda`
GPU_FOLDER = "cuda"  # beside the CPU head: narcli/data/cuda/latency.{json,safetensors}
# beside each head, the same head fitted without the families that set its interval (`nar eval calibration`)
HELD_OUT_FOLDER = "held-out"
FILES = ("latency.json", "latency.safetensors")
NUMERIC = 13  # per-node numeric features, see node_features
UNSEEN_SHARE = 0.1
SIZE_MARGIN = 2.0
CARD_VERSION = 5  # 2: kindred operations share rates, views move no memory (`cost_op`); 3: interpolations,
#                   strided copies after folded permutes (`node_features`); 4: reparametrised weights,
#                   gathers at index_select's rates; 5: a slice costs one dispatch (SLICE_CALL_MS)
# Per-operation priors. An operation the reference set holds few of gets rates from what little it
# saw, and those can be wild: PyG's PNA clamps a few thousand elements, which the head costed at
# 44 ns an element (3x the whole model's measured time). Operations that cost the same per unit of
# work share one set of rates (an element-wise clamp is a relu, a masked fill an add), and a slice
# is a view: it moves no memory of its own (what reads it pays). GRUs costed with an LSTM's rates,
# or with a call overhead per time step, scored worse on the held-out calibration families
# (README, "The reference CPU"): their own rates stay.
KINDRED = {
           **dict.fromkeys(("clamp", "hardtanh", "relu6", "threshold", "abs", "neg", "sign", "round",
                            "leaky_relu", "prelu"), "relu"),
           **dict.fromkeys(("maximum", "minimum", "where", "masked_fill", "compare", "logical", "equal",
                            "not_equal", "sub"), "add"),
           # the reference set's gathers are a few small ones (position ids), which left Reformer's hashed
           # attention costed at 3x its time; PyG's index_selects gather rows at scale the same way
           "gather": "index_select"}
VIEWS = ("slice", "split")
# A slice runs no kernel: it costs one dispatch, a fixed figure rather than a learnt rate. Learnt, the
# reference set's few slices (0.2 % of its time) took a call cost of 90 µs in the median, so a
# hand-written TCN's 13 causal-padding slices (`conv(x)[..., :-pad]`) were costed at 1.5 ms of a
# model that runs in 1.9 ms. A slice measured 1.1 µs on the reference machine's VM kind; 2 µs leaves
# room for the Python around it. On the calibration families, 3 splits x 3 initialisations
# (benchmarks/tune_latency_rules.py): MAPE 14.89 % -> 14.18 %. Splits keep learnt rates: fixed as
# well, they cost 1.6 points on one split's calibration families (DPN-encoder segmenters, whose
# channel splits feed dense concatenations)
FIXED_CALL_OPS = ("slice",)
SLICE_CALL_MS = 0.002


# operations this torch traces under a name the vocabulary lacks; the canonical graph keeps the name
# (it is part of the graph's hash), the head costs them as what they are. Before, smp's 3,500
# interpolations shared the rates of every other unknown operation (FFTs, acos, sorting).
TRACED_AS_UNKNOWN = {"unknown:interpolate": "upsample_linear", "unknown:addcmul": "add", "unknown:argsort": "sort"}


def cost_op(op: str) -> str:
    """The operation whose rates `op` is costed with (itself unless it has a kindred one)."""
    op = TRACED_AS_UNKNOWN.get(op, op)
    return KINDRED.get(op, op)
# the reference dataset's files (written by `nar bench --zoo --export`, bundled in narcli/data)
CSV_NAME, CARD_NAME = "reference-latency.csv", "reference-latency.json"
COLUMNS = ("graph_hash", "model", "source", "family", "coarse", "params", "macs", "median_ms", "iqr_ms", "runs")


def read_reference(folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows and card of a reference dataset folder."""
    import csv

    path, card_path = folder / CSV_NAME, folder / CARD_NAME
    if not path.exists() or not card_path.exists():
        raise NarError(f"{folder} has no {CSV_NAME} and {CARD_NAME}; write them with `nar bench --zoo --export DIR`")
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise ValueError(f"missing column {missing[0]!r}")
            rows = list(reader)
        for row in rows:
            for key in ("params", "macs", "runs"):
                row[key] = int(row[key])
            for key in ("median_ms", "iqr_ms"):
                row[key] = float(row[key])
        card = json.loads(card_path.read_text())
    except (KeyError, ValueError, TypeError, OSError, csv.Error, UnicodeDecodeError) as exc:
        raise NarError(f"{path} is not a reference latency dataset ({str(exc)[:100]})") from None
    return rows, card


def node_features(graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(op indices (n,), numeric (n, NUMERIC) float32, work (n, 2): MACs and elements read +
    written) of a canonical graph."""
    from narcli.encode.features import _numeric, op_index

    nodes = graph.nodes or []
    sizes = [_elements(n.shape) for n in nodes]
    inputs = [0.0] * len(nodes)
    # a node whose module differs from all its parents' starts a module call: Python overhead in eager mode
    entered = [True] * len(nodes)
    for src, dst in graph.edges:
        inputs[dst] += sizes[src]
        if nodes[src].scope == nodes[dst].scope:
            entered[dst] = False
        if _relaid(nodes[src].shape, nodes[dst].shape):
            inputs[dst] += 2 * sizes[src]  # the strided copy a folded permute leaves to its reader: read + write
    ops = np.array([op_index(cost_op(n.op)) for n in nodes] or [op_index("unknown")], dtype=np.int64)
    rows, work = [], []
    for node, size, incoming, new_call in zip(nodes, sizes, inputs, entered):
        macs = max(node.macs, 0)
        rank = len(node.shape or [])
        rows.append(_numeric(node) + [math.log1p(macs) / 24, math.log1p(incoming) / 20,
                                      math.log1p(macs / max(size, 1)) / 10, rank / 5, float(macs > 0),
                                      float(new_call and bool(node.scope))])
        # a reparametrised weight (weight standardisation, weight norm) is computed again at every call
        reparam = float(node.attrs.get("reparam_elements", 0))
        work.append((float(macs), 0.0 if node.op in VIEWS else size + incoming + node.params + reparam))
    numeric = np.array(rows or [[0.0] * NUMERIC], dtype=np.float32)
    return ops, numeric, np.array(work or [(0.0, 0.0)], dtype=np.float64)


def _relaid(parent, child) -> bool:
    """Whether a tensor of shape `child` was computed from one of shape `parent` whose channels sat
    at the other end (a linear layer's (B, HW, C) read as (B, C, H, W), or back): a permute the
    canonical graph folds away, paid for as a strided copy."""
    if not parent or not child or len(parent) < 3 or len(child) < 3:
        return False
    if not all(isinstance(d, int) for d in (*parent, *child)):
        return False
    if len(parent) != len(child):  # (B, HW, C) <-> (B, C, H, W)
        return ((parent[-1] == child[1] and parent[1] != child[1])
                or (parent[1] == child[-1] and parent[-1] != child[-1]))
    # (B, C, H, W) <-> (B, H, W, C): the same elements, channels moved from one end to the other
    return (parent[1] == child[-1] != parent[-1] and sorted(parent) == sorted(child))


def _elements(shape) -> float:
    dims = [d for d in (shape or []) if isinstance(d, int) and d > 0]
    return float(math.prod(dims)) if dims else 0.0


def size_figures(graph, macs: int | None = None, params: int | None = None) -> dict[str, float]:
    return {"macs": float(graph.macs if macs is None else macs), "params": float(graph.params if params is None else params),
            "nodes": float(graph.num_nodes)}


# -- the network in numpy ---------------------------------------------------------------------------
def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-np.clip(x, -30, 30)))


KINDS = ("convolution", "linear", "normalization", "activation", "elementwise", "reduction", "pooling",
         "structure", "recurrent")
GLOBAL_FEATURES = 4 + 2 * len(KINDS)
GLOBAL_SPREAD = 1.0  # the whole-graph correction moves a prediction by at most e^±1


def graph_features(graph) -> np.ndarray:
    """Whole-model figures and, per kind of operation, log MACs and log node count."""
    from narcli.graph.vocab import OPS

    macs: dict[str, float] = {}
    count: dict[str, float] = {}
    for node in graph.nodes:
        kind = OPS.get(node.op, "other")
        macs[kind] = macs.get(kind, 0.0) + max(node.macs, 0)
        count[kind] = count.get(kind, 0.0) + 1
    figures = [graph.macs, graph.params, graph.num_nodes, graph.depth]
    figures += [macs.get(k, 0.0) for k in KINDS] + [count.get(k, 0.0) for k in KINDS]
    return np.log1p(np.array(figures, dtype=np.float64))


def whole_graph_correction(weights: dict[str, np.ndarray], figures: np.ndarray) -> float:
    if "g0" not in weights:
        return 0.0
    z = (figures - weights["global_mean"]) / weights["global_std"]
    hidden = _silu(weights["g0"] @ z + weights["gb0"])
    return float(GLOBAL_SPREAD * np.tanh((weights["g1"] @ hidden + weights["gb1"])[0] / GLOBAL_SPREAD))


# each node costs MACs / compute rate + elements / memory rate + a per-call overhead; the network
# sets the three (per operation and shape) within a factor e^SPREAD of learnt base rates
SPREAD = 4.0


def node_costs(weights: dict[str, np.ndarray], ops: np.ndarray, numeric: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Each node's cost in ms."""
    return node_cost_terms(weights, ops, numeric, work).sum(1)


def node_cost_terms(weights: dict[str, np.ndarray], ops: np.ndarray, numeric: np.ndarray,
                    work: np.ndarray) -> np.ndarray:
    """Each node's cost in ms as (compute, memory, call overhead): (n, 3)."""
    x = np.concatenate([weights["embed"][ops], numeric], axis=1)
    i = 0
    while f"w{i}" in weights:
        x = x @ weights[f"w{i}"].T + weights[f"b{i}"]
        if f"w{i + 1}" in weights:
            x = _silu(x)
        i += 1
    logs = weights["base"] + SPREAD * np.tanh(x / SPREAD)
    rates = np.exp(logs)
    calls = np.where(np.isin(ops, fixed_call_indices()), SLICE_CALL_MS, rates[:, 2])
    return np.stack([work[:, 0] * rates[:, 0], work[:, 1] * rates[:, 1], calls], axis=1)


@functools.lru_cache(maxsize=1)
def fixed_call_indices() -> np.ndarray:
    """The operation indices (`node_features`' ops) of FIXED_CALL_OPS, whose call costs SLICE_CALL_MS."""
    from narcli.encode.features import op_index

    return np.array(sorted({op_index(cost_op(op)) for op in FIXED_CALL_OPS}), dtype=np.int64)


def graph_log_latency(weights: dict[str, np.ndarray], ops: np.ndarray, numeric: np.ndarray, work: np.ndarray,
                      figures: np.ndarray | None = None, count: np.ndarray | None = None) -> float:
    """log ms of a graph; `count`: how many nodes each row stands for (deduplicated rows in training)."""
    costs = node_costs(weights, ops, numeric, work)
    if count is not None:
        costs = costs * count
    total = float(np.log(costs.sum() + np.exp(weights["overhead"][0])))
    return total + (whole_graph_correction(weights, figures) if figures is not None else 0.0)


@dataclass
class LatencyHead:
    weights: dict[str, np.ndarray]
    half: float  # 90 % interval half-width, log space
    level: float
    device: dict[str, Any]  # the reference machine's fingerprint
    ranges: dict[str, list[float]]  # figure -> [low, high] measured
    seen_ops: set[str]
    metrics: dict[str, Any] = field(default_factory=dict)
    trained_on: str = ""
    fingerprint: str = ""

    @property
    def gpu(self) -> bool:
        return self.device.get("kind") == "cuda"

    @property
    def name(self) -> str:
        """The head's name in prediction rows: "reference" (CPU) or "reference-gpu"."""
        return GPU_HEAD_NAME if self.gpu else HEAD_NAME

    @property
    def column(self) -> str:
        return GPU_COLUMN if self.gpu else COLUMN

    @property
    def title(self) -> str:
        if self.gpu:
            return f"reference GPU ({self.device.get('name', '?')}, batch 1, fp32)"
        threads = self.device.get("threads", 1)
        return f"reference CPU ({self.device.get('name', '?')}, {threads} thread{'s' * (threads != 1)})"

    def why_not(self, graph, figures: dict[str, float]) -> tuple[str, str]:
        """(status, reason) when the head does not answer for `graph`, else ("", "")."""
        for name, value in figures.items():
            low, high = self.ranges.get(name, (0.0, math.inf))
            if value > high * SIZE_MARGIN or (low > 0 and value < low / SIZE_MARGIN):
                return "out of range", range_reason(name, value, high if value > high else low, value > high)
        unseen = [n for n in graph.nodes if cost_op(n.op) not in self.seen_ops]
        if unseen:
            macs = sum(max(n.macs, 0) for n in unseen) / max(sum(max(n.macs, 0) for n in graph.nodes), 1)
            share = len(unseen) / max(len(graph.nodes), 1)
            if macs > UNSEEN_SHARE or share > UNSEEN_SHARE:
                names = ", ".join(sorted({n.op for n in unseen})[:4])
                return "n/a", f"its {names} operations were never measured in the reference set"
        return "", ""

    def predict(self, graph, macs: int | None = None, params: int | None = None) -> tuple[float, float, float] | str:
        """(value, low, high) in ms, or the reason there is none."""
        graph = as_run(graph)
        status, reason = self.why_not(graph, size_figures(graph, macs, params))
        if status:
            return f"{status}: {reason}"
        centre = graph_log_latency(self.weights, *node_features(graph), graph_features(graph))
        if macs is not None and graph.macs and macs != graph.macs:
            centre += math.log(max(macs, 1) / graph.macs)  # a zoo variant at another input size: scale by MACs
        return math.exp(centre), math.exp(centre - self.half), math.exp(centre + self.half)


    def parts(self, graph, macs: int | None = None, params: int | None = None) -> np.ndarray | None:
        """The central prediction split two ways (ms, `latency_parts`): its first len(PARTS) columns by
        kind of work, its next len(THREAD_PARTS) by how the work spreads over threads; each group sums to the
        prediction. The last column is the operation calls (`latency_parts.dispatch_calls`) times
        DISPATCH_MS, outside the prediction.
        None when the head does not answer for `graph`."""
        operations = dispatch_calls(graph)  # as traced, before `as_run` repeats a loop's body
        graph = as_run(graph)
        if self.why_not(graph, size_figures(graph, macs, params))[0]:
            return None
        ops, numeric, work = node_features(graph)
        terms = node_cost_terms(self.weights, ops, numeric, work)
        from narcli.graph.vocab import OPS

        incoming = [0.0] * len(graph.nodes)
        for src, dst in graph.edges:
            incoming[dst] += _elements(graph.nodes[src].shape)
        kinds = np.array([("linear" if convolution_runs_as_gemm(n, size) else OPS.get(n.op, ""))
                          if max(n.macs, 0) >= DENSE_MACS else "" for n, size in zip(graph.nodes, incoming)] or [""])
        convolution, matrix = kinds == "convolution", kinds == "linear"
        leaves = np.array([convolution_leaves_gemm_over_one_thread(n, size)
                           for n, size in zip(graph.nodes, incoming)] or [False])
        calls = terms[:, 2].sum() + float(np.exp(self.weights["overhead"][0]))
        spread = parallel_share(graph)
        stays = terms[:, 0] * ~leaves  # the pointwise convolutions' compute is their own thread part
        serial = stays * (1 - spread)
        steps = np.array([recurrent_steps(n) for n in graph.nodes] or [False])  # a part of their own
        out = np.array([terms[convolution, 0].sum(), terms[matrix, 0].sum(),
                        terms[~(convolution | matrix), 0].sum() + terms[:, 1].sum() + calls,
                        (stays * spread).sum() + terms[:, 1].sum(), serial[~steps].sum(), calls, serial[steps].sum(),
                        terms[leaves, 0].sum()])
        scale = math.exp(whole_graph_correction(self.weights, graph_features(graph)))
        if macs is not None and graph.macs and macs != graph.macs:
            scale *= max(macs, 1) / graph.macs
        return np.append(out * scale, operations * DISPATCH_MS)


FIGURE_UNITS = {"macs": "MACs", "params": "params", "nodes": "nodes"}


def range_reason(figure: str, value: float, bound: float, above: bool) -> str:
    """Why a size is out of the reference set's range, naming only the bound it crosses, with its
    unit: a range "(352–30 G)" read as printed backwards."""
    side = "above the largest" if above else "below the smallest"
    return f"its size, {figure_text(value, figure)}, is {side} the reference set measured ({figure_text(bound, figure)})"


def figure_text(value: float, figure: str) -> str:
    """`833 G MACs`, `6.72 B params`: parameter counts in billions say B, as model cards do."""
    billions = "B" if figure == "params" else "G"
    unit = FIGURE_UNITS.get(figure, figure)
    for suffix, size in ((billions, 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {suffix} {unit}"
    return f"{value:.0f} {unit}"


def save_head(head: LatencyHead, folder: Path) -> Path:
    from safetensors.numpy import save

    folder.mkdir(parents=True, exist_ok=True)
    weights = write_bytes(folder / FILES[1], save({k: np.ascontiguousarray(v, dtype=np.float32)
                                                   for k, v in head.weights.items()}))
    card = {"version": CARD_VERSION, "head": head.name, "column": head.column, "half": head.half, "level": head.level,
            "device": head.device, "ranges": head.ranges, "seen_ops": sorted(head.seen_ops), "metrics": head.metrics,
            "trained_on": head.trained_on, "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest()}
    path = write_text(folder / FILES[0], json.dumps(card, indent=2) + "\n")
    _load.cache_clear()
    return path


def load_head(folder: Path) -> LatencyHead | None:
    """The latency head in `folder`, None when there is none; NarError when it is damaged."""
    return _load(str(folder))


@functools.lru_cache(maxsize=4)
def _load(folder: str) -> LatencyHead | None:
    from safetensors.numpy import load_file

    card_path, weights_path = Path(folder) / FILES[0], Path(folder) / FILES[1]
    if not card_path.exists() and not weights_path.exists():
        return None
    try:
        card = json.loads(card_path.read_text())
        digest = hashlib.sha256(weights_path.read_bytes()).hexdigest()
        if card.get("version") != CARD_VERSION:
            raise ValueError(f"trained by another version of nar: card version {card.get('version')}, "
                             f"this nar reads {CARD_VERSION}")
        if card.get("weights_sha256") != digest:
            raise ValueError("the weights do not match their card")
        weights = load_file(str(weights_path))
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise NarError(f"the latency head in {folder} is unusable ({str(exc)[:120]}); reinstall nar, or retrain "
                       "with `nar train latency`") from None
    return LatencyHead(weights, float(card["half"]), float(card["level"]), card["device"],
                       {k: list(v) for k, v in card["ranges"].items()}, set(card["seen_ops"]), card.get("metrics", {}),
                       card.get("trained_on", ""), digest[:16])
