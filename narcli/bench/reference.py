"""The reference latency dataset: `nar bench --zoo` measures the bundled zoo's architectures on this
machine's CPU (batch 1, fp32, one thread, denormals flushed), one distinct graph at a time, so that
a latency head can learn every kind of model, not only the ones public benchmarks list.

Which models: one per distinct graph, at most `max_gmacs` GMACs and `max_params` parameters (what one
CPU thread runs in well under a second or two), in round-robin order over (source, coarse class)
groups, each group shuffled with a fixed seed — so a run stopped by its `--budget` has covered every
kind before it goes deep into any. Resumable: what is stored (measured, failed, or refused for
memory) is not measured again. Models run in one long-lived worker process (imports and library
registries paid once, not per model), with a timeout per model.

`export_reference` writes what was measured as `reference-latency.csv` + `reference-latency.json`
(the machine fingerprint, the protocol, the counts), the form `nar train predictor --reference`
reads and that ships in `narcli/data/`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from narcli.errors import NarError, UsageError
from narcli.fsutil import atomic_writer, write_text
from narcli.predict.latency import CARD_NAME, COLUMNS, CSV_NAME

THREADS = 1
MAX_GMACS = 30.0
MAX_PARAMS = 1.5e9
# warm up >= 1 run and 0.25 s; then 10 timed runs, or fewer (never under 3) once 1 s is timed
PROTOCOL = {"batch": 1, "dtype": "float32", "threads": THREADS, "warmup_runs": 1, "warmup_seconds": 0.25,
            "repeat": 10, "min_repeat": 3, "max_seconds": 1.0, "flush_denormal": True}


@dataclass
class Pick:
    id: str
    source: str
    graph_hash: str
    family: str
    coarse: str
    macs: int
    params: int


def candidates(max_gmacs: float = MAX_GMACS, max_params: float = MAX_PARAMS,
               sources: list[str] | None = None, seed: int = 0) -> list[Pick]:
    """One zoo model per distinct graph within the size limits, in round-robin (source, coarse) order."""
    from narcli.zoo.store import Zoo, bundled_zoo_path

    groups: dict[tuple[str, str], list[Pick]] = defaultdict(list)
    seen: set[str] = set()
    with Zoo([bundled_zoo_path()]) as zoo:
        for model in zoo.models():
            if model.status != "ok" or not model.graph_hash or model.graph_hash in seen or not model.macs:
                continue
            if sources and model.source not in sources:
                continue
            if model.macs > max_gmacs * 1e9 or (model.params or 0) > max_params:
                continue
            seen.add(model.graph_hash)
            groups[(model.source, model.coarse or "")].append(
                Pick(model.id, model.source, model.graph_hash, model.family or "", model.coarse or "",
                     model.macs, model.params or 0))
    rng = random.Random(seed)
    queues = []
    for key in sorted(groups):
        rng.shuffle(groups[key])
        queues.append(groups[key])
    order: list[Pick] = []
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop())
    return order


def measure_zoo_model(source: str, model_id: str, threads: int, protocol: dict[str, Any] | None = None,
                      device: str = "cpu") -> dict[str, Any]:
    """In a long-lived worker: build `model_id` on meta, give it weights, time it by `protocol`
    (default: the reference PROTOCOL) on `device`, watching the machine while it runs (`quiet`).
    On the CPU the worker is pinned to `threads` CPUs; on CUDA every run is synchronised."""
    import gc

    import torch

    from narcli.bench.allocator import hold_allocator_steady
    from narcli.bench.child import _listed, example_inputs, fill_weights, matmul_probe
    from narcli.bench.measure import time_runs
    from narcli.bench.quiet import pin
    from narcli.trace.compat import ensure_torchvision_importable
    from narcli.zoo.plugins import zoo_sources

    ensure_torchvision_importable()
    cpu = device == "cpu"
    regime = hold_allocator_steady()  # the same regime as `nar bench FILE`'s fresh child (`allocator`)
    pinned = pin(threads) if cpu else []
    torch.set_num_threads(threads if cpu else max(threads, 1))
    torch.set_flush_denormal(True)  # random weights must not time denormal arithmetic
    name = model_id.split("/", 1)[1]
    built = zoo_sources()[source].build(_listed(source, zoo_sources()[source])[name])
    module = fill_weights(built.module).eval().to(device)
    inputs = [x.to(device) for x in example_inputs(built.inputs, 1)]
    sync = (lambda: None) if cpu else torch.cuda.synchronize

    def run() -> None:
        with torch.inference_mode():
            module(*inputs)

    chosen = PROTOCOL | (protocol or {})
    try:
        measured = time_runs(run, chosen["repeat"], sync=sync, warmup_runs=chosen["warmup_runs"],
                             warmup_seconds=chosen["warmup_seconds"], max_seconds=chosen["max_seconds"],
                             min_repeat=chosen["min_repeat"], watch_threads=threads if cpu else 0,
                             compute_probe=matmul_probe(torch) if cpu else None)
    finally:
        del module, inputs, built
        gc.collect()
        if not cpu:
            torch.cuda.empty_cache()
    return measured.to_dict() | {"pinned": pinned, "allocator": regime}


def reference_value(measured: dict[str, Any], name: str, graph_hash: str, params: int, macs: int, info: Any,
                    fingerprint: dict[str, Any]) -> dict[str, Any]:
    """A reference measurement as bench.db stores it."""
    return measured | {"name": name, "graph_hash": graph_hash, "batch": 1, "device": info.to_dict(), "params": params,
                       "macs": macs, "protocol": "reference", "fingerprint": fingerprint}


def collect(budget: float | None = None, max_gmacs: float = MAX_GMACS, max_params: float = MAX_PARAMS,
            sources: list[str] | None = None, limit: int | None = None, timeout: float = 300.0,
            retry_failed: bool = False, report: Callable[[str], None] = lambda line: None,
            device: str = "cpu", allow_busy: bool = False, quiet_wait: float = 300.0) -> dict[str, Any]:
    """Measure the reference set on this CPU (or GPU) until done, `limit` new models, or `budget`
    seconds. A model timed while other processes used the CPU is not stored: the run waits (at most
    `quiet_wait` s) for the machine to be quiet and tries it once more; still busy, it is left for
    a later run (`allow_busy` stores such timings, flagged)."""
    from narcli.bench import store
    from narcli.bench.device import available_bytes, device_info
    from narcli.bench.lock import measuring
    from narcli.bench.measure import required_bytes
    from narcli.bench.quiet import wait_for_quiet
    from narcli.bench.runner import activations_per_sample, core_speed_checked, unchecked_first
    from narcli.trace.pool import TaskResult, run_pool
    from narcli.zoo.store import Zoo, bundled_zoo_path

    if budget is not None and not 0 < budget <= 7 * 86_400:
        raise UsageError(f"--budget must be between 0 and 604,800 seconds, not {budget}")
    if not 0 < max_gmacs <= 1e6:
        raise UsageError(f"--max-gmacs must be positive, not {max_gmacs}")
    from narcli.zoo.plugins import zoo_sources

    from narcli.bench.device import machine_fingerprint

    info = device_info(device, THREADS if device == "cpu" else None)
    fingerprint = machine_fingerprint()
    picks = candidates(max_gmacs, max_params, sources)
    installed = set(zoo_sources())  # a model is built through its source's plugin
    missing = sorted({p.source for p in picks if p.source not in installed})
    if missing:
        report(f"not measured: {sum(p.source in missing for p in picks):,} models of {', '.join(missing)} "
               "(their zoo source plugins are not installed; see plugins/README.md)")
        picks = [p for p in picks if p.source in installed]
    done = store.known(info.key, 1, include_failed=not retry_failed)
    todo = [p for p in picks if p.graph_hash not in done]
    report(f"{len(picks):,} distinct architectures within {max_gmacs:g} GMACs; {len(picks) - len(todo):,} already "
           f"stored, {len(todo):,} to measure on {info.describe()}")
    counts = {"measured": 0, "failed": 0, "skipped": 0, "busy": 0}
    began = time.perf_counter()
    by_id = {p.id: p for p in todo}
    again: list[Pick] = []  # timed on a busy machine: measured once more, after it is quiet
    later: list[Pick] = []  # the first timing on this machine: measured once more after the next model
    tries: dict[str, int] = defaultdict(int)  # read with .get before a model begins: its keys are the models begun

    def retries() -> Iterator[Pick]:
        while again:
            yield again.pop()
        again.extend(later)  # due after the next model
        later.clear()

    def queue() -> Iterator[Pick]:
        for pick in todo:
            yield pick
            yield from retries()
        while again or later:
            yield from retries()

    def tasks() -> Iterator[tuple[str, tuple]]:
        with Zoo([bundled_zoo_path()]) as zoo:
            for pick in queue():
                if budget is not None and time.perf_counter() - began > budget:
                    return
                if limit and pick.id not in tries and len(tries) >= limit:
                    continue  # `limit` new models begun: only those measured again are left
                if tries.get(pick.id) and not wait_for_quiet(quiet_wait, report):
                    report(f"the machine stayed busy for {quiet_wait:g} s; stopping (a later run resumes)")
                    return
                try:
                    graph = zoo.graph(zoo.resolve(pick.id))
                except NarError as exc:  # gone from the zoo since the list was made
                    store.save_failure(pick.graph_hash, 1, info.key, pick.id, "zoo", str(exc))
                    counts["failed"] += 1
                    continue
                needed = required_bytes(pick.params, activations_per_sample(graph), 1)
                if needed > 0.8 * available_bytes(device):
                    store.save_failure(pick.graph_hash, 1, info.key, pick.id, "memory",
                                       f"needs about {needed / 2**30:.1f} GiB")
                    counts["skipped"] += 1
                    continue
                tries[pick.id] += 1
                yield pick.id, (pick.source, pick.id, THREADS, None, device)

    def on_result(result: TaskResult) -> None:
        pick = by_id[result.key]
        if result.ok:
            result.value["quiet"] = core_speed_checked(result.value.get("quiet"))
            if not allow_busy and unchecked_first(result.value["quiet"]) and tries[pick.id] < 2:
                later.append(pick)
                report(f"{pick.id}: the first timing at {THREADS} thread on this machine, not stored; measured "
                       "again after the next model, against the core speed it shows")
                return
        if result.ok and (result.value.get("quiet") or {}).get("busy") and not allow_busy:
            counts["busy"] += 1
            reasons = "; ".join(result.value["quiet"]["reasons"])
            if tries[pick.id] < 2:
                again.append(pick)
            report(f"busy: {pick.id} not stored ({reasons})" + ("; measured again once quiet" if tries[pick.id] < 2 else ""))
            return
        if result.ok:
            value = reference_value(result.value, pick.id, pick.graph_hash, pick.params, pick.macs, info, fingerprint)
            store.save(pick.graph_hash, 1, info.key, pick.id, value)
            counts["measured"] += 1
            report(f"{counts['measured']:,} {pick.id}: {value['median_ms']:.3g} ms ({result.seconds:.1f} s)")
        else:
            store.save_failure(pick.graph_hash, 1, info.key, pick.id, result.reason, result.message)
            counts["failed"] += 1
            report(f"failed {pick.id}: {result.reason} {result.message[:100]}")

    with measuring(device):
        run_pool(measure_zoo_model, tasks(), on_result, jobs=1, timeout=timeout, tasks_per_worker=400,
                 max_rss=6 << 30)
    stored = store.known(info.key, 1, include_failed=False)
    return counts | {"candidates": len(picks), "stored": len(stored & {p.graph_hash for p in picks}),
                     "seconds": round(time.perf_counter() - began, 1), "device": info.to_dict()}


def _device_of(device: str) -> dict[str, Any]:
    """The fingerprint (a DeviceInfo dict) whose reference measurements to export: this CPU at one
    thread; for cuda, the GPU with the most reference rows in the store (exported where it was
    measured or anywhere the store was copied to)."""
    from narcli.bench import store
    from narcli.bench.device import check_device, device_info

    if device == "cpu":
        return device_info("cpu", THREADS).to_dict()
    if device != "cuda":
        check_device(device)
    found = store.devices("cuda", 1)
    if not found:
        raise NarError("no CUDA reference measurements in the store; run `nar bench --zoo --device cuda` on a GPU first")
    return max(found, key=lambda d: d["rows"])


def export(folder: Path, min_rows: int = 1, device: str = "cpu") -> dict[str, Any]:
    """Write this machine's reference measurements on `device` as CSV + card into `folder`. A set of
    the same device key already there is kept and added to: a GPU lent for a few minutes at a time
    grows its set lease by lease, each lease's bench.db exported in turn. Each store is one session
    in the card (exporting the same store again replaces its session, never counts it twice); a
    graph in the store and in the set takes the store's timing. Another device's set is refused."""
    from narcli.bench import store
    from narcli.zoo.store import Zoo, bundled_zoo_path

    info = _device_of(device)
    measured = store.measurements(info["key"], 1)
    failures = store.failures(info["key"], 1)
    rows, others, fingerprint = [], [], {}
    with Zoo([bundled_zoo_path()]) as zoo:
        for graph_hash, result in measured.items():
            if result.get("protocol") != "reference":
                continue
            fingerprint = result.get("fingerprint") or fingerprint
            if (result.get("quiet") or {}).get("other_cpu") is not None:
                others.append(result["quiet"]["other_cpu"])
            model = zoo.resolve(result["name"])
            rows.append({"graph_hash": graph_hash, "model": model.id, "source": model.source,
                         "family": model.family or "", "coarse": model.coarse or "", "params": model.params or 0,
                         "macs": model.macs or 0, "median_ms": round(result["median_ms"], 5),
                         "iqr_ms": round(result["iqr_ms"], 5), "runs": result["runs"]})
    if len(rows) < min_rows:
        raise NarError(f"only {len(rows)} reference measurements on this machine; run `nar bench --zoo` first")
    # a session is named by its store (a digest of bench.db's path: the card travels, the path need not)
    store_id = hashlib.sha256(str(store.store_path().resolve()).encode()).hexdigest()[:12]
    session = {"store": store_id, "created": time.strftime("%Y-%m-%d"), "rows": len(rows),
               "quietness": {"watched": len(others),
                             "other_cpu_median": round(float(sorted(others)[len(others) // 2]), 3) if others else None,
                             "other_cpu_max": round(max(others), 3) if others else None},
               "unmeasured_graphs": dict(sorted((h, r) for h, r in failures.items() if h not in measured))}
    sessions = [session]
    earlier = _earlier_export(folder, info["key"])
    if earlier:  # this set's other sessions, and their rows the store does not have
        old_rows, old_card = earlier
        fresh = {r["graph_hash"] for r in rows}
        rows = [r for r in old_rows if r["graph_hash"] not in fresh] + rows
        sessions = [s for s in _sessions(old_card) if s.get("store") != session["store"]] + sessions
    rows.sort(key=lambda r: (r["source"], r["model"]))
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_writer(folder / CSV_NAME, "w", newline="") as handle:
        writer = csv.DictWriter(handle, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    device_card = {k: v for k, v in info.items() if k not in ("rows",)}
    card = {"device": device_card, "fingerprint": fingerprint, "quietness": _quietness(sessions),
            "protocol": PROTOCOL | ({"threads": 0} if device != "cpu" else {}), "rows": len(rows),
            "unmeasured": _unmeasured(sessions, {r["graph_hash"] for r in rows}), "created": session["created"],
            "by_source": _count(rows, "source"), "by_coarse": _count(rows, "coarse"), "sessions": sessions}
    write_text(folder / CARD_NAME, json.dumps(card, indent=2) + "\n")
    return card | {"csv": str(folder / CSV_NAME)}


def _earlier_export(folder: Path, key: str) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """The set already in `folder` when it is this device's (same key); another device's set is
    refused rather than overwritten."""
    from narcli.predict.latency import read_reference

    if not (folder / CSV_NAME).exists() and not (folder / CARD_NAME).exists():
        return None
    rows, card = read_reference(folder)
    device = card.get("device") if isinstance(card, dict) else None
    if not isinstance(device, dict) or not isinstance(card.get("sessions", []), list):
        raise NarError(f"{folder / CARD_NAME} is not a reference set's card; export into an empty folder")
    if device.get("key") != key:
        raise NarError(f"{folder} holds the reference set of another device key ({device.get('key')}; this one is "
                       f"{key}: another machine, torch build or thread count); export into an empty folder")
    return rows, card


def _sessions(card: dict[str, Any]) -> list[dict[str, Any]]:
    """A card's sessions; a card written before sessions were kept is one session without a store."""
    if card.get("sessions"):
        return [s for s in card["sessions"] if isinstance(s, dict)]
    return [{"store": None, "created": card.get("created"), "rows": card.get("rows"),
             "quietness": card.get("quietness") or {}, "unmeasured": card.get("unmeasured") or {}}]


