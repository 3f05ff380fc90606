"""`nar calibrate` and `nar eval calibration`: this machine's latency head from a handful of zoo
measurements.

Choosing models: timm ImageNet classifiers the bundled timm head answers for, between 0.05 and 20
GMACs, ordered by farthest-point sampling over (log MACs, log params, log activations, and the
timm head's predicted CPU latency per MAC) — each next model is the one least like those already
chosen — starting from the median-MACs model. `--models K` takes the first K; `--budget` stops when
the time is spent. Measurements already stored are reused (resumable).

The head: a ridge regression of log(measured latency) on the bundled CPU latency columns' log
predictions and log MACs (standardised features, intercept unpenalised); the interval is the 90 %
quantile of its leave-one-out errors. Saved as $NAR_HOME/devices/NAME.json.
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

LOW_MACS, HIGH_MACS = 5e7, 2e10
RIDGE = 0.05  # per sample, on standardised features: little shrinkage, but K = 5 stays solvable
CPU_COLUMNS = ("fp32-nchw-pt240-cpu-i9_10940x-dynamo", "fp32-nchw-pt240-cpu-i7_12700h-dynamo")


@dataclass
class Candidate:
    name: str  # zoo model id
    macs: int
    params: int
    predicted: dict[str, float]  # bundled CPU column -> predicted ms
    features: np.ndarray  # for the farthest-point order


def devices_dir() -> Path:
    from narcli.scan.cache import nar_home

    return nar_home() / "devices"


def check_name(name: str) -> None:
    if not name or len(name) > 64 or not all(c.isalnum() or c in "-_." for c in name) or name.startswith("."):
        raise UsageError(f"device name {name!r}: use 1-64 letters, digits, '-', '_' or '.'")


def candidates() -> list[Candidate]:
    """Zoo models the calibration can use, in farthest-point order."""
    from narcli.predict.bundle import load_bundle
    from narcli.predict.zoo_predictions import stored_predictions
    from narcli.zoo.store import Zoo, bundled_zoo_path

    bundle = load_bundle()
    found: list[Candidate] = []
    seen: set[str] = set()
    with Zoo() as zoo:
        for model in zoo.models(source="timm"):
            if model.status != "ok" or not model.macs or not LOW_MACS <= model.macs <= HIGH_MACS:
                continue
            if model.graph_hash in seen:
                continue
            rows = stored_predictions(Path(model.db or bundled_zoo_path()), model.id, bundle) or []
            predicted = {r.target.column: r.value for r in rows if r.status == "ok" and r.target.column in CPU_COLUMNS}
            if len(predicted) != len(CPU_COLUMNS):
                continue
            seen.add(model.graph_hash)
            found.append(Candidate(model.id, model.macs, model.params or 0, predicted, np.zeros(0)))
    if not found:
        raise NarError("no zoo model to calibrate with: the timm head's predictions are missing; run `nar zoo embed`")
    raw = np.array([[math.log(c.macs), math.log(max(c.params, 1)),
                     math.log(c.predicted[CPU_COLUMNS[0]]) - math.log(c.macs)] for c in found])
    z = (raw - raw.mean(0)) / (raw.std(0) + 1e-9)
    z[:, 0] *= 2  # MACs range matters most for latency
    order = [int(np.argsort(raw[:, 0])[len(found) // 2])]
    distance = np.linalg.norm(z - z[order[0]], axis=1)
    while len(order) < len(found):
        nxt = int(np.argmax(distance))
        order.append(nxt)
        distance = np.minimum(distance, np.linalg.norm(z - z[nxt], axis=1))
    return [found[i] for i in order]


def features(candidate_predicted: dict[str, float], macs: int) -> np.ndarray:
    return np.array([math.log(candidate_predicted[c]) for c in CPU_COLUMNS] + [math.log(macs)])


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
    from narcli.bench.runner import bench_target

    began, out = time.perf_counter(), []
    for i, candidate in enumerate(chosen, 1):
        if budget is not None and time.perf_counter() - began > budget:
            report(f"budget of {budget:g} s spent after {len(out)} models")
            break
        result = bench_target(candidate.name, 1, "cpu", threads, repeat, reuse=True)
        out.append((candidate, result.median_ms))
        report(f"{i}/{len(chosen)} {candidate.name}: {result.median_ms:.2f} ms"
               + (" (stored)" if result.reused else ""))
    return out


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
    path = devices_dir() / f"{name}.json"
    path.write_text(json.dumps(head, indent=2) + "\n")
    return head | {"path": str(path)}


def calibrated_devices() -> dict[str, dict[str, Any]]:
    out = {}
    if devices_dir().is_dir():
        for path in sorted(devices_dir().glob("*.json")):
            try:
                out[path.stem] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
    return out


def device_rows(rows: list, macs: int, devices: dict[str, dict[str, Any]] | None = None) -> list:
    """Rows for the calibrated devices, from the bundled CPU columns' predictions of the same model."""
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target

    devices = calibrated_devices() if devices is None else devices
    out = []
    cpu = {r.target.column: r for r in rows if r.target.column in CPU_COLUMNS}
    for name, head in devices.items():
        target = Target(name, "latency", "ms", name, 1, log=True)
        trained = f"calibrated on this machine with {len(head.get('models', []))} zoo models ({head.get('created', '?')})"
        usable = [cpu.get(c) for c in head.get("columns", CPU_COLUMNS)]
        if not usable or any(r is None or r.status != "ok" for r in usable) or macs <= 0:
            why = next((r for r in usable if r is not None and r.status != "ok"), None)
            reason = why.reason if why else "the bundled CPU latency columns do not apply"
            out.append(Row("device", f"device {name}", target, None, None, None, "n/a", reason, trained))
            continue
        x = np.array([math.log(r.value) for r in usable] + [math.log(macs)])
        centre = float(apply(head, x)[0])
        out.append(Row("device", f"device {name}", target, math.exp(centre), math.exp(centre - head["half"]),
                       math.exp(centre + head["half"]), "ok", "", trained))
    return out


