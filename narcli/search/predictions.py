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
    inputs: list[dict[str, Any]] | None = None  # a scanned file's: what the figures are for
    assumed: str | None = None  # how those inputs were guessed (None: given, or a zoo model's own)

    @property
    def note(self) -> str | None:
        """Said beside the rows: the CPU latency is another machine's (until this one is calibrated)."""
        return latency_note(self.rows)

    @property
    def gpu_note(self) -> str | None:
        """Said beside the rows: the GPU latency is the reference GPU's (until one is measured here)."""
        return gpu_latency_note(self.rows)

    @property
    def notes(self) -> list[str]:
        return latency_notes(self.rows)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **({"inputs": self.inputs, "assumed": self.assumed} if self.inputs else {}),
                "predictions": [r.to_dict() for r in self.rows],
                **({"note": self.note} if self.note else {}),
                **({"gpu_note": self.gpu_note} if self.gpu_note else {})}


def _for_device(rows: list[Row], device: str | None) -> list[Row]:
    return [r for r in rows if device is None or r.target.kind == "accuracy" or device in (r.target.device, r.target.column)
            or r.head == MEASURED]


MEASURED = "measured"


def measured_on_gpu(row: Row) -> bool:
    """A `nar bench --device cuda` timing of the model (`measured_rows` names its column by device kind)."""
    return row.head == MEASURED and row.target.column == f"{MEASURED}-cuda"


def measured_rows(graph_hash: str, macs: int | None = None) -> list[Row]:
    """What `nar bench` stored for this graph on this machine (its CPU, or a CUDA device), as rows
    marked measured: measured beats predicted. One row per device and batch, the newest. With
    `macs`, only timings taken at inputs of that size (the hash is the same at every input size)."""
    import statistics
    import time

    from narcli.bench import store
    from narcli.bench.device import cpu_name
    from narcli.errors import NarError, StoreError
    from narcli.predict.datasets import Target

    try:
        stored = store.for_graph(graph_hash, macs)
    except StoreError:
        raise  # a damaged bench.db: say so (and how to repair it) rather than hide what it held
    except (NarError, OSError):
        return []
    here, out, seen = cpu_name(), [], set()
    for info in stored:
        device = info.get("device") or {}
        if device.get("kind") == "cpu" and device.get("name") != here:
            continue  # measured on another machine sharing this NAR_HOME
        key = (device.get("key"), info.get("batch"))
        if key in seen or not info.get("median_ms"):
            continue
        seen.add(key)
        threads = device.get("threads", 0)
        label = (f"this CPU, {threads} thread{'s' * (threads != 1)}" if device.get("kind") == "cpu"
                 else f"{device.get('name', 'cuda')}")
        times = info.get("times_ms") or []
        low, high = (statistics.quantiles(times, n=4)[::2] if len(times) >= 2 else (None, None))
        when = time.strftime("%Y-%m-%d", time.localtime(info.get("measured_at", 0)))
        about = (f"`nar bench` on {when}: median of {info.get('runs', len(times))} runs after a warm-up"
                 + (", the interval is their interquartile range" if low is not None else ""))
        target = Target(f"{MEASURED}-{device.get('kind', 'cpu')}", "latency", "ms", label, info.get("batch", 1))
        out.append(Row(MEASURED, "measured on this machine", target, float(info["median_ms"]), low, high, "ok",
                       "", about))
    return out


def latency_parts(bundle: Any, graph: Any, macs: int | None = None, params: int | None = None) -> Any:
    """The reference-CPU prediction of `graph` split by how it parallelises (for calibrated heads),
    or None."""
    if bundle.latency is None or graph is None:
        return None
    return bundle.latency.parts(graph, macs, params)