def _quietness(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """Over every session: the timings watched, and the worst session's figures (the raw readings
    are not kept)."""
    figures = [s.get("quietness") or {} for s in sessions]

    def worst(key: str) -> float | None:
        values = [f[key] for f in figures if isinstance(f.get(key), (int, float))]
        return max(values) if values else None

    return {"watched": sum(int(f.get("watched") or 0) for f in figures),
            "other_cpu_median": worst("other_cpu_median"), "other_cpu_max": worst("other_cpu_max")}


def _unmeasured(sessions: list[dict[str, Any]], kept: set[str]) -> dict[str, int]:
    """Reasons, counted once per graph that some session could not measure and none measured. A
    session from before graphs were kept has counts only: a reason counts at least as many as it
    gave (later sessions retry what it could not measure, so adding them would count twice)."""
    graphs: dict[str, str] = {}
    for session in sessions:
        graphs.update(session.get("unmeasured_graphs") or {})
    counts: dict[str, int] = defaultdict(int)
    for graph_hash, reason in graphs.items():
        if graph_hash not in kept:
            counts[reason] += 1
    for session in sessions:
        if "unmeasured_graphs" not in session:
            for reason, count in (session.get("unmeasured") or {}).items():
                counts[reason] = max(counts[reason], int(count))
    return dict(sorted(counts.items()))


def _count(rows: list[dict[str, Any]], key: str) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for row in rows:
        out[row[key]] += 1
    return dict(sorted(out.items()))
