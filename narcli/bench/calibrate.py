"""`nar calibrate` and `nar eval calibration`: this machine's latency head from a handful of zoo
measurements, fitted against the reference-CPU latency head, so it answers for any model that head
answers for.

Choosing models: zoo models of every source the reference head answers for, between 0.05 and 20
GMACs, one per architecture, ordered by farthest-point sampling over (log MACs, log params, the
reference head's latency per MAC, and the coarse class: convolutional, transformer, recurrent, …) —
each next model is the one least like those already chosen — starting from the median-MACs model.
`--models K` takes the first K; `--budget` stops when the time is spent. Measurements already
stored are reused (resumable).

The head: a ridge regression of log(measured latency) on log(reference-CPU prediction) and log MACs
(standardised features, intercept unpenalised) — one thread on the reference machine against all of
this machine's threads is mostly a scale, and how well a model uses more threads grows with its
size. The interval is the 90 % quantile of its leave-one-out errors. Saved as
$NAR_HOME/devices/NAME.json. Heads saved before the reference head existed (fitted on the timm CPU
columns, named in their `columns`) still answer.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from narcli.bench.lock import measuring
from narcli.errors import NarError, UsageError
from narcli.fsutil import write_text

LOW_MACS, HIGH_MACS = 5e7, 2e10
RIDGE = 0.05  # per sample, on standardised features: little shrinkage, but K = 5 stays solvable
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


def devices_dir() -> Path:
    from narcli.scan.cache import nar_home

    return nar_home() / "devices"


def check_name(name: str) -> None:
    if not name or len(name) > 64 or not all(c.isalnum() or c in "-_." for c in name) or name.startswith("."):
        raise UsageError(f"device name {name!r}: use 1-64 letters, digits, '-', '_' or '.'")


def candidates() -> list[Candidate]:
    """Zoo models the calibration can use, in farthest-point order."""
    from narcli.predict.bundle import load_bundle, reference_row
    from narcli.predict.zoo_predictions import stored_predictions
    from narcli.zoo.store import Zoo, bundled_zoo_path

    bundle = load_bundle()
    if bundle.latency is None:
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
            rows = stored_predictions(Path(model.db or bundled_zoo_path()), model.id, bundle)
            row = next((r for r in rows or [] if r.target.column == REFERENCE_COLUMN), None)
            if row is None and rows is None:  # predictions not stored for this predictor: compute them
                row = reference_row(bundle.latency, zoo.graph(model), model.macs, model.params)
            if row is None or row.status != "ok":
                continue
            seen.add(model.graph_hash)
            found.append(Candidate(model.id, model.macs, model.params or 0, {REFERENCE_COLUMN: row.value},
                                   np.zeros(0), model.coarse or "", model.graph_hash, model.source))
    if not found:
        from narcli.zoo.plugins import install_line

        raise NarError("no zoo model to calibrate with: no zoo source plugin is installed (install one with "
                       f"`{install_line('timm')}`), or the reference head answers for none of their models")
    raw = np.array([[math.log(c.macs), math.log(max(c.params, 1)),
                     math.log(c.predicted[REFERENCE_COLUMN]) - math.log(c.macs)] for c in found])
    z = (raw - raw.mean(0)) / (raw.std(0) + 1e-9)
    z[:, 0] *= 2  # MACs range matters most for latency
    kinds = np.array([[2.0 * (c.coarse == k) for k in COARSE] for c in found])  # a new kind is far away
    z = np.concatenate([z, kinds], 1)
    order = [int(np.argsort(raw[:, 0])[len(found) // 2])]
    distance = np.linalg.norm(z - z[order[0]], axis=1)
    while len(order) < len(found):
        nxt = int(np.argmax(distance))
        order.append(nxt)
        distance = np.minimum(distance, np.linalg.norm(z - z[nxt], axis=1))
    return [found[i] for i in order]


def features(candidate_predicted: dict[str, float], macs: int, columns: tuple[str, ...] = CPU_COLUMNS) -> np.ndarray:
    return np.array([math.log(candidate_predicted[c]) for c in columns] + [math.log(macs)])


def fit(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Ridge on standardised features; returns the parameters and the leave-one-out interval."""
    mean, std = x.mean(0), x.std(0) + 1e-9

    def solve(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, float]:
        z = (xs - mean) / std
        centre = ys.mean()
        w = np.linalg.solve(z.T @ z + RIDGE * len(ys) * np.eye(z.shape[1]), z.T @ (ys - centre))
        return w, centre

    w, b = solve(x, y)
    errors = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        if keep.sum() >= 2:
            wi, bi = solve(x[keep], y[keep])
            errors.append(abs(float(((x[i] - mean) / std) @ wi + bi - y[i])))
    half = float(np.quantile(errors, 0.9)) if errors else 0.5
    return {"mean": mean.tolist(), "std": std.tolist(), "weights": w.tolist(), "intercept": float(b), "half": half}


