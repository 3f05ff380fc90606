"""`nar calibrate` and `nar eval calibration`: this machine's latency head from a handful of zoo
measurements, fitted against the reference-CPU latency head, so it answers for any model that head
answers for.

Choosing models: `calibration_set` (zoo models in farthest-point order); `--models K` takes the
first K; `--budget` stops when the time is spent. Measurements already stored are reused (resumable).
Where the machine leaves some of the K out (busy through their attempts, or they fail), the next
candidates in the order take their places (`measured_with_replacements`), at most K more in all.

The head: the reference prediction split by how its work parallelises, each part with its own
scale (`transfer.fit_head`, where the fit is explained), fitted on the calibration models' parts
rescaled to what the reference machine measured for them (`fitting_parts`), so that the reference
head's errors on those few models do not set this machine's scales. Saved as $NAR_HOME/devices/NAME.json.
`transfer.ridge_fit` is the head fitted before that (a ridge of log latency on log reference prediction and
log MACs), kept because `nar eval calibration` shows it beside the new one and heads saved with it
(and those fitted on the timm CPU columns, named in their `columns`) still answer.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from narcli.bench.calibration_set import CPU_COLUMNS, Candidate, candidates, with_parts
from narcli.bench.lock import measuring
from narcli.bench.timing_records import timing_record, timings_summary
from narcli.bench.transfer import FITTED_ON, HEAD_PARTS, fitted_on, fitting_parts, measured_on_reference
from narcli.errors import NarError, UsageError
from narcli.fsutil import write_text

# times a model timed on a busy machine is tried, each retry after the rest of the queue (a
# neighbour's bursts on a shared core come and go within seconds)
BUSY_TRIES = 3


def devices_dir() -> Path:
    from narcli.scan.cache import nar_home

    return nar_home() / "devices"


def check_name(name: str) -> None:
    if not name or len(name) > 64 or not all(c.isalnum() or c in "-_." for c in name) or name.startswith("."):
        raise UsageError(f"device name {name!r}: use 1-64 letters, digits, '-', '_' or '.'")


def measure_models(chosen: list[Candidate], threads: int | None, repeat: int, budget: float | None,
                   report: Callable[[str], None], allow_busy: bool = False,
                   busy: list[str] | None = None, fresh: bool = False,
                   timings: dict[str, dict[str, Any]] | None = None) -> list[tuple[Candidate, float]]:
    """Each candidate's batch-1 latency on this CPU, in order: stored measurements are reused (not
    with `fresh`: each is timed again and replaces the stored one), zoo models are measured one after
    another in one long-lived worker (library imports and registries paid once: a fresh child per
    model cost 10-30 s), anything else through `bench_target`. The names of models left out because
    the machine stayed busy are added to `busy`; where each time came from (`timing_record`) to
    `timings`, by name."""
    busy = [] if busy is None else busy  # the caller's list, to say why too few were measured
    timings = {} if timings is None else timings
    from narcli.bench import store
    from narcli.bench.device import device_info
    from narcli.bench.runner import bench_target

    info = device_info("cpu", threads)
    began, found = time.perf_counter(), {}
    done = [0]

    def note(candidate: Candidate, ms: float, reused: bool, value: dict[str, Any] | None = None) -> None:
        done[0] += 1  # progress as each model is done
        timings[candidate.name] = timing_record(value or {}, reused)
        report(f"{done[0]}/{len(chosen)} {candidate.name}: {ms:.2f} ms" + (" (stored)" if reused else ""))

    pooled = [c for c in chosen if c.graph_hash]
    for candidate in pooled if not fresh else []:
        stored = store.load(candidate.graph_hash, 1, info.key, candidate.macs)
        if stored:
            found[candidate.name] = (stored["median_ms"], True)
            note(candidate, stored["median_ms"], True, stored)
    todo = [c for c in pooled if c.name not in found]
    if todo:
        found.update(_measure_pooled(todo, info, repeat, budget, began, report, note, allow_busy, busy))
    out = []
    for candidate in chosen:
        if candidate.name not in found and not candidate.graph_hash:
            if budget is not None and time.perf_counter() - began > budget:
                break
            result = bench_target(candidate.name, 1, "cpu", threads, repeat, reuse=not fresh, allow_busy=allow_busy,
                                  report=report)
            if result.busy and not allow_busy:
                report(f"busy: {candidate.name} left out (the machine was busy while timing it)")
                busy.append(candidate.name)
                continue
            found[candidate.name] = (result.median_ms, result.reused)
            note(candidate, result.median_ms, result.reused, {"quiet": result.quiet})  # a reused one's date: unknown
        if candidate.name in found:
            out.append((candidate, found[candidate.name][0]))
    if len(out) < len(chosen) and budget is not None and time.perf_counter() - began > budget:
        report(f"budget of {budget:g} s spent after {len(out)} models")
    return out


def _measure_pooled(todo: list[Candidate], info: Any, repeat: int, budget: float | None, began: float,
                    report: Callable[[str], None], note: Callable[..., None],
                    allow_busy: bool, busy: list[str]) -> dict[str, tuple[float, bool]]:
    from narcli.bench import store
    from narcli.bench.quiet import wait_for_quiet
    from narcli.bench.reference import measure_zoo_model
    from narcli.bench.runner import core_speed_checked, unchecked_first
    from narcli.trace.pool import TaskResult, run_pool

    protocol = {"repeat": repeat, "warmup_runs": 3, "warmup_seconds": 0.5, "max_seconds": None, "min_repeat": repeat}
    by_name = {c.name: c for c in todo}
    found: dict[str, tuple[float, bool]] = {}
    again: list[Candidate] = []  # timed on a busy machine: once more, when it is quiet
    tries: dict[str, int] = {}

    def tasks():
        queue = list(todo)
        while queue or again:
            candidate = queue.pop(0) if queue else again.pop()
            if budget is not None and time.perf_counter() - began > budget:
                return
            if tries.get(candidate.name) and not wait_for_quiet(300, report):
                report("the machine stayed busy for 300 s; stopping (run again to resume)")
                busy.extend(c.name for c in [candidate, *queue, *again])
                return
            tries[candidate.name] = tries.get(candidate.name, 0) + 1
            yield candidate.name, (candidate.source, candidate.name, info.threads, protocol)

    def on_result(result: TaskResult) -> None:
        candidate = by_name[result.key]
        if not result.ok:
            report(f"could not measure {candidate.name}: {result.message[:100]}")
            return
        verdict = core_speed_checked(result.value.get("quiet")) or {}
        result.value["quiet"] = verdict or None
        if not allow_busy and unchecked_first(verdict) and tries[candidate.name] < BUSY_TRIES:
            again.append(candidate)
            report(f"{candidate.name}: the first timing at these threads on this machine, not stored; measured "
                   "again after the rest, against the core speed they show")
            return
        if verdict.get("busy") and not allow_busy:
            retry = tries[candidate.name] < BUSY_TRIES
            if retry:
                again.append(candidate)
            else:
                busy.append(candidate.name)
            report(f"busy: {candidate.name} not stored ({'; '.join(verdict.get('reasons', []))})"
                   + ("; measured again once quiet" if retry else "; left out"))
            return
        value = result.value | {"name": candidate.name, "graph_hash": candidate.graph_hash, "batch": 1,
                                "device": info.to_dict(), "params": candidate.params, "macs": candidate.macs}
        store.save(candidate.graph_hash, 1, info.key, candidate.name, value)
        found[candidate.name] = (value["median_ms"], False)
        note(candidate, value["median_ms"], False, value)

    run_pool(measure_zoo_model, tasks(), on_result, jobs=1, timeout=600, tasks_per_worker=400, max_rss=6 << 30)
    return found


def calibrate(name: str = "local", models: int = 20, budget: float | None = None, threads: int | None = None,
              repeat: int = 20, report: Callable[[str], None] = lambda line: None,
              allow_busy: bool = False, fresh: bool = False) -> dict[str, Any]:
    """Measure `models` chosen zoo models (within `budget` seconds), fit and save the device head.
    `fresh`: time every model again instead of reusing stored timings (a machine's speed moves
    between days); the head says where its times came from (`timings_summary`)."""
    from narcli.bench.device import device_info

    check_name(name)
    if not 3 <= models <= 500:
        raise UsageError(f"--models must be between 3 and 500, not {models}")
    if budget is not None and not 0 < budget <= 86_400:
        raise UsageError(f"--budget must be between 0 and 86,400 seconds, not {budget}")
    order = candidates()
    busy: list[str] = []
    timings: dict[str, dict[str, Any]] = {}
    one_timings: dict[str, dict[str, Any]] = {}
    info = device_info("cpu", threads)
    with measuring("cpu"):  # the whole calibration: no other measurement may interleave with it
        measured, one, stand_ins = measured_with_replacements(
            order, models, info.threads, repeat, budget, report, allow_busy, busy, fresh, timings, one_timings)
    if len(measured) < 3:
        why = (f"{len(busy)} left out: the machine stayed busy while timing them; run again when it is "
               "quiet, or --allow-busy to keep them" if busy else "raise --budget" if budget is not None
               else "the others could not be measured: see above")
        raise NarError(f"only {len(measured)} model{'' if len(measured) == 1 else 's'} measured; calibration needs at "
                       f"least 3 ({why})")
    reference = measured_on_reference()
    parts = fitting_parts([c for c, _ in measured], reference)
    y = np.log([ms for _, ms in measured])
    head = fit_device([c for c, _ in measured], parts, y, one, _reference_half()) | {
        "name": name, "device": info.to_dict(), "batch": 1,
        "models": [{"name": c.name, "ms": ms} for c, ms in measured], "columns": list(CPU_COLUMNS),
        "created": time.strftime("%Y-%m-%d %H:%M:%S"), "reference": _reference_fingerprint(),
        "fitted_on": fitted_on([c for c, _ in measured], reference),
        "timings": timings_summary({c.name: timings[c.name] for c, _ in measured if c.name in timings}),
        "stand_ins": stand_ins}
    if one is not None:
        head["one_thread_timings"] = timings_summary({n: one_timings[n] for n in one if n in one_timings})
    path = _save_head(name, head)
    return head | {"path": str(path), "half_width_pct": round((math.exp(head["half"]) - 1) * 100, 1),
                   "own_half_width_pct": round((math.exp(head["loo_half"]) - 1) * 100, 1),
                   "prior_half_width_pct": round((math.exp(head["prior_half"]) - 1) * 100, 1)
                   if head.get("prior_half") else None, "asked": min(models, len(order))}


def measured_with_replacements(order: list[Candidate], count: int, threads: int, repeat: int, budget: float | None,
                               report: Callable[[str], None], allow_busy: bool, busy: list[str], fresh: bool,
                               timings: dict[str, dict[str, Any]], one_timings: dict[str, dict[str, Any]],
                               head: Any = None) -> tuple[list[tuple[Candidate, float]], dict[str, float] | None, int]:
    """The first `count` of `order` timed at `threads` (and, above one thread, at one thread too:
    `timed_at_one_thread`), with the next candidates in `order` taking the places of those the machine
    left out (busy through their attempts, failed, or gone from the zoo): a calibration asked for 20
    models fits on 20 where it can, and each stand-in is the farthest from those before it, as the
    order makes it. At most `count` stand-ins in all, and none once a round measured nothing (a machine
    that stays busy) or the budget is spent. Returns (the measured pairs, name -> one-thread ms or
    None at one thread, how many stand-ins were timed). Parts come from `head` (default: the bundled
    reference head; `with_parts`)."""
    began, many = time.perf_counter(), threads > 1
    measured: list[tuple[Candidate, float]] = []
    one: dict[str, float] | None = {} if many else None
    batch, tried = with_parts(order[:count], head), min(count, len(order))

    def left() -> float | None:  # one budget for every round and both thread counts
        return None if budget is None else budget - (time.perf_counter() - began)

    while batch:
        got = measure_models(batch, threads, repeat, left(), report, allow_busy, busy, fresh=fresh, timings=timings)
        if many and got:
            remaining = left()
            times, got = timed_at_one_thread(got, repeat, None if remaining is None else max(remaining, 1e-3), report,
                                             allow_busy, busy, fresh=fresh, timings=one_timings)
            one.update(times)
        measured += got
        short, remaining = count - len(measured), left()
        if short <= 0 or not got or (remaining is not None and remaining <= 0) or tried >= min(2 * count, len(order)):
            break
        stand_ins = order[tried:min(tried + short, 2 * count)]
        tried += len(stand_ins)
        report(f"{short} of the {count} models left out; timing the next {len(stand_ins)} in the calibration order "
               "in their place")
        batch = with_parts(stand_ins, head)
    return measured, one, tried - min(count, len(order))


def timed_at_one_thread(measured: list[tuple[Candidate, float]], repeat: int, budget: float | None,
                        report: Callable[[str], None], allow_busy: bool = False, busy: list[str] | None = None,
                        fresh: bool = False, timings: dict[str, dict[str, Any]] | None = None
                        ) -> tuple[dict[str, float], list[tuple[Candidate, float]]]:
    """The models measured at more than one thread, timed at one thread too (stored timings reused
    unless `fresh`): (name -> one-thread ms, the measured pairs that have one), for `fit_device`."""
    report("the same models at 1 thread, which the thread factors are fitted over")
    one = {c.name: ms for c, ms in measure_models([c for c, _ in measured], 1, repeat, budget, report, allow_busy, busy,
                                                  fresh=fresh, timings=timings)}
    return one, [(c, ms) for c, ms in measured if c.name in one]


def fit_device(found: list[Candidate], parts: np.ndarray, y: np.ndarray, one: dict[str, float] | None,
               prior_half: float | None) -> dict[str, Any]:
    """This machine's head from `found`'s fitting parts and log times `y`: `transfer.fit_head`, or,
    with their one-thread times (`one`, name -> ms; a calibration at more than one thread),
    `transfer.fit_over_one_thread` with those times stored beside it for fitting again. (From
    2026-12-05 to 12-07 a probe of this CPU's pointwise convolutions placed that thread part's prior;
    on the AMD VM of 12-07 every evaluation fitted around it predicted held-out models worse than
    around `THREAD_SHAPE`, README "2026-12-07, 18:47–", and it was taken out.)"""
    from narcli.bench.transfer import THREADS_WORK_SPLIT, WORK_SPLIT, fit_head, fit_over_one_thread, work_columns

    if one is None:
        return fit_head(work_columns(parts), y, prior_half=prior_half) | {"work_split": WORK_SPLIT}
    return fit_over_one_thread(parts, np.log([one[c.name] for c in found]), y, prior_half=prior_half) | {
        "one_thread_models": [{"name": c.name, "ms": one[c.name]} for c in found], "work_split": THREADS_WORK_SPLIT}


def _save_head(name: str, head: dict[str, Any]) -> Path:
    devices_dir().mkdir(parents=True, exist_ok=True)
    return write_text(devices_dir() / f"{name}.json", json.dumps(head, indent=2) + "\n")


def _reference_half() -> float | None:
    """The reference head's 90 % half-width (log) on families it never fitted: the prior of a
    calibration's interval (`transfer.pooled_half`)."""
    from narcli.predict.bundle import load_bundle

    head = load_bundle().latency
    return head.half if head is not None else None


