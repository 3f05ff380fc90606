"""`nar zoo build`: trace every model of the chosen sources into a zoo database, resumably.

Three parts: `plan_source` decides what one source's build does (what the zoo holds already is not
traced again), `writing` (writer.py) holds the database for the build (one writer, a lock file keeps
a second build out), and `SourceRun` traces the plan in worker processes (`pool.py`, or on Ray with
`engine="ray"`: `ray_engine.py`) and stores each result as it arrives, so an interrupted build loses
only the models in flight and the next run picks up where it stopped.
"""

from __future__ import annotations

import fnmatch
import json
import signal
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from narcli.errors import UsageError, ZooError
from narcli.scan.scanner import check_timeout
from narcli.trace.engines import check_engine, engine_session, run_tasks
from narcli.trace.pool import TaskResult, run_pool
from narcli.zoo.labels import label
from narcli.zoo.signatures import signature_entry, store_signature
from narcli.zoo.sources import ZooEntry, ZooSource
from narcli.zoo.writer import ZooWriter, now, writing


TOP_OPS = 8
# torch.export rescues few zoo models and takes minutes on the largest; the zoo does without it
ZOO_TRACERS = ("runtime", "fx")


@dataclass
class BuildOptions:
    db: Path
    sources: list[str] | None = None
    patterns: list[str] | None = None  # globs on model names
    limit: int | None = None  # per source
    jobs: int | None = 1  # None: 1 locally, every CPU of the cluster on Ray
    timeout: float = 300.0
    retry_failed: bool = False
    refresh: bool = False  # trace the selected models again even when the zoo has them (after a tracer fix)
    log: Path | None = None
    engine: str = "local"  # or "ray"
    address: str | None = None  # a Ray cluster to join (default: start a local Ray)

    def check(self) -> None:
        """Usage errors before any work: the same lines as the command line's."""
        if self.limit is not None and self.limit < 0:
            raise UsageError("--limit must be at least 0")
        check_timeout(self.timeout)
        if self.jobs is not None and self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        check_engine(self.engine, self.address)


@dataclass
class SourceReport:
    source: str
    listed: int = 0
    already: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0  # listed, but not something the source can build (ZooEntry.unsupported)
    new_architectures: int = 0
    seconds: float = 0.0
    reasons: Counter = field(default_factory=Counter)


class Progress(Protocol):
    def start(self, source: str, total: int) -> None: ...
    def advance(self, source: str, result: TaskResult) -> None: ...


# -- work done in the worker processes ------------------------------------------------------------
def _staged(exc: BaseException, stage: str) -> BaseException:
    try:
        exc.stage = stage  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return exc


def list_entries(source: ZooSource) -> list[ZooEntry]:
    return list(source.list_models())


def trace_entry(source: ZooSource, entry: ZooEntry) -> dict[str, Any]:
    """Build one zoo model on meta and trace it (runs in a worker)."""
    from narcli.errors import TraceError
    from narcli.graph.canonical import build_graph
    from narcli.trace.torch_tracer import trace_module

    try:
        built = source.build(entry)
    except Exception as exc:
        raise _staged(exc, "build") from None
    try:
        raw, tracer = trace_module(built.module, list(built.inputs), ZOO_TRACERS)
    except TraceError as exc:
        raise _staged(exc.__cause__ or exc, "trace") from None
    inputs = [{"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")} for t in built.inputs]
    if built.input_names:
        for spec, name in zip(inputs, built.input_names):
            spec["name"] = name
    graph = build_graph(raw, {"source": f"{source.id_prefix}/{entry.name}", "tracer": tracer, "inputs": inputs})
    return {"graph": graph.to_dict(), "tracer": tracer, "inputs": inputs, "family": built.family,
            "signature": _signature(built)}


def _signature(built: Any) -> list | None:
    """The checkpoint signature of a built model; None if its state dict cannot be read (the
    trace is still worth keeping, and `nar zoo signatures` says why)."""
    from narcli.trace.checkpoint import module_signature

    try:
        return module_signature(built.weights if built.weights is not None else built.module)
    except Exception:  # noqa: BLE001 - a custom state_dict() that fails on meta tensors
        return None