def apply(head: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """Predicted log latency for feature rows `x`."""
    z = (np.atleast_2d(x) - np.array(head["mean"])) / np.array(head["std"])
    return z @ np.array(head["weights"]) + head["intercept"]


def measure_models(chosen: list[Candidate], threads: int | None, repeat: int, budget: float | None,
                   report: Callable[[str], None]) -> list[tuple[Candidate, float]]:
    """Each candidate's batch-1 latency on this CPU, in order: stored measurements are reused, zoo
    models are measured one after another in one long-lived worker (library imports and registries
    paid once: a fresh child per model cost 10-30 s), anything else through `bench_target`."""
    from narcli.bench import store
    from narcli.bench.device import device_info
    from narcli.bench.runner import bench_target

    info = device_info("cpu", threads)
    began, found = time.perf_counter(), {}
    done = [0]

    def note(candidate: Candidate, ms: float, reused: bool) -> None:  # progress as each model is done
        done[0] += 1
        report(f"{done[0]}/{len(chosen)} {candidate.name}: {ms:.2f} ms" + (" (stored)" if reused else ""))

    pooled = [c for c in chosen if c.graph_hash]
    for candidate in pooled:
        stored = store.load(candidate.graph_hash, 1, info.key)
        if stored:
            found[candidate.name] = (stored["median_ms"], True)
            note(candidate, stored["median_ms"], True)
    todo = [c for c in pooled if c.name not in found]
    if todo:
        found.update(_measure_pooled(todo, info, repeat, budget, began, report, note))
    out = []
    for candidate in chosen:
        if candidate.name not in found and not candidate.graph_hash:
            if budget is not None and time.perf_counter() - began > budget:
                break
            result = bench_target(candidate.name, 1, "cpu", threads, repeat, reuse=True)
            found[candidate.name] = (result.median_ms, result.reused)
            note(candidate, result.median_ms, result.reused)
        if candidate.name in found:
            out.append((candidate, found[candidate.name][0]))
    if len(out) < len(chosen) and budget is not None and time.perf_counter() - began > budget:
        report(f"budget of {budget:g} s spent after {len(out)} models")
    return out


def _measure_pooled(todo: list[Candidate], info: Any, repeat: int, budget: float | None, began: float,
                    report: Callable[[str], None], note: Callable[[Candidate, float, bool], None],
                    ) -> dict[str, tuple[float, bool]]:
    from narcli.bench import store
    from narcli.bench.reference import measure_zoo_model
    from narcli.trace.pool import TaskResult, run_pool

    protocol = {"repeat": repeat, "warmup_runs": 3, "warmup_seconds": 0.5, "max_seconds": None, "min_repeat": repeat}
    by_name = {c.name: c for c in todo}
    found: dict[str, tuple[float, bool]] = {}

    def tasks():
        for candidate in todo:
            if budget is not None and time.perf_counter() - began > budget:
                return
            yield candidate.name, (candidate.source, candidate.name, info.threads, protocol)

    def on_result(result: TaskResult) -> None:
        candidate = by_name[result.key]
        if not result.ok:
            report(f"could not measure {candidate.name}: {result.message[:100]}")
            return
        value = result.value | {"name": candidate.name, "graph_hash": candidate.graph_hash, "batch": 1,
                                "device": info.to_dict(), "params": candidate.params, "macs": candidate.macs}
        store.save(candidate.graph_hash, 1, info.key, candidate.name, value)
        found[candidate.name] = (value["median_ms"], False)
        note(candidate, value["median_ms"], False)

    run_pool(measure_zoo_model, tasks(), on_result, jobs=1, timeout=600, tasks_per_worker=400, max_rss=6 << 30)
    return found


def calibrate(name: str = "local", models: int = 20, budget: float | None = None, threads: int | None = None,
              repeat: int = 20, report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Measure `models` chosen zoo models (within `budget` seconds), fit and save the device head."""
    from narcli.bench.device import device_info

    check_name(name)
    if not 3 <= models <= 500:
        raise UsageError(f"--models must be between 3 and 500, not {models}")
    if budget is not None and not 0 < budget <= 86_400:
        raise UsageError(f"--budget must be between 0 and 86,400 seconds, not {budget}")
    chosen = candidates()[:models]
    with measuring("cpu"):  # the whole calibration: no other measurement may interleave with it
        measured = measure_models(chosen, threads, repeat, budget, report)
    if len(measured) < 3:
        raise NarError(f"only {len(measured)} models measured; calibration needs at least 3 (raise --budget)")
    x = np.stack([features(c.predicted, c.macs) for c, _ in measured])
    y = np.log([ms for _, ms in measured])
    head = fit(x, y) | {"name": name, "device": device_info("cpu", threads).to_dict(), "batch": 1,
                        "models": [{"name": c.name, "ms": ms} for c, ms in measured],
                        "columns": list(CPU_COLUMNS), "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    devices_dir().mkdir(parents=True, exist_ok=True)
    path = write_text(devices_dir() / f"{name}.json", json.dumps(head, indent=2) + "\n")
    return head | {"path": str(path)}


def _read_head(path: Path) -> dict[str, Any]:
    """A saved device head; ValueError (or OSError) when the file is not one `calibrate` wrote."""
    head = json.loads(path.read_text())
    if not isinstance(head, dict) or not all(isinstance(head.get(k), list) for k in ("mean", "std", "weights")):
        raise ValueError("not a device head")
    if not len(head["mean"]) == len(head["std"]) == len(head["weights"]) or \
            not all(isinstance(head.get(k), (int, float)) for k in ("intercept", "half")):
        raise ValueError("its fitted parameters do not fit together")
    return head


def calibrated_devices() -> dict[str, dict[str, Any]]:
    """Every saved device head by name; StoreError naming a file that is damaged."""
    from narcli.errors import StoreError, damaged_store

    out = {}
    if devices_dir().is_dir():
        for path in sorted(devices_dir().glob("*.json")):
            try:
                out[path.stem] = _read_head(path)
            except (OSError, ValueError, TypeError, RecursionError) as exc:
                raise StoreError(damaged_store(path, exc, "device head")) from None
    return out


def devices_health() -> dict[str, Any]:
    """The saved device heads as `nar cache info` shows them: "ok", or which files are damaged."""
    folder, damaged = devices_dir(), []
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in files:
        try:
            _read_head(path)
        except (OSError, ValueError, TypeError, RecursionError) as exc:
            damaged.append(f"{path.name}: {type(exc).__name__}: {str(exc)[:80]}")
    return {"name": "devices/", "what": "device latency heads (nar calibrate)", "path": str(folder),
            "exists": bool(files), "bytes": sum(p.stat().st_size for p in files),
            "health": "; ".join(damaged[:3]) or "ok"}


def repair_devices() -> str | None:
    """Set each damaged device head aside (NAME.json.damaged): `nar calibrate` makes it again."""
    folder = devices_dir()
    moved = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            _read_head(path)
        except (OSError, ValueError, TypeError, RecursionError):
            path.replace(path.with_name(path.name + ".damaged"))
            moved.append(path.name)
    return f"set the damaged device heads {', '.join(moved)} aside in {folder}" if moved else None


def device_rows(rows: list, macs: int, devices: dict[str, dict[str, Any]] | None = None) -> list:
    """Rows for the calibrated devices, from the reference-CPU prediction of the same model (or, for a
    head fitted before it existed, the timm CPU columns')."""
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target

    devices = calibrated_devices() if devices is None else devices
    out = []
    cpu = {r.target.column: r for r in rows if r.target.kind == "latency"}
    for name, head in devices.items():
        target = Target(name, "latency", "ms", name, 1, log=True)
        trained = f"calibrated on this machine with {len(head.get('models', []))} zoo models ({head.get('created', '?')})"
        usable = [cpu.get(c) for c in head.get("columns", CPU_COLUMNS)]
        if not usable or any(r is None or r.status != "ok" for r in usable) or macs <= 0:
            why = next((r for r in usable if r is not None and r.status != "ok"), None)
            reason = why.reason if why else "the reference CPU latency does not apply"
            out.append(Row("device", f"device {name}", target, None, None, None, "n/a", reason, trained))
            continue
        x = np.array([math.log(r.value) for r in usable if r is not None and r.value] + [math.log(macs)])
        centre = float(apply(head, x)[0])
        out.append(Row("device", f"device {name}", target, math.exp(centre), math.exp(centre - head["half"]),
                       math.exp(centre + head["half"]), "ok", "", trained))
    return out


def _scores(predicted: np.ndarray, true: np.ndarray) -> dict[str, float]:
    from narcli.predict.metrics import mape, within

    return {"mape": round(mape(predicted, true), 2), "within10": round(within(predicted, true), 1)}


def held_out_models(rest: list[Candidate], count: int) -> list[Candidate]:
    """`count` models of every coarse class, each class's share spread evenly over its MACs range."""
    by_kind: dict[str, list[Candidate]] = {}
    for candidate in sorted(rest, key=lambda c: c.macs):
        by_kind.setdefault(candidate.coarse, []).append(candidate)
    quota = {kind: 0 for kind in by_kind}
    while sum(quota.values()) < min(count, len(rest)):  # deal seats round-robin, smallest classes fill first
        for kind in sorted(by_kind, key=lambda k: len(by_kind[k])):
            if quota[kind] < len(by_kind[kind]) and sum(quota.values()) < count:
                quota[kind] += 1
    out = []
    for kind, models in by_kind.items():
        if quota[kind]:
            out += [models[i] for i in np.unique(np.linspace(0, len(models) - 1, quota[kind]).round().astype(int))]
    return out


def evaluate_calibration(ks: tuple[int, ...] = (5, 10, 20, 40), held_out: int = 50, threads: int | None = None,
                         repeat: int = 20, report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Calibrate on the first K chosen models for each K; score on `held_out` other zoo models of
    every coarse class, beside (a) a MACs-only linear fit and (b) the reference head's prediction
    rescaled by the K points' median ratio."""
    if not ks or min(ks) < 3 or max(ks) > 200:
        raise UsageError("--ks: calibration sizes between 3 and 200")
    if not 10 <= held_out <= 500:
        raise UsageError(f"--held-out must be between 10 and 500, not {held_out}")
    order = candidates()
    pool, rest = order[: max(ks)], order[max(ks):]
    if len(rest) < held_out:
        raise NarError(f"only {len(rest)} zoo models left for the held-out set")
    test = held_out_models(rest, held_out)
    report(f"measuring {len(pool)} calibration candidates and {len(test)} held-out models")
    with measuring("cpu"):
        calibration = measure_models(pool, threads, repeat, None, report)
        evaluation = measure_models(test, threads, repeat, None, report)
    truth = np.array([ms for _, ms in evaluation])
    x_test = np.stack([features(c.predicted, c.macs) for c, _ in evaluation])
    macs_test = np.array([c.macs for c, _ in evaluation], dtype=np.float64)
    reference_test = np.array([c.predicted[REFERENCE_COLUMN] for c, _ in evaluation])
    rows = []
    for k in ks:
        chosen = calibration[:k]
        x = np.stack([features(c.predicted, c.macs) for c, _ in chosen])
        y = np.array([ms for _, ms in chosen])
        head = fit(x, np.log(y))
        ours = np.exp(apply(head, x_test))
        inside = np.abs(np.log(truth) - apply(head, x_test)) <= head["half"]
        a, b = np.polyfit(np.array([c.macs for c, _ in chosen], dtype=np.float64), y, 1)
        macs_only = np.maximum(a * macs_test + b, 1e-3)
        scale = float(np.median(y / np.array([c.predicted[REFERENCE_COLUMN] for c, _ in chosen])))
        rows.append({"k": k, "calibrated": _scores(ours, truth), "macs_linear": _scores(macs_only, truth),
                     "reference_rescaled": _scores(reference_test * scale, truth) | {"scale": round(scale, 3)},
                     "coverage90": round(float(inside.mean() * 100), 1)})
    kinds: dict[str, int] = {}
    for c, _ in evaluation:
        kinds[c.coarse] = kinds.get(c.coarse, 0) + 1
    return {"held_out": [{"name": c.name, "ms": ms, "gmacs": round(c.macs / 1e9, 3), "coarse": c.coarse}
                         for c, ms in evaluation],
            "calibration": [{"name": c.name, "ms": ms, "coarse": c.coarse} for c, ms in calibration], "results": rows,
            "gmacs_range": [round(float(macs_test.min()) / 1e9, 3), round(float(macs_test.max()) / 1e9, 3)],
            "kinds": kinds}
