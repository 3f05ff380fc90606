"""NAS-Bench-201 labels joined to canonical graphs: `accuracy.csv` / `latency_ms.csv` rows (by
`arch_str`) and a zoo database the `nasbench201` source (plugin `nar-nas`) was built into."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from narcli.predict.tokens import GraphTokens, graph_tokens


@dataclass
class NB201Data:
    archs: list[str]
    tokens: list[GraphTokens]
    accuracy: dict[str, np.ndarray]  # column -> values, in `archs` order
    latency: dict[str, np.ndarray]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def load_nb201(folder: Path, zoo_db: Path) -> NB201Data:
    """Every cell of `folder/accuracy.csv` whose network is in `zoo_db`, with its labels."""
    from narcli.zoo.store import Zoo

    _, rows = read_csv(folder / "accuracy.csv")
    latency_rows: dict[str, dict[str, str]] = {}
    if (folder / "latency_ms.csv").exists():
        _, lat = read_csv(folder / "latency_ms.csv")
        latency_rows = {r["index"]: r for r in lat}
    with Zoo([zoo_db]) as zoo:
        models = {m.name: m for m in zoo.models(source="nasbench201")}
        graphs: dict[str, GraphTokens] = {}
        archs, kept = [], []
        for row in rows:
            model = models.get(row["arch_str"])
            if model is None:
                continue
            if model.graph_hash not in graphs:
                graphs[model.graph_hash] = graph_tokens(zoo.graph(model))
            archs.append(row["arch_str"])
            kept.append((row, graphs[model.graph_hash]))
    accuracy_columns = [c for c in rows[0] if c not in ("index", "arch_str")] if rows else []
    accuracy = {c: np.array([float(r[c]) for r, _ in kept], dtype=np.float32) for c in accuracy_columns}
    latency: dict[str, np.ndarray] = {}
    if latency_rows:
        columns = [c for c in next(iter(latency_rows.values())) if c != "index"]
        latency = {c: np.array([float(latency_rows[r["index"]][c]) for r, _ in kept], dtype=np.float32)
                   for c in columns}
    return NB201Data(archs, [t for _, t in kept], accuracy, latency)


NB201_OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")


def one_hot_cells(archs: list[str]) -> np.ndarray:
    """The boosted-tree baseline's features: the 6 edges' operations, one-hot (6 x 5)."""
    out = np.zeros((len(archs), 6 * len(NB201_OPS)), dtype=np.float32)
    for i, arch in enumerate(archs):
        edges = [e.split("~")[0] for part in arch.strip("|").split("|+|") for e in part.split("|")]
        for j, op in enumerate(edges):
            out[i, j * len(NB201_OPS) + NB201_OPS.index(op)] = 1.0
    return out
