"""Featurised graphs cached under `$NAR_HOME/features/` as `.npz` (plain arrays, read with
`allow_pickle=False`), so nothing read back from the cache can run code.

A cached value is a dict of graph hash -> EncodedGraph, a list of EncodedGraphs, or a list of such
lists. Each EncodedGraph field is stored once for all graphs, concatenated, with every graph's length
beside it; the value's shape (keys or list lengths) is a small JSON header.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from narcli.encode.features import EncodedGraph
from narcli.fsutil import atomic_writer

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
    with atomic_writer(path, "wb") as handle:  # a crash never leaves a half-written cache
        np.savez(handle, **arrays)


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

    path = features_dir() / f"{name}-v{FEATURES_VERSION}.npz"
    if path.exists():
        try:
            return load_features(path)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
            pass  # cut short or from another layout: featurise again
    value = build()
    save_features(path, value)
    return value


def features_dir() -> Path:
    from narcli.scan.cache import nar_home

    return Path(nar_home()) / "features"


def file_problem(path: Path) -> str | None:
    """What is wrong with a cached `.npz`, or None: every member's checksum (zip's CRC) and the
    members a load needs; cheap beside featurising (it reads the file once, decodes nothing)."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
            if bad is not None:
                return f"{bad} fails its checksum"
            names = set(archive.namelist())
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"[:120]
    missing = [n for n in ["layout", *(f"{f}.lengths" for f in _FIELDS)] if f"{n}.npy" not in names]
    if missing:
        return f"no {missing[0]} array"
    try:  # the small arrays: the layout and every field's lengths
        with np.load(path, allow_pickle=False) as data:
            json.loads(data["layout"].tobytes().decode())
            for name in _FIELDS:
                data[f"{name}.lengths"].astype(np.int64)
    except (OSError, ValueError, KeyError, TypeError, UnicodeError, zipfile.BadZipFile, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"[:120]
    return None


def features_health() -> dict[str, Any]:
    """The feature cache as `nar cache info` shows it: "ok", or which files are damaged (a damaged
    file is featurised again when read, so it costs time, never an answer)."""
    folder = features_dir()
    files = sorted(folder.glob("*.npz")) if folder.is_dir() else []
    damaged = [f"{path.name}: {why}" for path in files if (why := file_problem(path))]
    return {"name": "features/", "what": "featurised graphs (nar train, nar eval)", "path": str(folder),
            "exists": bool(files), "bytes": sum(p.stat().st_size for p in files),
            "health": "; ".join(damaged[:3]) or "ok"}


def repair_features() -> str | None:
    """Delete the damaged cached files (they are featurised again when next needed)."""
    folder = features_dir()
    removed = [path for path in (sorted(folder.glob("*.npz")) if folder.is_dir() else []) if file_problem(path)]
    for path in removed:
        path.unlink(missing_ok=True)
    return f"deleted the damaged {', '.join(p.name for p in removed)} from {folder}" if removed else None