def _reference_fingerprint() -> str:
    from narcli.predict.bundle import load_bundle

    head = load_bundle().latency
    return head.fingerprint if head is not None else ""


def refitted(name: str, head: dict[str, Any]) -> dict[str, Any]:
    """`head` as fitted against the installed reference head. A head fitted on the parts of another
    one (nar upgraded, or the head retrained) scales parts that have moved: it is fitted again on the
    measurements it stores (no new measurement) and saved; so is one fitted before `fitting_parts`
    (no `fitted_on`), one whose interval was set by another rule (`transfer.INTERVAL`), one fitted on
    another split of the prediction (`transfer.WORK_SPLIT`), and one over one thread fitted by
    another rule (`transfer.THREADS_FIT`). Unchanged
    when it is current, of the kind fitted before parts, or when fewer than 3 of its models are still
    in the zoo."""
    from narcli.bench.transfer import INTERVAL, THREADS_FIT, THREADS_WORK_SPLIT, WORK_SPLIT

    reference, split = _reference_fingerprint(), THREADS_WORK_SPLIT if "one_thread_models" in head else WORK_SPLIT
    if head.get("kind") != "parts" or not reference or \
            (head.get("reference") == reference and head.get("fitted_on") in (FITTED_ON, HEAD_PARTS)
             and head.get("interval") == INTERVAL and head.get("work_split") == split
             and ("one_thread_models" not in head or head.get("threads_fit") == THREADS_FIT)):
        return head

    measured = _stored_times(head.get("models"))
    # a head over one thread (`transfer.fit_over_one_thread`): the models timed at both
    one = _stored_times(head["one_thread_models"]) if "one_thread_models" in head else None
    if one is not None:
        measured = {model: ms for model, ms in measured.items() if model in one}
    found = with_parts([Candidate(model, 0, 0, {}, np.zeros(0)) for model in measured])
    if len(found) < 3:
        return head
    fitted, on = fit_on_times(found, measured, one)
    head = head | fitted | {"models": [{"name": c.name, "ms": measured[c.name]} for c in found],
                            "reference": reference, "fitted_on": on, "refitted": time.strftime("%Y-%m-%d %H:%M:%S")}
    try:
        _save_head(name, head)
    except OSError:  # a read-only home still answers, fitted again next time
        pass
    return head


