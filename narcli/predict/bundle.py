"""The predictor as shipped: heads (one network each, trained on one data source), their weights in
one safetensors file and a JSON model card beside it, and `predict_graph`, which answers for any
canonical graph with numpy alone.

A head applies to a graph only when (1) the graph is the kind of model its data describes (an image
model; ImageNet top-1 only for 1,000-class classifiers), and (2) the graph is within reach of the
training data: the distance from its readout vector to the nearest training graph's is at most the
head's `reach` (set on architectures held out from training, see `build`), and its whole-model
figures (params, MACs, activations, input size, nodes, depth) lie within the training range (a
CIFAR ResNet-50 has 23 M parameters; NAS-Bench-201 networks at most 1.5 M). Otherwise the row says
"n/a" or "out of range", with the reason, instead of a number.

Intervals are split-conformal: half-width = the `level` quantile of absolute errors on the held-out
calibration architectures, in the learnt space (log for timings, so intervals are relative).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import NarError
from narcli.fsutil import write_bytes, write_text
from narcli.predict.datasets import Target
from narcli.predict.inputs import GLOBALS, FIGURE_NAMES, GraphInput, describe_figure, graph_input, image_input, \
    output_classes
from narcli.predict.training import NetConfig, TrainedNet, predict_scaled

CARD_VERSION = 1
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
FIX = "reinstall nar, or retrain with `nar train predictor`"


@dataclass
class Head:
    name: str  # "nb201" | "timm"
    title: str
    trained_on: str
    targets: list[Target]
    net: TrainedNet
    conformal: np.ndarray  # (t,) interval half-widths, learnt space
    level: float
    reference: np.ndarray  # (r, 4 dim) training readouts, standardised by `scale`
    scale: np.ndarray  # (4 dim,)
    reach: float
    requires: dict[str, Any] = field(default_factory=dict)  # {"image_channels": 3, "top1_classes": 1000}
    metrics: dict[str, Any] = field(default_factory=dict)
    figures_low: np.ndarray | None = None  # (len(GLOBALS),) the training graphs' smallest whole-model figures
    figures_high: np.ndarray | None = None

    def outside(self, item: GraphInput) -> str:
        """Which whole-model figure lies outside the training range (with a 5 % margin), or ""."""
        if self.figures_low is None or self.figures_high is None:
            return ""
        margin = 0.05 * np.maximum(self.figures_high - self.figures_low, 0.02)
        for j, name in enumerate(GLOBALS):
            value = item.figures[j]
            # name the bound crossed: "(352–30 G)" read as a range printed backwards
            what = FIGURE_NAMES[name]
            if value > self.figures_high[j] + margin[j]:
                return (f"its {what} ({describe_figure(name, value)}) is above the largest this head was trained "
                        f"on ({describe_figure(name, self.figures_high[j])})")
            if value < self.figures_low[j] - margin[j]:
                return (f"its {what} ({describe_figure(name, value)}) is below the smallest this head was trained "
                        f"on ({describe_figure(name, self.figures_low[j])})")
        return ""

    def distance(self, latents: np.ndarray) -> np.ndarray:
        """Distance from each readout to its nearest training readout (per dimension, RMS)."""
        z = latents / self.scale
        out = np.empty(len(z), dtype=np.float32)
        for start in range(0, len(z), 256):
            chunk = z[start:start + 256]
            d2 = (chunk ** 2).sum(1)[:, None] - 2 * chunk @ self.reference.T + (self.reference ** 2).sum(1)[None]
            out[start:start + 256] = np.sqrt(np.maximum(d2.min(1), 0) / z.shape[1])
        return out


@dataclass
class Row:
    """One prediction (or the reason there is none) for one target."""

    head: str
    title: str
    target: Target
    value: float | None
    low: float | None
    high: float | None
    status: str  # "ok" | "out of range" | "n/a"
    reason: str
    trained_on: str

    def to_dict(self) -> dict[str, Any]:
        return {"head": self.head, "column": self.target.column, "label": self.target.label, "kind": self.target.kind,
                "unit": self.target.unit, "device": self.target.device, "batch": self.target.batch,
                "value": self.value, "low": self.low, "high": self.high, "status": self.status,
                "reason": self.reason, "trained_on": self.trained_on}


@dataclass
class Bundle:
    heads: list[Head]
    fingerprint: str
    latency: Any = None  # the reference-CPU LatencyHead (narcli.predict.latency), when shipped
    gpu_latency: Any = None  # the same head trained on a GPU's reference set, when shipped

    @property
    def latency_heads(self) -> list[Any]:
        return [h for h in (self.latency, self.gpu_latency) if h is not None]

    def devices(self) -> list[str]:
        found = {t.device for h in self.heads for t in h.targets if t.device}
        found.update(reference_target(h).device for h in self.latency_heads)
        return sorted(found)


def reference_target(head: Any = None) -> Target:
    """The target a reference latency head answers (the CPU one's when `head` is None)."""
    from narcli.predict.latency import COLUMN

    column = head.column if head is not None else COLUMN
    return Target(column, "latency", "ms", column, 1, log=True)


def save_bundle(bundle_heads: list[Head], folder: Path) -> Path:
    """Write predictor.safetensors + predictor.json into `folder`; returns the card's path."""
    from safetensors.numpy import save

    folder.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, np.ndarray] = {}
    card: dict[str, Any] = {"version": CARD_VERSION, "heads": []}
    for head in bundle_heads:
        for key, value in head.net.weights.items():
            tensors[f"{head.name}/net/{key}"] = np.ascontiguousarray(value, dtype=np.float32)
        tensors[f"{head.name}/mean"] = head.net.mean.astype(np.float32)
        tensors[f"{head.name}/std"] = head.net.std.astype(np.float32)
        tensors[f"{head.name}/conformal"] = head.conformal.astype(np.float32)
        tensors[f"{head.name}/reference"] = head.reference.astype(np.float16)
        tensors[f"{head.name}/scale"] = head.scale.astype(np.float32)
        if head.figures_low is not None and head.figures_high is not None:
            tensors[f"{head.name}/figures_low"] = head.figures_low.astype(np.float32)
            tensors[f"{head.name}/figures_high"] = head.figures_high.astype(np.float32)
        card["heads"].append({"name": head.name, "title": head.title, "trained_on": head.trained_on,
                              "targets": [t.to_dict() for t in head.targets], "config": head.net.config.to_dict(),
                              "level": head.level, "reach": head.reach, "requires": head.requires,
                              "metrics": head.metrics, "training_log": head.net.log[-3:]})
    weights = write_bytes(folder / "predictor.safetensors", save(tensors))
    card["weights_sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()
    written = write_text(folder / "predictor.json", json.dumps(card, indent=2) + "\n")
    _load.cache_clear()  # a bundle read before in this process is stale now
    return written


def load_bundle(folder: Path | None = None) -> Bundle:
    """The predictor in `folder` (default: the bundled one) with the reference latency head beside
    it when there is one; NarError in one line when missing or not matching its card."""
    from narcli.predict.latency import load_head

    from narcli.predict.latency import GPU_FOLDER

    bundle = _load(str(folder or DATA_DIR))
    latency = load_head(folder or DATA_DIR)
    gpu = load_head((folder or DATA_DIR) / GPU_FOLDER)
    if latency is None and gpu is None:
        return bundle
    # the second half names the latency heads: when only they change, `nar zoo embed` recomputes
    # only their rows
    heads = "".join(h.fingerprint[:8] for h in (latency, gpu) if h is not None)
    second = heads if gpu is None else hashlib.sha256(heads.encode()).hexdigest()[:8]
    return Bundle(bundle.heads, f"{bundle.fingerprint[:8]}{second}", latency, gpu)


@functools.lru_cache(maxsize=4)
def _load(folder: str) -> Bundle:
    from safetensors.numpy import load_file

    card_path, weights = Path(folder) / "predictor.json", Path(folder) / "predictor.safetensors"
    if not card_path.exists() or not weights.exists():
        raise NarError(f"no predictor weights in {folder} (predictor.json and predictor.safetensors); {FIX}")
    try:
        card = json.loads(card_path.read_text())
        blob = weights.read_bytes()
        if card.get("version") != CARD_VERSION or card.get("weights_sha256") != hashlib.sha256(blob).hexdigest():
            raise ValueError("the weights do not match their card")
        tensors = load_file(str(weights))
        heads = [_head(entry, tensors) for entry in card["heads"]]
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise NarError(f"the predictor in {folder} is unusable ({str(exc)[:120]}); {FIX}") from None
    return Bundle(heads, card["weights_sha256"][:16])


def _head(entry: dict[str, Any], tensors: dict[str, np.ndarray]) -> Head:
    name = entry["name"]
    prefix = f"{name}/net/"
    weights = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    config = NetConfig(**entry["config"])
    net = TrainedNet(weights, tensors[f"{name}/mean"], tensors[f"{name}/std"], config, entry.get("training_log", []))
    targets = [Target(**t) for t in entry["targets"]]
    if len(net.mean) != len(targets) or weights["head2.weight"].shape[0] != len(targets):
        raise ValueError(f"head {name}: {len(targets)} targets in the card, {len(net.mean)} in the weights")
    return Head(name, entry["title"], entry["trained_on"], targets, net, tensors[f"{name}/conformal"],
                float(entry["level"]), tensors[f"{name}/reference"].astype(np.float32), tensors[f"{name}/scale"],
                float(entry["reach"]), entry.get("requires", {}), entry.get("metrics", {}),
                tensors.get(f"{name}/figures_low"), tensors.get(f"{name}/figures_high"))


def applicability(head: Head, graph, target: Target) -> str:
    """Why `head` cannot answer `target` for `graph` ("" when it can, reach aside)."""
    channels = head.requires.get("image_channels")
    if channels:
        image = image_input(graph)
        if image is None:
            return "trained on image models; this model's input is not one image batch"
        if image[0] != channels:
            # a channels-last input (N x H x W x C) reads as H channels: say how it was read
            last = f" (read as N×C×H×W; its last dimension is {channels}: channels last?)" if image[2] == channels else ""
            return (f"trained on {channels}-channel images; this model's input has {image[0]} "
                    f"channel{'s' * (image[0] != 1)}{last}")
    classes = head.requires.get("top1_classes")
    if classes and target.kind == "accuracy":
        found = output_classes(graph)
        if found != classes:
            what = f"{found} classes" if found else "no class scores"
            return f"ImageNet top-1 is for {classes:,}-class classifiers; this model outputs {what}"
    return ""


def predict_graph(graph, bundle: Bundle | None = None, macs: int | None = None, params: int | None = None,
                  device: str | None = None, item: GraphInput | None = None) -> list[Row]:
    """Every bundled target for `graph` (only `device`'s timings when given), as rows."""
    bundle = bundle or load_bundle()
    if device is not None and device not in bundle.devices():
        from narcli.errors import UsageError

        raise UsageError(f"unknown device {device!r}; known: {', '.join(bundle.devices())}")
    item = item or graph_input(graph, macs=macs, params=params)
    rows: list[Row] = []
    for head in bundle.heads:
        chosen = [t for t in head.targets if device is None or t.kind == "accuracy" or t.device == device]
        if not chosen:
            continue
        predicted, latents = predict_scaled(head.net, [item])
        far = float(head.distance(latents)[0])
        beyond = head.outside(item)
        for target in chosen:
            j = head.targets.index(target)
            reason = applicability(head, graph, target)
            if reason:
                rows.append(Row(head.name, head.title, target, None, None, None, "n/a", reason, head.trained_on))
            elif beyond:
                rows.append(Row(head.name, head.title, target, None, None, None, "out of range", beyond, head.trained_on))
            elif far > head.reach:
                rows.append(Row(head.name, head.title, target, None, None, None, "out of range",
                                f"unlike every model this head was trained on (distance {far:.2f} > {head.reach:.2f})",
                                head.trained_on))
            else:
                centre, half = float(predicted[0, j]), float(head.conformal[j])
                value, low, high = (float(target.inverse(np.array(v))) for v in (centre, centre - half, centre + half))
                rows.append(Row(head.name, head.title, target, value, low, high, "ok", "", head.trained_on))
    for latency in bundle.latency_heads:
        if device is None or device == reference_target(latency).device:
            rows.append(reference_row(latency, graph, macs, params))
    return rows


def reference_row(head: Any, graph, macs: int | None = None, params: int | None = None) -> Row:
    """The reference-CPU latency of `graph` as a row (or why there is none)."""
    answer = head.predict(graph, macs, params)
    if isinstance(answer, str):
        status, reason = answer.split(": ", 1)
        return Row(head.name, head.title, reference_target(head), None, None, None, status, reason, head.trained_on)
    value, low, high = answer
    return Row(head.name, head.title, reference_target(head), value, low, high, "ok", "", head.trained_on)