def predictions_for(text: str, options: Any = None, device: str | None = None,
                    weights: Path | None = None) -> list[Predictions]:
    """Predictions for each model `text` names; UsageError for an unknown `device`."""
    from narcli.errors import UsageError
    from narcli.search.targets import resolve_graphs

    from narcli.bench.calibrate import calibrated_devices
    from narcli.bench.device_rows import device_rows

    bundle = load_bundle(weights)
    calibrated = calibrated_devices()
    known = bundle.devices() + sorted(calibrated)
    if device is not None and device not in known:
        raise UsageError(f"unknown device {device!r}; known: {', '.join(known)}"
                         + ("" if calibrated else " (calibrate this machine with `nar calibrate`)"))
    out = []
    for target in resolve_graphs(text, options, command="predict"):
        rows = None
        model = target.zoo_model
        if model is not None:
            from narcli.predict.zoo_predictions import stored_predictions

            rows = stored_predictions(Path(model.db), model.id, bundle) if model.db else None
        if rows is None:
            macs = model.macs if model is not None else None
            params = model.params if model is not None else None
            rows = predict_graph(target.graph, bundle, macs=macs, params=params)
        size = (model.macs if model is not None else None) or target.graph.macs  # the MACs at this input
        rows = rows + device_rows(rows, size, calibrated,
                                  lambda target=target, model=model: latency_parts(
                                      bundle, target.graph, model.macs if model else None,
                                      model.params if model else None))
        graph_hash = model.graph_hash if model is not None and model.graph_hash else target.graph.content_hash()
        rows = measured_rows(graph_hash, size) + rows
        record = target.record
        out.append(Predictions(target.name, _for_device(rows, device), known,
                               record.inputs if record else None, record.assumed if record else None))
    return out


SUMMARY_TARGETS = (("accuracy", "top-1"), ("latency", "CPU"), ("throughput", "GPU"))


def summary_rows(rows: list[Row]) -> list[Row]:
    """The rows `nar scan` and `nar similar` show: top-1 (timm's head), one CPU latency — measured on
    this machine when `nar bench` stored one, else this machine's calibrated head, else the reference
    CPU, else timm's CPU column — and timm's GPU throughput."""
    from narcli.predict.latency import HEAD_NAME

    usable = [r for r in rows if r.status == "ok"]
    picked = [r for r in usable if r.target.kind == "accuracy" and r.head == "timm"][:1]
    latency = ([r for r in usable if r.head == MEASURED and r.target.batch == 1]
               + [r for r in usable if r.head == "device"] + [r for r in usable if r.head == HEAD_NAME]
               + [r for r in usable if r.target.kind == "latency" and r.head == "timm"])
    picked += latency[:1]
    picked += [r for r in usable if r.target.kind == "throughput" and r.head == "timm"][:1]
    return picked


def summary_line(rows: list[Row]) -> str | None:
    """One line of `summary_rows`, or None when none applies."""
    parts = []
    for r in summary_rows(rows):
        if r.target.kind == "accuracy":
            parts.append(f"top-1 {format_value(r)} (±{_spread(r)})")
        elif r.head == MEASURED:
            parts.append(f"CPU {format_value(r)} measured ({r.target.device})")
        elif r.head == "reference":
            parts.append(f"CPU {format_value(r)} ({format_interval(r)}) on the reference machine, not this one "
                         "(`nar calibrate` fits this one)")
        elif r.target.kind == "latency":
            parts.append(f"CPU {r.target.device} {format_value(r)} ({format_interval(r)})")
        else:
            parts.append(f"GPU {r.target.device} {format_value(r)}")
    if not parts:
        return None
    return ("measured/predicted: " if any(r.head == MEASURED for r in summary_rows(rows)) else "predicted: ") + ", ".join(parts)


def latency_note(rows: list[Row]) -> str | None:
    """When the only CPU latency is the reference head's: say plainly it is another machine's, and
    how to get this one's."""
    usable = [r for r in rows if r.status == "ok"]
    # a calibration of this machine, or a CPU timing here; a GPU timing says nothing of the CPU
    if any(r.head == "device" or (r.head == MEASURED and not measured_on_gpu(r)) for r in usable):
        return None
    reference = next((r for r in usable if r.head == "reference"), None)
    if reference is None:
        return None
    return (f"the CPU latency is predicted for the {reference.title}, another machine, not this one: other CPUs and "
            "thread counts can differ 2-3x. `nar calibrate` (a few minutes) fits this machine and thread count; "
            "`nar bench MODEL` measures one model here")


