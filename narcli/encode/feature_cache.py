"""Featurised graphs cached under `$NAR_HOME/features/` as `.npz` (plain arrays, read with
`allow_pickle=False`), so nothing read back from the cache can run code.

A cached value is a dict of graph hash -> EncodedGraph, a list of EncodedGraphs, or a list of such
lists. Each EncodedGraph field is stored once for all graphs, concatenated, with every graph's length
beside it; the value's shape (keys or list lengths) is a small JSON header.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from narcli.encode.features import EncodedGraph

_FIELDS = [f.name for f in fields(EncodedGraph)]
_EDGE_FIELDS = {"edges", "macro_edges"}  # (2, e): concatenated along their last axis


def _flatten(value: Any) -> tuple[dict, list[EncodedGraph]]:
    if isinstance(value, dict):
        return {"kind": "dict", "keys": list(value)}, list(value.values())
    if all(isinstance(v, EncodedGraph) for v in value):
        return {"kind": "list"}, list(value)
    return {"kind": "lists", "lengths": [len(v) for v in value]}, [g for v in value for g in v]


def _unflatten(layout: dict, graphs: list[EncodedGraph]) -> Any:
    if layout["kind"] == "dict":
        return dict(zip(layout["keys"], graphs, strict=True))
    if layout["kind"] == "list":
        return graphs
    out, start = [], 0
    for length in layout["lengths"]:
        out.append(graphs[start:start + length])
        start += length
    return out


def save_features(path: Path, value: Any) -> None:
    layout, graphs = _flatten(value)
    arrays: dict[str, np.ndarray] = {"layout": np.frombuffer(json.dumps(layout).encode(), dtype=np.uint8)}
    for name in _FIELDS:
        axis = 1 if name in _EDGE_FIELDS else 0
        parts = [getattr(g, name) for g in graphs]
        arrays[f"{name}.lengths"] = np.array([p.shape[axis] for p in parts], dtype=np.int64)
        if parts:
            arrays[name] = np.concatenate(parts, axis=axis)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
    tmp.replace(path)  # a crash never leaves a half-written cache


def load_features(path: Path) -> Any:
    with np.load(path, allow_pickle=False) as data:
        layout = json.loads(data["layout"].tobytes().decode())
        columns: dict[str, list[np.ndarray]] = {}
        for name in _FIELDS:
            lengths = data[f"{name}.lengths"]
            if len(lengths) == 0:
                columns[name] = []
                continue
            axis = 1 if name in _EDGE_FIELDS else 0
            columns[name] = np.split(data[name], np.cumsum(lengths)[:-1], axis=axis)
    count = len(columns[_FIELDS[0]])
    graphs = [EncodedGraph(**{name: np.ascontiguousarray(columns[name][k]) for name in _FIELDS})
              for k in range(count)]
    return _unflatten(layout, graphs)


def cached_features(name: str, build: Callable[[], Any]) -> Any:
    """`build()`, stored under `$NAR_HOME/features/<name>-v<FEATURES_VERSION>.npz` and read back from
    there next time (a new features version featurises again)."""
    from narcli.encode.features import FEATURES_VERSION
    from narcli.scan.cache import nar_home

    path = Path(nar_home()) / "features" / f"{name}-v{FEATURES_VERSION}.npz"
    if path.exists():
        try:
            return load_features(path)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
            pass  # cut short or from another layout: featurise again
    value = build()
    save_features(path, value)
    return value