def _scores(predicted: np.ndarray, true: np.ndarray) -> dict[str, float]:
    from narcli.predict.metrics import mape, within

    return {"mape": round(mape(predicted, true), 2), "within10": round(within(predicted, true), 1)}


def evaluate_calibration(ks: tuple[int, ...] = (5, 10, 20, 40), held_out: int = 50, threads: int | None = None,
                         repeat: int = 20, report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Calibrate on the first K chosen models for each K; score on `held_out` other zoo models
    spread evenly over the MACs range, beside (a) a MACs-only linear fit and (b) the bundled CPU
    column that fits the K points best, rescaled by their median ratio."""
    if not ks or min(ks) < 3 or max(ks) > 200:
        raise UsageError("--ks: calibration sizes between 3 and 200")
    if not 10 <= held_out <= 500:
        raise UsageError(f"--held-out must be between 10 and 500, not {held_out}")
    order = candidates()
    pool, rest = order[: max(ks)], sorted(order[max(ks):], key=lambda c: c.macs)
    if len(rest) < held_out:
        raise NarError(f"only {len(rest)} zoo models left for the held-out set")
    picks = np.unique(np.linspace(0, len(rest) - 1, held_out).round().astype(int))
    test = [rest[i] for i in picks]
    report(f"measuring {len(pool)} calibration candidates and {len(test)} held-out models")
    with measuring("cpu"):
        calibration = measure_models(pool, threads, repeat, None, report)
        evaluation = measure_models(test, threads, repeat, None, report)
    truth = np.array([ms for _, ms in evaluation])
    x_test = np.stack([features(c.predicted, c.macs) for c, _ in evaluation])
    macs_test = np.array([c.macs for c, _ in evaluation], dtype=np.float64)
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
        best = None
        for column in CPU_COLUMNS:
            fitted = np.array([c.predicted[column] for c, _ in chosen])
            scale = float(np.median(y / fitted))
            error = float(np.mean(np.abs(fitted * scale - y) / y))
            if best is None or error < best[0]:
                best = (error, column, scale)
        rescaled = np.array([c.predicted[best[1]] for c, _ in evaluation]) * best[2]
        rows.append({"k": k, "calibrated": _scores(ours, truth), "macs_linear": _scores(macs_only, truth),
                     "nearest_column": _scores(rescaled, truth) | {"column": best[1], "scale": round(best[2], 3)},
                     "coverage90": round(float(inside.mean() * 100), 1)})
    return {"held_out": [{"name": c.name, "ms": ms, "gmacs": round(c.macs / 1e9, 3)} for c, ms in evaluation],
            "calibration": [{"name": c.name, "ms": ms} for c, ms in calibration], "results": rows,
            "gmacs_range": [round(float(macs_test.min()) / 1e9, 3), round(float(macs_test.max()) / 1e9, 3)]}