def gpu_latency_note(rows: list[Row]) -> str | None:
    """When the GPU latency is the reference GPU head's and no GPU timing of the model is stored:
    say whose GPU it is. At batch 1 a GPU's time is mostly launch overhead set by its host, so
    another GPU and host can differ by the interval's width (a lent H200 read a median 1.12x the
    H100 head's figure on 562 models it never saw, 25 % off in the median: README)."""
    from narcli.predict.latency import GPU_HEAD_NAME

    usable = [r for r in rows if r.status == "ok"]
    if any(measured_on_gpu(r) for r in usable):
        return None
    reference = next((r for r in usable if r.head == GPU_HEAD_NAME), None)
    if reference is None:
        return None
    return (f"the GPU latency is predicted for the {reference.title}, not your GPU: at batch 1 its time is "
            "mostly launch overhead, set by the GPU's host as much as the GPU. `nar bench MODEL --device cuda` "
            "measures one model on yours")


def latency_notes(rows: list[Row]) -> list[str]:
    """What is said beside the rows, in order: whose CPU, then whose GPU, the latencies are for."""
    return [note for note in (latency_note(rows), gpu_latency_note(rows)) if note]


def summary_json(rows: list[Row]) -> list[dict[str, Any]]:
    """`summary_rows` as `--json` fields: what each predicts, value, interval, unit, device."""
    note = latency_note(rows)
    return [{"what": short_label(r), "measured": r.head == MEASURED, **r.to_dict(),
             **({"this_machine": False, "note": note} if note and r.head == "reference" else {})}
            for r in summary_rows(rows)]


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
        if target.label:  # "CIFAR-10 test accuracy, 200 epochs" -> "CIFAR-10 test, 200 ep"
            return target.label.replace(" accuracy", "").replace(" epochs", " ep")
        return "ImageNet top-1" if target.column == "top1" else target.column.removesuffix("-test")
    return target.kind


def _spread(row: Row) -> str:
    if row.low is None or row.high is None:
        return "?"
    return f"{(row.high - row.low) / 2:.1f}"


def performance_rows(query: Any) -> list[Row]:
    """The rows summarised for a `nar similar` query or a `nar scan` record (anything with a
    `zoo_model` or a cached `graph_key`); empty when nothing applies or there is no predictor."""
    from narcli.bench.device_rows import device_rows
    from narcli.errors import NarError, StoreError

    try:
        bundle = load_bundle()
        rows, graph_hash, macs = None, "", 0
        parts: Any = lambda: None  # noqa: E731 - the reference prediction's parts, for calibrated heads
        model = getattr(query, "zoo_model", None)
        if model is not None:
            from narcli.predict.zoo_predictions import stored_predictions
            from narcli.zoo.store import Zoo

            def zoo_graph():
                with Zoo() as zoo:
                    return zoo.graph(model)

            graph_hash, macs = model.graph_hash or "", model.macs or 0
            rows = stored_predictions(Path(model.db), model.id, bundle) if model.db else None
            if rows is None:
                rows = predict_graph(zoo_graph(), bundle, macs=model.macs, params=model.params)
            parts = lambda: latency_parts(bundle, zoo_graph(), model.macs, model.params)  # noqa: E731
        elif getattr(query, "graph_key", ""):
            from narcli.scan.cache import Cache

            graph = Cache().graph(query.graph_key)
            if graph is not None:
                rows, graph_hash, macs = predict_graph(graph, bundle), graph.content_hash(), graph.macs
                parts = lambda: latency_parts(bundle, graph)  # noqa: E731
        rows = rows or []
        rows = measured_rows(graph_hash, macs) + rows + device_rows(rows, macs, parts=parts)
    except StoreError:
        raise  # a damaged store under NAR_HOME: one line with the repair, not a summary quietly missing
    except NarError:
        return []
    return summary_rows(rows)
