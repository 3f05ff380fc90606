"""Labelled data for the predictor, joined to canonical graphs.

- NAS-Bench-201 (`accuracy.csv`, `latency_ms.csv`, rows by `arch_str`): graphs from a zoo database
  the `nasbench201` source (plugin `nar-nas`) was built into.
- timm (`results-imagenet.csv`, `benchmark-infer-*.csv`): graphs from the bundled zoo, by name.

Each target is a `Target`: the column, what it measures, its unit and the transform it is learnt in
(log for timings, so errors are relative)."""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from narcli.errors import NarError, UsageError
from narcli.predict.inputs import GraphInput, graph_input

NB201_ACCURACY = ("cifar10-test", "cifar100-test", "imagenet-test")
NB201_VALIDATION = ("cifar10-val", "cifar100-val", "imagenet-val")  # NAR-Former's training labels
NB201_OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
ERROR_FLOOR = 0.05  # percentage points: an error rate below this is learnt as this
# what each accuracy column is, as `nar predict` shows it (the 12-epoch results are another label)
NB201_LABELS = {"cifar10-test": "CIFAR-10 test accuracy, 200 epochs",
                "cifar100-test": "CIFAR-100 test accuracy, 200 epochs",
                "imagenet-test": "ImageNet16-120 test accuracy, 200 epochs"}
# columns of latency_ms.csv whose devices are GPUs or server CPUs (the 19 columns)
SERVER_PREFIXES = ("1080ti", "2080ti", "titan", "gold_", "silver_")


@dataclass
class Target:
    column: str
    kind: str  # "accuracy" | "latency" | "throughput"
    unit: str  # "%" | "ms" | "img/s"
    device: str  # "" for accuracy
    batch: int | None = None
    log: bool = False  # learnt as log(value)
    label: str = ""  # what the value is, in words ("CIFAR-10 test accuracy, 200 epochs"); "" = the column
    # learnt as -log(100 - value): accuracies in %, so the crowded top (90-94 % on CIFAR-10) is spread
    # and the failed cells (10 %) are not what the loss is about
    log_error: bool = False

    def to_dict(self) -> dict:
        return asdict(self)

    def forward(self, values: np.ndarray) -> np.ndarray:
        if self.log_error:
            return -np.log(np.maximum(100.0 - np.asarray(values, dtype=np.float64), ERROR_FLOOR))
        return np.log(np.maximum(values, 1e-3)) if self.log else values

    def inverse(self, values: np.ndarray) -> np.ndarray:
        if self.log_error:
            return 100.0 - np.exp(-np.asarray(values, dtype=np.float64))
        return np.exp(values) if self.log else values


@dataclass
class Dataset:
    name: str  # "nb201" | "timm"
    names: list[str]  # one per row: arch_str / timm model name
    groups: list[str]  # graph hash per row: rows of one group are one architecture
    items: list[GraphInput]
    targets: list[Target]
    values: np.ndarray  # (rows, targets), raw units, NaN = unknown
    validation: np.ndarray | None = None  # nb201: (rows, 3) the -val accuracies, NaN where not given

    def transformed(self) -> np.ndarray:
        return np.stack([t.forward(self.values[:, j]) for j, t in enumerate(self.targets)], 1)


