"""`nar predict`: the predictor's rows for whatever a user names — a zoo model (precomputed at
`nar zoo embed`, else computed from its stored graph; never imports torch) or a model file
(scanned, cached, then predicted)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from narcli.predict.bundle import Row, load_bundle, predict_graph


@dataclass
class Predictions:
    name: str
    rows: list[Row]
    devices: list[str]  # every device the predictor knows


def _for_device(rows: list[Row], device: str | None) -> list[Row]:
    return [r for r in rows if device is None or r.target.kind == "accuracy" or r.target.device == device]


def predictions_for(text: str, options: Any = None, device: str | None = None,
                    weights: Path | None = None) -> list[Predictions]:
    """Predictions for each model `text` names; UsageError for an unknown `device`."""
    from narcli.errors import UsageError
    from narcli.search.targets import resolve_targets

    from narcli.bench.calibrate import calibrated_devices, device_rows

    bundle = load_bundle(weights)
    calibrated = calibrated_devices()
    known = bundle.devices() + sorted(calibrated)
    if device is not None and device not in known:
        raise UsageError(f"unknown device {device!r}; known: {', '.join(known)}"
                         + ("" if calibrated else " (calibrate this machine with `nar calibrate`)"))
    out = []
    if text.startswith("cache:"):  # a model scanned before: its stored graph
        from narcli.scan.cache import Cache
        from narcli.search.query import resolve_queries

        for query in resolve_queries(text, options):
            graph = Cache().graph(query.graph_key)
            rows = predict_graph(graph, bundle) if graph is not None else []
            rows += device_rows(rows, graph.macs if graph is not None else 0, calibrated)
            out.append(Predictions(query.name, _for_device(rows, device), known))
        return out
    for target in resolve_targets(text, options):
        rows = None
        model = target.zoo_model
        if model is not None:
            from narcli.predict.zoo_predictions import stored_predictions

            rows = stored_predictions(Path(model.db), model.id, bundle) if model.db else None
        if rows is None:
            macs = model.macs if model is not None else None
            params = model.params if model is not None else None
            rows = predict_graph(target.graph, bundle, macs=macs, params=params)
        rows = rows + device_rows(rows, (model.macs if model is not None else None) or target.graph.macs, calibrated)
        out.append(Predictions(target.name, _for_device(rows, device), known))
    return out


SUMMARY_TARGETS = (("accuracy", "top-1"), ("latency", "CPU"), ("throughput", "GPU"))


def summary_rows(rows: list[Row]) -> list[Row]:
    """The rows `nar scan` and `nar similar` show: top-1, and the first CPU latency and GPU
    throughput that apply (timm's head; the others answer for their own search spaces only)."""
    picked = []
    for kind, _ in SUMMARY_TARGETS:
        row = next((r for r in rows if r.status == "ok" and r.target.kind == kind and r.head == "timm"), None)
        if row is not None:
            picked.append(row)
    return picked


def summary_line(rows: list[Row]) -> str | None:
    """One line of `summary_rows`, or None when none applies."""
    labels = dict(SUMMARY_TARGETS)
    parts = [f"top-1 {format_value(r)} (±{_spread(r)})" if r.target.kind == "accuracy" else
             f"{labels[r.target.kind]} {r.target.device} {format_value(r)}" for r in summary_rows(rows)]
    return "predicted: " + ", ".join(parts) if parts else None


def summary_json(rows: list[Row]) -> list[dict[str, Any]]:
    """`summary_rows` as `--json` fields: what each predicts, value, interval, unit, device."""
    return [{"what": short_label(r), **r.to_dict()} for r in summary_rows(rows)]


def format_value(row: Row, value: float | None = None) -> str:
    value = row.value if value is None else value
    if value is None:
        return "—"
    if row.target.unit == "%":
        return f"{value:.1f} %"
    if row.target.unit == "ms":
        return f"{value:.3g} ms" if value < 100 else f"{value:,.0f} ms"
    return f"{value:,.0f} {row.target.unit}"


def format_interval(row: Row) -> str:
    """"77.9–82.5 %": both ends, the unit once."""
    if row.low is None or row.high is None:
        return "—"
    low, high = format_value(row, row.low), format_value(row, row.high)
    unit = " " + row.target.unit
    if low.endswith(unit) and high.endswith(unit):
        return f"{low[: -len(unit)]}–{high}"
    return f"{low} – {high}"


def short_label(row: Row) -> str:
    """top-1, cifar10, CPU latency, GPU throughput: what a row predicts, in a word or two."""
    target = row.target
    if target.kind == "accuracy":
        return "ImageNet top-1" if target.column == "top1" else target.column.removesuffix("-test")
    return target.kind


def _spread(row: Row) -> str:
    if row.low is None or row.high is None:
        return "?"
    return f"{(row.high - row.low) / 2:.1f}"


def performance_rows(query: Any) -> list[Row]:
    """The predictor's rows for a `nar similar` query or a `nar scan` record (anything with a
    `zoo_model` or a cached `graph_key`); empty when nothing applies or there is no predictor."""
    from narcli.errors import NarError

    try:
        bundle = load_bundle()
        rows = None
        model = getattr(query, "zoo_model", None)
        if model is not None:
            from narcli.predict.zoo_predictions import stored_predictions
            from narcli.zoo.store import Zoo

            rows = stored_predictions(Path(model.db), model.id, bundle) if model.db else None
            if rows is None:
                with Zoo() as zoo:
                    rows = predict_graph(zoo.graph(model), bundle, macs=model.macs, params=model.params)
        elif getattr(query, "graph_key", ""):
            from narcli.scan.cache import Cache

            graph = Cache().graph(query.graph_key)
            rows = predict_graph(graph, bundle) if graph is not None else None
    except NarError:
        return []
    return summary_rows(rows or [])
