"""Which zoo models `nar calibrate` and `nar eval calibration` time: zoo models of every installed
source the reference head answers for, between 0.05 and 20 GMACs, one per architecture, in
farthest-point order (`spread_order`) so that the first K are as unlike each other as K can be.

Spreading the models' work split too (convolution, matrix products, other work, calls) was tried
offline on ten days' timings and chose no better models than this order, or than a random choice
(`benchmarks/bench_calibration_choice.py`, README "2026-12-06, 22:45"): the calibration's error is
the reference head's error on each model, not which scale the models pin down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import NarError

LOW_MACS, HIGH_MACS = 5e7, 2e10
REFERENCE_COLUMN = "reference-cpu"
CPU_COLUMNS = (REFERENCE_COLUMN,)  # what new heads are fitted on
COARSE = ("convolutional", "transformer", "hybrid", "recurrent", "state-space", "mlp", "graph")


@dataclass
class Candidate:
    name: str  # zoo model id
    macs: int
    params: int
    predicted: dict[str, float]  # column -> predicted ms (the reference CPU)
    features: np.ndarray  # for the farthest-point order
    coarse: str = ""
    graph_hash: str = ""  # set for zoo models: measured in the pooled worker
    source: str = ""
    family: str = ""
    parts: np.ndarray | None = None  # the reference prediction split by how it parallelises (`with_parts`)


def candidates(head: Any = None) -> list[Candidate]:
    """Zoo models the calibration can use, in farthest-point order of `head`'s predictions (default:
    the bundled head's, stored in the zoo)."""
    from narcli.predict.bundle import load_bundle, reference_row
    from narcli.predict.zoo_predictions import stored_predictions
    from narcli.zoo.store import Zoo, bundled_zoo_path

    bundle, stored = load_bundle(), head is None  # another head than the bundled one computes its own
    head = head or bundle.latency
    if head is None:
        raise NarError("the reference latency head is missing from this install; reinstall nar, or train it with "
                       "`nar train latency`")
    from narcli.zoo.plugins import zoo_sources

    installed = set(zoo_sources())  # a model is measured by building it through its source plugin
    found: list[Candidate] = []
    seen: set[str] = set()
    with Zoo() as zoo:
        for model in zoo.models():
            if model.status != "ok" or not model.macs or not LOW_MACS <= model.macs <= HIGH_MACS:
                continue
            if model.source not in installed:
                continue
            if model.graph_hash in seen:
                continue
            rows = stored_predictions(Path(model.db or bundled_zoo_path()), model.id, bundle) if stored else None
            row = next((r for r in rows or [] if r.target.column == REFERENCE_COLUMN), None)
            if row is None and rows is None:  # predictions not stored for this head: compute them
                row = reference_row(head, zoo.graph(model), model.macs, model.params)
            if row is None or row.status != "ok":
                continue
            seen.add(model.graph_hash)
            found.append(Candidate(model.id, model.macs, model.params or 0, {REFERENCE_COLUMN: row.value},
                                   np.zeros(0), model.coarse or "", model.graph_hash, model.source,
                                   model.family or ""))
    if not found:
        from narcli.zoo.plugins import install_line
        raise NarError("no zoo model to calibrate with: no zoo source plugin is installed (install one with "
                       f"`{install_line('timm')}`), or the reference head answers for none of their models")
    return [found[i] for i in spread_order(found)]


def spread_order(found: list[Candidate], shares: np.ndarray | None = None) -> list[int]:
    """Indices of `found` in farthest-point order over (log MACs, counted twice, log params, the
    reference latency per MAC, the coarse class; and, where given, `shares`: further columns, such as
    each model's work split in `benchmarks/bench_calibration_choice.py`), starting from the median-MACs
    model: each next one is least like those before."""
    raw = np.array([[math.log(c.macs), math.log(max(c.params, 1)),
                     math.log(c.predicted[REFERENCE_COLUMN]) - math.log(c.macs)] for c in found])
    z = (raw - raw.mean(0)) / (raw.std(0) + 1e-9)
    z[:, 0] *= 2  # MACs range matters most for latency
    kinds = np.array([[2.0 * (c.coarse == k) for k in COARSE] for c in found])  # a new kind is far away
    z = np.concatenate([z, kinds] + ([] if shares is None else [shares]), 1)
    order = [int(np.argsort(raw[:, 0])[len(found) // 2])]
    distance = np.linalg.norm(z - z[order[0]], axis=1)
    while len(order) < len(found):
        nxt = int(np.argmax(distance))
        order.append(nxt)
        distance = np.minimum(distance, np.linalg.norm(z - z[nxt], axis=1))
    return order


def with_parts(chosen: list[Candidate], head: Any = None) -> list[Candidate]:
    """The candidates with their reference prediction split into `latency_parts.PARTS` (graphs read from
    the zoo); those the reference head (default: the bundled one) does not answer for are left out."""
    from narcli.predict.bundle import load_bundle
    from narcli.zoo.store import Zoo

    head = head or load_bundle().latency
    out = []
    with Zoo() as zoo:
        for candidate in chosen:
            if candidate.parts is None:
                try:
                    model = zoo.resolve(candidate.name)
                    candidate.parts = head.parts(zoo.graph(model), model.macs, model.params)
                    candidate.graph_hash = candidate.graph_hash or model.graph_hash
                except NarError:  # gone from the zoo since the order was made
                    continue
            if candidate.parts is not None:
                out.append(candidate)
    return out