# -- the build ------------------------------------------------------------------------------------
def _result_row(source: ZooSource, entry: ZooEntry, result: TaskResult) -> tuple[dict[str, Any], str | None]:
    from narcli.graph.arch_graph import ArchGraph

    row: dict[str, Any] = {"id": f"{source.id_prefix}/{entry.name}", "source": source.name, "name": entry.name,
                           "source_family": entry.family, "task": entry.task, "seconds": round(result.seconds, 3),
                           "built_at": now()}
    if not result.ok:
        family, coarse, reviewed = label(source.name, entry.family, {})
        row.update(family=family, coarse=coarse, labelled_by="table" if reviewed else "structure",
                   status="failed", reason=result.reason, message=result.message)
        return row, None
    payload = result.value
    graph = ArchGraph.from_dict(payload["graph"])
    key = payload.get("family") or entry.family
    row["source_family"] = key
    counts = graph.op_histogram()
    family, coarse, reviewed = label(source.name, key, counts, graph)
    summary = graph.summary()
    row.update(family=family, coarse=coarse, labelled_by="table" if reviewed else "structure", status="ok",
               reason=None, message=None, graph_hash=summary["hash"], params=summary["params"],
               macs=summary["macs"], nodes=summary["nodes"], edges=summary["edges"], depth=summary["depth"],
               tracer=payload["tracer"], inputs=json.dumps(payload["inputs"]),
               top_ops=json.dumps([[op, n] for op, n in graph.top_ops(TOP_OPS)]))
    return row, graph.to_json()


def _selected(entries: list[ZooEntry], patterns: list[str] | None) -> list[ZooEntry]:
    if not patterns:
        return entries
    return [e for e in entries if any(fnmatch.fnmatchcase(e.name.lower(), p.lower()) for p in patterns)]


@dataclass
class SourcePlan:
    """What one build does for one source: the listed models it selected, those the zoo holds
    already, those it cannot build (stored as skipped), and those to trace."""

    listed: int
    already: int
    unsupported: list[ZooEntry]
    todo: list[ZooEntry]


def plan_source(source: ZooSource, options: BuildOptions, statuses: dict[str, str]) -> SourcePlan:
    """Plan `source`'s part of a build from its model list and the zoo's `statuses` (id -> status):
    resumable, since a model stored ok, skipped (or failed, unless retrying) is not traced again."""
    from narcli.trace.isolation import run_isolated

    entries = _selected(run_isolated(list_entries, (source,), 900, f"listing the {source.name} models"),
                        options.patterns)
    finished = ("ok", "skipped") if options.retry_failed else ("ok", "skipped", "failed")
    todo = [e for e in entries if options.refresh or statuses.get(f"{source.id_prefix}/{e.name}") not in finished]
    already = len(entries) - len(todo)
    if options.limit is not None:
        todo = todo[:options.limit]
    return SourcePlan(len(entries), already, [e for e in todo if e.unsupported], [e for e in todo if not e.unsupported])


class SourceRun:
    """One source's part of a build: each result stored as it arrives, counted in `report`."""

    def __init__(self, source: ZooSource, writer: ZooWriter, progress: Progress | None):
        self.source, self.writer, self.progress = source, writer, progress
        self.report = SourceReport(source.name)
        self.by_key: dict[str, ZooEntry] = {}

    def execute(self, options: BuildOptions, log: str) -> None:
        clock = time.perf_counter()
        plan = plan_source(self.source, options, self.writer.statuses(self.source.name))
        self.writer.add_source(self.source)
        self.report.listed, self.report.already = plan.listed, plan.already
        for entry in plan.unsupported:
            self._skip(entry)
        self.by_key = {e.name: e for e in plan.todo}
        if self.progress:
            self.progress.start(self.source.name, len(plan.todo))
        run_tasks(trace_entry, [(e.name, (self.source, e)) for e in plan.todo], self.on_result,
                  engine=options.engine, address=options.address, jobs=options.jobs, timeout=options.timeout,
                  log_path=log)
        self.report.seconds = time.perf_counter() - clock

    def _skip(self, entry: ZooEntry) -> None:
        family, coarse, reviewed = label(self.source.name, entry.family, {})
        self.writer.store({"id": f"{self.source.id_prefix}/{entry.name}", "source": self.source.name,
                           "name": entry.name, "family": family, "source_family": entry.family, "coarse": coarse,
                           "task": entry.task, "labelled_by": "table" if reviewed else "structure",
                           "status": "skipped", "reason": entry.unsupported, "built_at": now()})
        self.report.skipped += 1

    def on_result(self, result: TaskResult) -> None:
        row, graph_json = _result_row(self.source, self.by_key[result.key], result)
        self.report.new_architectures += self.writer.store(row, graph_json)
        if result.ok and result.value.get("signature") is not None:
            with self.writer.conn:
                store_signature(self.writer.conn, row["id"], result.value["signature"])
        if result.ok:
            self.report.ok += 1
        else:
            self.report.failed += 1
            self.report.reasons[result.reason] += 1
        if self.progress:
            self.progress.advance(self.source.name, result)


