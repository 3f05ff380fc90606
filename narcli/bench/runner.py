"""`nar bench TARGET`: build the model with random weights (a zoo name through its source plugin, a
`.py` file through the loader, an `.onnx` file through onnxruntime when it is installed), check that
it fits in memory, measure it in a child process with the protocol in `measure`, and store the
result keyed by graph, batch and device fingerprint."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from narcli.bench import store
from narcli.bench.child import measure_in_child
from narcli.bench.device import DeviceInfo, available_bytes, check_device, device_info
from narcli.bench.lock import measuring
from narcli.bench.measure import check_fits, check_repeat
from narcli.bench.quiet import ATTEMPTS
from narcli.errors import NarError, UsageError


@dataclass
class BenchResult:
    name: str
    graph_hash: str
    batch: int
    device: dict[str, Any]
    median_ms: float
    iqr_ms: float
    runs: int
    warmup: int
    params: int
    macs: int
    reused: bool = False
    times_ms: list[float] = field(default_factory=list)
    warmup_ms: float = 0.0
    quiet: dict[str, Any] | None = None  # `quiet.Quietness`: was the machine quiet while timing
    pinned: list[int] = field(default_factory=list)  # the CPUs the measuring process was held to
    stored: bool = False  # kept in bench.db (a busy machine's timing is not, unless allowed)
    left_out: list[int] = field(default_factory=list)  # runs beside a slowed core, not in the median
    attempts: int = 1  # measurements taken: a disturbed one is taken again (`bench_target`)
    disturbed: list[dict[str, Any]] = field(default_factory=list)  # the earlier, busy ones: median_ms, reasons
    inputs: list[dict[str, Any]] = field(default_factory=list)  # the example inputs at batch 1 (`InputSpec` JSON)
    assumed: str | None = None  # why those inputs were guessed, when no --input-shape named them
    allocator: str = ""  # the measuring process's malloc regime (`allocator`); "" before it was fixed

    @property
    def busy(self) -> bool:
        return bool(self.quiet and self.quiet.get("busy"))

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()} | {"busy": self.busy}


@dataclass
class _Request:
    kind: str  # zoo | py | onnx
    name: str
    source: str = ""
    path: str = ""
    spec: str | None = None
    inputs: list[dict] = field(default_factory=list)
    assumed: str | None = None  # the scan guessed `inputs` (only said in the result; the child ignores it)
    batch: int = 1
    device: str = "cpu"
    threads: int = 1
    repeat: int = 20


def activations_per_sample(graph: Any) -> int:
    total = 0
    for node in graph.nodes:
        dims = [d for d in (node.shape or []) if isinstance(d, int) and d > 0]
        if dims:
            total += math.prod(dims[1:]) if len(dims) > 1 else dims[0]
    return total


def _resolve(text: str, options: Any) -> tuple[_Request, Any, int, int]:
    """(request without batch/device, graph, params, macs) of the single model `text` names."""
    from narcli.scan.targets import CachedName, Checkpoint, Directory, ModelFile, ModelFolder, ZooName, cannot, resolve_target

    target = resolve_target(text, options)
    match target:
        case ZooName(text=name):
            from narcli.zoo.store import Zoo

            with Zoo() as zoo:
                return _zoo_request(zoo.resolve(name), zoo)
        case CachedName(name=name):  # measured from the file it was scanned from, at the inputs it was scanned with
            from narcli.scan.cache import Cache
            from narcli.scan.targets import find_cached_record

            from narcli.scan.scanner import scan_is_current

            cache = Cache()
            record = find_cached_record(name, cache)
            graph = cache.graph(record.graph_key)
            if record.kind not in ("py", "onnx") or not Path(record.source).is_file() or graph is None:
                raise cannot("bench", target, f"it was scanned from {record.source}, which nar bench cannot run "
                                              "(gone, or not a .py or .onnx file); name a file to measure")
            if not scan_is_current(record):  # its timing would be stored under a graph the file no longer has
                raise cannot("bench", target, f"{record.source} is not as it was scanned (changed since, or scanned "
                                              "with a --model call); name the file to measure it as it is now")
            _check_runnable(Path(record.source))
            return _Request(record.kind, f"{Path(record.source).name}:{record.name}", path=record.source,
                            spec=record.name, inputs=list(record.inputs), assumed=record.assumed), \
                graph, record.params, record.macs
        case ModelFile(path=path, options=file_options):
            return _file_request(path, file_options)
        case Checkpoint():
            raise cannot("bench", target, "weights carry no code to run: `nar scan` on it names the zoo model "
                                          "they belong to, and `nar bench` takes that name")
        case ModelFolder() | Directory():
            raise cannot("bench", target, "it measures one model from code: name a .py or .onnx file, a zoo name "
                                          "or cache:NAME")
    raise AssertionError(target)


def _zoo_request(model: Any, zoo: Any) -> tuple[_Request, Any, int, int]:
    # the zoo's own example inputs are built by its source (the child ignores `inputs` here): only said
    return _Request("zoo", model.id, source=model.source, inputs=list(model.inputs or [])), zoo.graph(model), \
        model.params or 0, model.macs or 0


def _check_runnable(path: Path) -> None:
    if path.suffix.lower() == ".onnx" and importlib.util.find_spec("onnxruntime") is None:
        raise NarError(f"{path.name}: benchmarking an ONNX file needs onnxruntime; pip install onnxruntime")
    if path.suffix.lower() not in (".py", ".onnx"):
        raise UsageError(f"{path}: nar bench takes a zoo name, cache:NAME, a .py or an .onnx file")


def _file_request(path: Path, options: Any) -> tuple[_Request, Any, int, int]:
    _check_runnable(path)
    from narcli.scan.scanner import scan_file

    records, graphs = scan_file(path, options, want_graphs=True)
    if len(records) != 1:
        names = ", ".join(r.name for r in records)
        raise UsageError(f"{path.name} defines {len(records)} models ({names}); pick one with --model")
    record, graph = records[0], graphs[0]
    kind = "onnx" if path.suffix.lower() == ".onnx" else "py"
    spec = (options.model if options else None) or record.name
    return _Request(kind, f"{path.name}:{record.name}", path=str(path.resolve()), spec=spec,
                    inputs=list(record.inputs), assumed=record.assumed), graph, record.params, record.macs


QUIET_WAIT = 10.0  # seconds it waits for other processes to go quiet before measuring again


def bench_target(text: str, batch: int = 1, device: str = "cpu", threads: int | None = None, repeat: int = 20,
                 options: Any = None, timeout: float = 600.0, reuse: bool = False,
                 allow_busy: bool = False, attempts: int = ATTEMPTS,
                 report: Callable[[str], None] = lambda line: None) -> BenchResult:
    """Measure the model `text` names; with `reuse`, a stored measurement of the same graph, batch
    and device is returned instead of measuring again. The machine is watched while timing
    (`quiet`). A disturbed timing is taken again, up to `attempts` in all, once other processes
    are quiet (a neighbour's burst on a shared core passes in seconds; a compiler beside us does
    not, and then it is not waited for); a timing still taken on a busy machine is returned,
    flagged, and not stored unless `allow_busy`."""
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 10:
        raise UsageError(f"--attempts must be a whole number from 1 to 10, not {attempts!r}")
    if not 1 <= batch <= 65_536:
        raise UsageError(f"--batch must be between 1 and 65,536, not {batch}")
    check_repeat(repeat)
    check_device(device)
    request, graph, params, macs = _resolve(text, options)
    info = device_info(device, threads)
    graph_hash = graph.content_hash()
    # a zoo model is timed at the zoo's inputs, a file at whatever inputs it was given: kept apart (`store`)
    key = graph_hash if request.kind == "zoo" else store.sized_key(graph_hash, macs)
    if reuse:
        stored = store.load(key, batch, info.key, macs)
        if stored:
            known = {f.name for f in fields(BenchResult)}  # a row stored by another version may carry more
            return BenchResult(**{k: v for k, v in stored.items() if k in known} | {"reused": True, "stored": True})
    check_fits(params, activations_per_sample(graph), batch, available_bytes(device))
    request.batch, request.device, request.threads, request.repeat = batch, device, info.threads, repeat
    from narcli.trace.isolation import run_isolated

    from narcli.bench.quiet import wait_for_quiet

    disturbed: list[dict[str, Any]] = []

    def measure(attempt: int) -> tuple[BenchResult, dict[str, Any] | None]:
        with measuring(device):
            measured = run_isolated(measure_in_child, (request,), timeout, f"benchmarking {request.name}")
        raw = measured.get("quiet")
        return BenchResult(request.name, graph_hash, batch, info.to_dict(), measured["median_ms"], measured["iqr_ms"],
                           measured["runs"], measured["warmup"], params, macs, times_ms=measured["times_ms"],
                           warmup_ms=measured.get("warmup_ms", 0.0), quiet=core_speed_checked(raw),
                           pinned=measured.get("pinned", []), left_out=measured.get("left_out", []),
                           attempts=attempt, disturbed=list(disturbed), inputs=request.inputs,
                           assumed=request.assumed, allocator=measured.get("allocator", "")), raw

    result, raw = measure(1)
    busy_ones: list[BenchResult] = []  # every disturbed measurement of the loop below, in turn
    while True:
        if not allow_busy and unchecked_first(result.quiet) and result.attempts < attempts:
            result = _check_first(result, raw, measure, disturbed, report)
        if allow_busy or not result.busy or result.attempts >= attempts:
            break
        busy_ones.append(result)
        disturbed.append(_disturbed_entry(result))
        report(f"the machine was disturbed while timing {request.name}; measuring again once other processes "
               f"are quiet (attempt {result.attempts + 1} of {attempts})")
        # a core slowed from outside (another VM) shows nothing here to wait for: measured again at once
        if not wait_for_quiet(QUIET_WAIT, report):
            report(f"other processes stayed busy for {QUIET_WAIT:g} s; not measured again")
            break  # the same processes would disturb the next timing too
        result, raw = measure(result.attempts + 1)
    if result.busy and busy_ones:  # every measurement disturbed: the least disturbed one is returned
        ours = {id(d) for d in disturbed[-len(busy_ones):]}  # the loop's; any before came from `_check_first`
        candidates = busy_ones + ([] if result is busy_ones[-1] else [result])
        result = least_disturbed(candidates, [d for d in disturbed if id(d) not in ours])
    if allow_busy or not result.busy:
        result.stored = True
        store.save(key, batch, info.key, request.name, result.to_dict())
    return result


def least_disturbed(measured: list[BenchResult], earlier: list[dict[str, Any]]) -> BenchResult:
    """Of measurements all taken on a busy machine, the one with the lowest median, the others named as
    disturbed after `earlier` (disturbed ones that were not candidates). Contention only adds time, so
    the fastest is the nearest the quiet figure: on 2026-12-06 here the three of a `nar bench resnet18`
    at two threads, all beside a slowed core, read 34.6, 32.0 and 36.1 ms (the last was returned), and
    the two quiet runs after them 32.9 and 31.9 ms."""
    best = min(measured, key=lambda r: r.median_ms)
    best.attempts = max(r.attempts for r in measured)
    best.disturbed = earlier + [_disturbed_entry(r) for r in measured if r is not best]
    return best


def _disturbed_entry(result: BenchResult) -> dict[str, Any]:
    """How a disturbed measurement is named in the one returned (`BenchResult.disturbed`)."""
    return {"median_ms": result.median_ms, "reasons": (result.quiet or {}).get("reasons", [])}


# the speed a machine reaches (the fastest tenth of its recent matrix products) is taken as at most
# this much slower than the fastest it ever showed: a history made on a noisy morning would otherwise
# make the check lenient (2026-12-07 here, two threads: after an hour of neighbours' traffic the
# fastest tenth of 166 products was 0.708 ms, the fastest ever 0.615 ms)
USUAL_ABOVE_BEST = 0.05


def core_speed_checked(verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """A measurement's verdict checked against the fastest core speed this machine has shown
    (`quiet.against_best`) and the speed its matrix product reaches at that thread count
    (`quiet.compute_against_best`): the fastest tenth of its recent measurements
    (`store.usual_fast_probe`), but no more than USUAL_ABOVE_BEST above the lowest median it ever showed,
    or that lowest until ten were seen; kept in bench.db, per machine digest."""
    from narcli.bench.device import machine_digest
    from narcli.bench.quiet import against_best, clock_can_change, compute_against_best, note_slow_core

    probes, digest = (verdict or {}).get("probe_ms"), machine_digest()
    loop_best = store.best_probe(digest, probes[0]) if probes else None
    verdict = against_best(verdict, loop_best)
    typical = (verdict or {}).get("compute_probe_median")
    if typical:
        clock = probes[0] / loop_best if probes and loop_best and clock_can_change() else 1.0
        key = _product_key(digest, verdict.get("threads") or 0)
        best = store.best_probe(key, typical)
        usual = store.usual_fast_probe(key, typical)  # None until enough were seen: the lowest, as before
        against, seen, capped_over = best, 0, None
        if usual:
            against, seen = usual
            if best and against > best * (1 + USUAL_ABOVE_BEST):
                against, capped_over = best * (1 + USUAL_ABOVE_BEST), best
        verdict = compute_against_best(verdict, against, clock, seen=seen, capped_over=capped_over)
        if best is None:  # nothing to hold a slowed stretch against: "quiet" says less than usual
            verdict = verdict | {"first_on_machine": True}
    return note_slow_core(verdict, loop_best)


def unchecked_first(verdict: dict[str, Any] | None) -> bool:
    """A quiet verdict with nothing yet to hold its core speed against: the first measurement at its
    thread count on this machine (`core_speed_checked`). On 2026-12-04 the first of three `nar bench
    resnet18` here ran 46.7 ms, its matrix product 1.13 ms, and was called quiet; the next two ran
    33.0 and 32.0 ms, their products 0.73 and 0.68 ms."""
    return bool(verdict and not verdict.get("busy") and verdict.get("first_on_machine"))


def _check_first(first: BenchResult, raw: dict[str, Any] | None,
                 measure: Callable[[int], tuple[BenchResult, dict[str, Any] | None]],
                 disturbed: list[dict[str, Any]], report: Callable[[str], None]) -> BenchResult:
    """The first measurement at a thread count on this machine, measured once more and each held
    against the other's core speed (the machine's best is then the faster of the two). The second
    is kept when both are quiet; the first when only it is; a first one slower than the second's
    speed is disturbed, like any timing taken again."""
    threads = first.quiet.get("threads") or 0
    report(f"the first timing at {threads} thread{'s' * (threads != 1)} on this machine: measuring once more, "
           "to check the core's speed against it")
    second, _ = measure(first.attempts + 1)
    again = core_speed_checked(raw) or {}  # the first, against the best of both
    if second.busy and not again.get("busy"):  # disturbed from outside while the first was not
        first.quiet, first.attempts = again | {"checked_against_ms": second.median_ms}, second.attempts
        return first
    if again.get("busy"):
        disturbed.append({"median_ms": first.median_ms, "reasons": again.get("reasons", [])})
        second.disturbed = list(disturbed)
    if not second.busy:
        second.quiet = (second.quiet or {}) | {"checked_against_ms": first.median_ms}
    return second


def _product_key(digest: str, threads: int) -> str:
    """Where the matrix product's best is kept: per machine, thread count and torch build (its BLAS)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "?"
    return f"{digest}:product:{threads}t:{torch_version}"


def describe_device(result: BenchResult) -> str:
    return DeviceInfo(**{k: v for k, v in result.device.items() if k != "key"}).describe()
