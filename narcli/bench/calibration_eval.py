"""`nar eval calibration`: how well `nar calibrate` carries the reference-CPU head to this machine.

Calibrate on the first K of the calibration order (as `nar calibrate --models K` would) and score on
`held_out` other zoo models of every coarse class, spread over each class's MACs range. Held-out
models are drawn first from the families that set the reference head's interval (named in its card),
and everything is predicted with the head fitted without them (`latency.HELD_OUT_FOLDER`, shipped
beside the head, which itself fitted every family), so the figure is for designs new to the head as
well as to the calibration; the result says how many were. Beside the calibrated head (`transfer`):
the head fitted before it (ridge on the whole reference prediction and MACs), a MACs-only line, and
the reference prediction rescaled by the K points' median ratio. At more than one thread the
calibration models are timed at one thread too and the head is fitted over them
(`transfer.fit_over_one_thread`), as `nar calibrate` fits it. Calibration models the machine leaves
out are replaced from further down the order, as `nar calibrate` replaces them
(`calibrate.measured_with_replacements`), never by a held-out model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from narcli.bench.calibrate import (fit_device, fitting_parts, measure_models, measured_on_reference,
                                    measured_with_replacements)
from narcli.bench.calibration_set import CPU_COLUMNS, REFERENCE_COLUMN, Candidate, candidates, with_parts
from narcli.bench.lock import measuring
from narcli.bench.timing_records import timings_summary
from narcli.bench.transfer import THREADS_FIT, ridge_apply, ridge_fit
from narcli.errors import NarError, UsageError


def _scores(predicted: np.ndarray, true: np.ndarray) -> dict[str, float]:
    from narcli.predict.metrics import mape, within

    return {"mape": round(mape(predicted, true), 2), "within10": round(within(predicted, true), 1)}


def features(candidate_predicted: dict[str, float], macs: int, columns: tuple[str, ...] = CPU_COLUMNS) -> np.ndarray:
    """The ridge head's features (`transfer.ridge_fit`): log reference predictions and log MACs."""
    return np.array([math.log(candidate_predicted[c]) for c in columns] + [math.log(macs)])


def held_out_head() -> Any:
    """The reference head fitted without the families that set its interval (the bundled head where
    an install lacks it: then those families were fitted, and the figure flatters)."""
    from narcli.predict.bundle import DATA_DIR, load_bundle
    from narcli.predict.latency import HELD_OUT_FOLDER, load_head

    return load_head(DATA_DIR / HELD_OUT_FOLDER) or load_bundle().latency


def unfitted_families(head: Any = None) -> set[str]:
    """Families `head` (default: the held-out fit) never fitted (they set its interval), from its card."""
    head = head or held_out_head()
    return set((head.metrics or {}).get("held_out_families", [])) if head is not None else set()


def held_out_models(rest: list[Candidate], count: int, prefer: set[str] | None = None) -> list[Candidate]:
    """`count` models of every coarse class, each class's share spread evenly over its MACs range;
    within a class, models of `prefer`red families (new to the reference head) when it has enough."""
    prefer = prefer or set()
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
        if not quota[kind]:
            continue
        new = [m for m in models if m.family in prefer]
        pool = new if len(new) >= quota[kind] else models
        out += [pool[i] for i in np.unique(np.linspace(0, len(pool) - 1, quota[kind]).round().astype(int))]
    return out


def too_few_measured(calibration: int, evaluation: int, busy: list[str]) -> None:
    """A NarError saying why, when fewer than 3 calibration models or no held-out model were measured
    (a machine busy through most of the run leaves them out)."""
    if calibration >= 3 and evaluation:
        return
    what = (f"only {calibration} calibration model{'s' * (calibration != 1)} measured; the evaluation needs at least 3"
            if calibration < 3 else "no held-out model measured; the evaluation needs at least one")
    why = (f"{len(set(busy))} left out: the machine stayed busy while timing them; run again when it is quiet "
           "(what was measured is kept), or --allow-busy to keep them" if busy
           else "the others could not be measured: see above")
    raise NarError(f"{what} ({why})")