def runnable_sources(names: list[str] | None) -> list[ZooSource]:
    """The bundled sources `names` picks, each able to build here (else a usage error naming why)."""
    from narcli.zoo.plugins import get_sources

    sources = get_sources(names, bundled_only=True)
    for source in sources:
        reason = source.missing()
        if reason:
            raise UsageError(f"zoo source {source.name!r} cannot run here: {reason}")
    return sources


def build_zoo(options: BuildOptions, progress: Progress | None = None) -> list[SourceReport]:
    """Trace the models of `options.sources` that the database at `options.db` lacks."""
    options.check()
    sources = runnable_sources(options.sources)
    started, reports = now(), []
    log = str(options.log or f"{options.db}.log")
    with writing(options.db) as writer, _sigterm_stops(), engine_session(options.engine, options.address, options.jobs):
        for source in sources:
            run = SourceRun(source, writer, progress)
            reports.append(run.report)
            run.execute(options, log)
        if options.refresh:
            writer.drop_unused_graphs()
        writer.record_build(started, options, reports)
    return reports


# -- signatures of models already traced ------------------------------------------------------
@dataclass
class SignatureReport:
    source: str
    missing: int = 0
    ok: int = 0
    failed: int = 0
    seconds: float = 0.0


def compute_signatures(db: Path, sources: list[str] | None = None, jobs: int = 1, timeout: float = 300.0,
                       limit: int | None = None, progress: Any = None) -> list[SignatureReport]:
    """Store the signature of every traced model of the zoo at `db` that lacks one, resumably."""
    from narcli.trace.isolation import run_isolated
    from narcli.zoo.plugins import get_sources

    check_timeout(timeout)
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if limit is not None and limit < 0:
        raise UsageError("--limit must be at least 0")
    if not Path(db).exists():
        raise ZooError(f"zoo database {db} is missing; build it with `nar zoo build --db {db}`")
    reports = []
    with writing(Path(db)) as writer:
        for source in get_sources(sources, bundled_only=False):
            done = {i for (i,) in writer.conn.execute("select id from signatures")}
            wanted = {name for (name,) in writer.conn.execute(
                "select name from models where source = ? and status = 'ok'", (source.name,))}
            wanted = {n for n in wanted if f"{source.id_prefix}/{n}" not in done}
            if not wanted:
                continue
            reason = source.missing()
            if reason:
                raise UsageError(f"zoo source {source.name!r} cannot run here: {reason}")
            report = SignatureReport(source.name)
            reports.append(report)
            clock = time.perf_counter()
            entries = [e for e in run_isolated(list_entries, (source,), 900, f"listing the {source.name} models")
                       if e.name in wanted]
            entries = entries[:limit] if limit is not None else entries
            report.missing = len(entries)
            if progress:
                progress.start(source.name, len(entries))

            def stored(result: Any, source: ZooSource = source, report: SignatureReport = report) -> None:
                if result.ok:
                    with writer.conn:
                        store_signature(writer.conn, f"{source.id_prefix}/{result.key}", result.value)
                    report.ok += 1
                else:
                    report.failed += 1
                if progress:
                    progress.advance(source.name, result)

            run_pool(signature_entry, [(e.name, (source, e)) for e in entries], stored, jobs=jobs, timeout=timeout,
                     log_path=f"{db}.log")
            report.seconds = time.perf_counter() - clock
    return reports


@contextmanager
def _sigterm_stops() -> Iterator[None]:
    """While a build runs, `kill` stops it as Ctrl-C does (workers stopped, finished results kept)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