def fit_on_times(found: list[Candidate], measured: dict[str, float], one: dict[str, float] | None
                 ) -> tuple[dict[str, Any], str]:
    """This machine's head fitted on timings already taken (`measured`: model name -> ms for each of
    `found`, which `with_parts` split; `one`: their one-thread times, for a head over one thread), and
    what its parts were scaled to (`fitted_on`): what `refitted` does, without saving."""
    times = measured_on_reference()
    fitted = fit_device(found, fitting_parts(found, times), np.log([measured[c.name] for c in found]), one,
                        _reference_half())
    return fitted, fitted_on(found, times)


def _stored_times(models: Any) -> dict[str, float]:
    """Model name -> ms from a saved head's list of measurements, skipping malformed entries."""
    return {m["name"]: m["ms"] for m in models or [] if isinstance(m, dict) and isinstance(m.get("name"), str)
            and isinstance(m.get("ms"), (int, float)) and m["ms"] > 0}


def _read_head(path: Path) -> dict[str, Any]:
    """A saved device head; ValueError (or OSError) when the file is not one `calibrate` wrote."""
    head = json.loads(path.read_text())
    if isinstance(head, dict) and head.get("kind") == "parts":
        from narcli.bench.transfer import FIT_COLUMNS, LEGACY_PARTS, LEGACY_THREAD_PARTS
        from narcli.predict.latency_parts import PARTS, THREAD_PARTS

        scales, half, threads = head.get("scales"), head.get("half"), head.get("thread_scales", [0.0] * len(THREAD_PARTS))
        # one-thread heads on FIT_COLUMNS, others on PARTS; LEGACY_PARTS before 2026-12-05 (then fitted again)
        if not isinstance(scales, list) or len(scales) not in (len(FIT_COLUMNS), len(PARTS), len(LEGACY_PARTS)) or \
                not isinstance(threads, list) or len(threads) not in (len(THREAD_PARTS), *LEGACY_THREAD_PARTS) or \
                not all(isinstance(v, (int, float)) and math.isfinite(v) for v in scales + threads + [half]):
            raise ValueError("its fitted scales do not fit together")
        return head
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
                out[path.stem] = refitted(path.stem, _read_head(path))
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