def evaluate_calibration(ks: tuple[int, ...] = (5, 10, 20, 40), held_out: int = 50, threads: int | None = None,
                         repeat: int = 20, report: Callable[[str], None] = lambda line: None,
                         allow_busy: bool = False, fresh: bool = False) -> dict[str, Any]:
    """Figures for each K (see the module's docstring). `fresh`: every model timed again, none reused
    from the store (`calibrate.measure_models`), so calibration and held-out times share one sitting."""
    from narcli.bench.device import device_info
    from narcli.bench.transfer import predict_log
    from narcli.predict.metrics import spearman

    if not ks or min(ks) < 3 or max(ks) > 200:
        raise UsageError("--ks: calibration sizes between 3 and 200")
    if not 10 <= held_out <= 500:
        raise UsageError(f"--held-out must be between 10 and 500, not {held_out}")
    info = device_info("cpu", threads)
    head = held_out_head()
    order = candidates(head)
    pool, rest = order[: max(ks)], order[max(ks):]
    if len(rest) < held_out:
        raise NarError(f"only {len(rest)} zoo models left for the held-out set")
    new_families = unfitted_families(head)
    test = with_parts(held_out_models(rest, held_out, new_families), head)
    testing = {c.name for c in test}
    report(f"measuring {len(pool)} calibration candidates and {len(test)} held-out models on {info.describe()}")
    many, busy = info.threads > 1, []
    timings: dict[str, dict[str, Any]] = {}
    with measuring("cpu"):  # as `nar calibrate` does: stand-ins for those left out, at one thread too above one
        calibration, one, stand_ins = measured_with_replacements(
            pool + [c for c in rest if c.name not in testing], max(ks), info.threads, repeat, None, report, allow_busy,
            busy, fresh, timings, {}, head)
        evaluation = measure_models(test, threads, repeat, None, report, allow_busy, busy, fresh=fresh, timings=timings)
    too_few_measured(len(calibration), len(evaluation), busy)
    reference = measured_on_reference()
    truth = np.array([ms for _, ms in evaluation])
    x_test = np.stack([features(c.predicted, c.macs) for c, _ in evaluation])
    parts_test = np.stack([c.parts for c, _ in evaluation])
    macs_test = np.array([c.macs for c, _ in evaluation], dtype=np.float64)
    reference_test = np.array([c.predicted[REFERENCE_COLUMN] for c, _ in evaluation])
    new = np.array([c.family in new_families for c, _ in evaluation])
    rows = []
    for k in ks:
        chosen = calibration[:k]
        y = np.array([ms for _, ms in chosen])
        found = [c for c, _ in chosen]
        calibrated = fit_device(found, fitting_parts(found, reference), np.log(y), one, head.half)
        centre = predict_log(calibrated, parts_test)
        ours = np.exp(centre)
        inside = np.abs(np.log(truth) - centre) <= calibrated["half"]
        before = ridge_fit(np.stack([features(c.predicted, c.macs) for c, _ in chosen]), np.log(y))
        a, b = np.polyfit(np.array([c.macs for c, _ in chosen], dtype=np.float64), y, 1)
        scale = float(np.median(y / np.array([c.predicted[REFERENCE_COLUMN] for c, _ in chosen])))
        rows.append({"k": len(chosen), "calibrated": _scores(ours, truth) | {
                         "spearman": round(spearman(ours, truth), 3),
                         "coverage90": round(float(inside.mean() * 100), 1),
                         "half_width_pct": round(float((np.exp(calibrated["half"]) - 1) * 100), 1),
                         "own_half_width_pct": round(float((np.exp(calibrated["loo_half"]) - 1) * 100), 1),
                         "new_families_mape": _scores(ours[new], truth[new])["mape"] if new.any() else None,
                         "scales": [round(float(np.exp(t)), 4) for t in calibrated["scales"]],
                         "prior": calibrated["prior"]}
                         | ({"thread_factors": calibrated["thread_factors"]} if many else {}),
                     "previous_head": _scores(np.exp(ridge_apply(before, x_test)), truth),
                     "macs_linear": _scores(np.maximum(a * macs_test + b, 1e-3), truth),
                     "reference_rescaled": _scores(reference_test * scale, truth) | {"scale": round(scale, 3)}})
    kinds: dict[str, int] = {}
    for c, _ in evaluation:
        kinds[c.coarse] = kinds.get(c.coarse, 0) + 1
    return {"device": info.to_dict(),
            "held_out": [{"name": c.name, "ms": ms, "gmacs": round(c.macs / 1e9, 3), "coarse": c.coarse,
                          "new_family": c.family in new_families} for c, ms in evaluation],
            "new_families": int(new.sum()),
            "calibration": [{"name": c.name, "ms": ms, "coarse": c.coarse} | ({"one_thread_ms": one[c.name]} if many else {})
                            for c, ms in calibration], "stand_ins": stand_ins, "results": rows,
            "threads_fit": THREADS_FIT if many else "one thread",
            "gmacs_range": [round(float(macs_test.min()) / 1e9, 3), round(float(macs_test.max()) / 1e9, 3)],
            "kinds": kinds, "timings": timings_summary(timings)}