def read_csv(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a CSV, or a NarError naming the file and the first missing column."""
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            fields = list(reader.fieldnames or [])
            missing = [c for c in required if c not in fields]
            if missing:
                raise UsageError(f"{path}: missing column {missing[0]!r} (has: {', '.join(fields[:12]) or 'nothing'})")
            return list(reader)
    except FileNotFoundError:
        raise NarError(f"{path} does not exist") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise NarError(f"{path} is not a readable CSV: {exc}") from None


def _float(text: str | None) -> float:
    try:
        value = float(str(text).replace(",", ""))
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def nb201_latency_target(column: str) -> Target:
    """`1080ti_32` is a GPU at batch 32; `gold_6226` is a CPU model at batch 1 (a batch size in these
    files is a power of two, a CPU's model number is not)."""
    device, _, batch = column.rpartition("_")
    if device and batch.isdigit() and int(batch) & (int(batch) - 1) == 0:
        return Target(column, "latency", "ms", device, int(batch), log=True)
    return Target(column, "latency", "ms", column, 1, log=True)


def load_nb201(folder: Path, zoo_db: Path) -> Dataset:
    """Every cell of `folder/accuracy.csv` whose network is in `zoo_db`, with its labels."""
    from narcli.zoo.store import Zoo

    rows = read_csv(folder / "accuracy.csv", ("index", "arch_str") + NB201_ACCURACY)
    latency_rows: dict[str, dict[str, str]] = {}
    latency_columns: list[str] = []
    if (folder / "latency_ms.csv").exists():
        latency = read_csv(folder / "latency_ms.csv", ("index",))
        latency_rows = {r["index"]: r for r in latency}
        latency_columns = [c for c in (latency[0] if latency else {}) if c != "index"]
    targets = [Target(c, "accuracy", "%", "", label=NB201_LABELS[c], log_error=True) for c in NB201_ACCURACY] + [nb201_latency_target(c) for c in latency_columns]
    with Zoo([zoo_db]) as zoo:
        models = {m.name: m for m in zoo.models(source="nasbench201") if m.graph_hash}
        inputs: dict[str, GraphInput] = {}
        names, groups, items, values, validation = [], [], [], [], []
        for row in rows:
            model = models.get(row["arch_str"])
            if model is None:
                continue
            if model.graph_hash not in inputs:
                inputs[model.graph_hash] = graph_input(zoo.graph(model))
            lat = latency_rows.get(row["index"], {})
            names.append(row["arch_str"])
            groups.append(model.graph_hash)
            items.append(inputs[model.graph_hash])
            values.append([_float(row[c]) for c in NB201_ACCURACY] + [_float(lat.get(c)) for c in latency_columns])
            validation.append([_float(row.get(c)) for c in NB201_VALIDATION])
    return Dataset("nb201", names, groups, items, targets, np.array(values, dtype=np.float64).reshape(-1, len(targets)),
                   np.array(validation, dtype=np.float64).reshape(-1, len(NB201_VALIDATION)))


def nb201_one_hot(archs: list[str]) -> np.ndarray:
    """The boosted-tree baseline's features: the 6 edges' operations, one-hot (6 x 5)."""
    out = np.zeros((len(archs), 6 * len(NB201_OPS)), dtype=np.float32)
    for i, arch in enumerate(archs):
        edges = [e.split("~")[0] for part in arch.strip("|").split("|+|") for e in part.split("|")]
        for j, op in enumerate(edges[:6]):
            if op in NB201_OPS:
                out[i, j * len(NB201_OPS) + NB201_OPS.index(op)] = 1.0
    return out


BENCHMARK_COLUMNS = ("model", "infer_img_size", "infer_samples_per_sec", "infer_step_time", "infer_batch_size")


def _benchmark_target(path: Path) -> Target:
    """benchmark-infer-<precision>-<layout>-<torch>-<backend>-<device>[-extra].csv -> its target."""
    stem = path.stem.removeprefix("benchmark-infer-")
    parts = stem.split("-")
    if "cpu" in parts:
        at = parts.index("cpu")
        device = parts[at + 1] if at + 1 < len(parts) else "cpu"
        return Target(stem, "latency", "ms", device, 1, log=True)
    return Target(stem, "throughput", "img/s", parts[-1] if len(parts) > 1 else stem, None, log=True)


def load_timm(folder: Path, zoo_path: Path | None = None) -> Dataset:
    """timm architectures of the zoo with their top-1 (best released weights) and benchmark figures.

    A benchmark row counts only when it was measured at the input size the zoo traced the model
    at; timings at another size would teach the head the wrong MACs."""
    from narcli.zoo.store import Zoo, bundled_zoo_path

    results = read_csv(folder / "results-imagenet.csv", ("model", "top1"))
    top1: dict[str, float] = {}
    for row in results:
        name, value = row["model"].split(".")[0], _float(row["top1"])
        if math.isfinite(value):
            top1[name] = max(value, top1.get(name, -1.0))
    benchmarks = sorted(folder.glob("benchmark-*.csv"))
    targets = [Target("top1", "accuracy", "%", "", label="ImageNet top-1")] + [_benchmark_target(p) for p in benchmarks]
    tables = []
    for path, target in zip(benchmarks, targets[1:]):
        table = {}
        for row in read_csv(path, BENCHMARK_COLUMNS):
            key = "infer_step_time" if target.kind == "latency" else "infer_samples_per_sec"
            table[row["model"]] = (_float(row["infer_img_size"]), _float(row[key]))
        tables.append(table)
    with Zoo([zoo_path or bundled_zoo_path()]) as zoo:
        names, groups, items, values = [], [], [], []
        for model in zoo.models(source="timm"):
            if model.status != "ok" or not model.graph_hash:
                continue
            size = traced_image_size(model.inputs)
            row = [top1.get(model.name, math.nan)]
            for table in tables:
                measured_size, value = table.get(model.name, (math.nan, math.nan))
                row.append(value if size and measured_size == size else math.nan)
            if all(math.isnan(v) for v in row):
                continue
            names.append(model.name)
            groups.append(model.graph_hash)
            items.append(graph_input(zoo.graph(model), macs=model.macs, params=model.params))
            values.append(row)
    return Dataset("timm", names, groups, items, targets, np.array(values, dtype=np.float64).reshape(-1, len(targets)))


def traced_image_size(inputs) -> int | None:
    """The height the zoo traced an image model at (inputs as stored: JSON text or a list)."""
    import json

    try:
        specs = json.loads(inputs) if isinstance(inputs, str) else inputs
        shape = specs[0]["shape"]
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return int(shape[2]) if len(shape) == 4 else None


def split_groups(groups: list[str], test_share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, test) with whole groups (architectures) on one side."""
    distinct = sorted(set(groups))
    order = np.random.default_rng(seed).permutation(len(distinct))
    test_groups = {distinct[i] for i in order[: int(round(test_share * len(distinct)))]}
    test = np.array([i for i, g in enumerate(groups) if g in test_groups], dtype=np.int64)
    train = np.array([i for i, g in enumerate(groups) if g not in test_groups], dtype=np.int64)
    return train, test
