"""`nar zoo build`: trace every model of the chosen sources into a zoo database, resumably.

One process owns the database (a lock file keeps a second build out); models are built and traced
in worker processes (`pool.py`, or on Ray with `engine="ray"`: `ray_engine.py`), and each result
is committed as it arrives, so an interrupted build loses only the models in flight and the next
run picks up where it stopped.
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import signal
import sqlite3
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from narcli import IR_VERSION
from narcli.errors import NarError, UsageError, ZooError
from narcli.fsutil import connect_sqlite, open_lock_file
from narcli.trace.engines import check_engine, engine_session, run_tasks
from narcli.trace.pool import TaskResult, run_pool
from narcli.zoo.labels import label
from narcli.zoo.signatures import add_name_sketches, signature_entry, store_signature
from narcli.zoo.sources import ZooEntry, ZooSource
from narcli.zoo.store import SCHEMA, SCHEMA_VERSION, pack_vector, rebuild_hint

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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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


# -- the database ---------------------------------------------------------------------------------
class ZooWriter:
    """The zoo database opened for writing by one build."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open_lock_file(f"{path}.lock")  # never through a symlink planted at its name
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise ZooError(f"another `nar zoo build` is writing {path}; wait for it to finish") from None
        try:
            self.conn = connect_sqlite(path, timeout=30, isolation_level=None)
            self.conn.execute("pragma journal_mode = wal")
            self.conn.executescript(SCHEMA)
            add_name_sketches(self.conn)  # a zoo from before name sketches: one column more
            found = self.conn.execute("select value from meta where key = 'schema_version'").fetchone()
            if found is not None and int(found[0]) != SCHEMA_VERSION:
                raise ZooError(f"zoo database {path} has schema {found[0]}, this nar writes {SCHEMA_VERSION}; "
                               "remove it and build again")
            self.set_meta(schema_version=SCHEMA_VERSION, ir_version=IR_VERSION)
        except sqlite3.DatabaseError as exc:
            self.close()
            raise ZooError(f"zoo database {path} is unreadable ({exc}); {rebuild_hint(path)}") from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if hasattr(self, "conn"):
            self.conn.close()
        if self._lock >= 0:  # closing twice could close a descriptor opened since
            os.close(self._lock)
            self._lock = -1

    def set_meta(self, **values: Any) -> None:
        with self.conn:
            for key, value in values.items():
                self.conn.execute("insert or replace into meta values (?, ?)", (key, str(value)))

    def add_source(self, source: ZooSource) -> None:
        with self.conn:
            self.conn.execute("insert or replace into sources values (?, ?, ?, ?, ?, ?)",
                              (source.name, source.id_prefix, source.rank, source.description,
                               source.version(), int(source.bundled)))

    def statuses(self, source: str) -> dict[str, str]:
        return dict(self.conn.execute("select id, status from models where source = ?", (source,)))

    def store(self, row: dict[str, Any], graph_json: str | None = None) -> bool:
        """Store a model's row and its trace; True when the architecture is new to the zoo. One graph
        serves each architecture; a model traced at another input than that graph keeps its own trace
        (`model_graphs`), so its shapes and predictions are its own. A row stored again drops the
        predictions made from the old one."""
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        new = False
        with self.conn:
            self.conn.execute("delete from model_graphs where id = ?", (row["id"],))
            if self.conn.execute("select 1 from sqlite_master where name = 'predictions'").fetchone():
                self.conn.execute("delete from predictions where id = ?", (row["id"],))
            if graph_json is not None:
                found = self.conn.execute("select data from graphs where hash = ?", (row["graph_hash"],)).fetchone()
                if found is None:
                    self.conn.execute("insert into graphs values (?, ?)",
                                      (row["graph_hash"], zlib.compress(graph_json.encode(), 9)))
                    new = True
                elif json.loads(zlib.decompress(found[0]))["nodes"] != json.loads(graph_json)["nodes"]:
                    self.conn.execute("insert into model_graphs values (?, ?)",
                                      (row["id"], zlib.compress(graph_json.encode(), 9)))
            self.conn.execute(f"insert or replace into models ({columns}) values ({marks})", tuple(row.values()))
        return new

    def drop_unused_graphs(self) -> None:
        """Graphs, embeddings and annotations no model points at any more (after models were traced again)."""
        with self.conn:
            for table in ("graphs", "embeddings", "annotations"):
                self.conn.execute(f"delete from {table} where hash not in "
                                  "(select graph_hash from models where graph_hash is not null)")

    def store_embeddings(self, encoder: str, rows: list[tuple[str, bytes, Any, Any]]) -> None:
        """Store `rows` (graph hash, float32 vector, family prediction, motif summary) from
        `encoder`; drop those of other encoders."""
        with self.conn:
            self.conn.execute("delete from embeddings where encoder != ?", (encoder,))
            self.conn.execute("delete from annotations where encoder != ?", (encoder,))
            self.conn.executemany("insert or replace into embeddings values (?, ?, ?)",
                                  [(h, encoder, pack_vector(vector)) for h, vector, _, _ in rows])
            self.conn.executemany("insert or replace into annotations values (?, ?, ?, ?)",
                                  [(h, encoder, json.dumps(prediction), json.dumps(motifs))
                                   for h, _, prediction, motifs in rows])

    def embedded(self, encoder: str) -> set[str]:
        """Hashes with an embedding and annotations from `encoder`."""
        return {h for (h,) in self.conn.execute("select e.hash from embeddings e join annotations a on a.hash = e.hash "
                                                "where e.encoder = ? and a.encoder = ?", (encoder, encoder))}

    def record_build(self, started: str, options: BuildOptions, reports: list[SourceReport]) -> None:
        summary = [{**{k: v for k, v in r.__dict__.items() if k != "reasons"}, "reasons": dict(r.reasons)}
                   for r in reports]
        opts = {"limit": options.limit, "jobs": options.jobs, "timeout": options.timeout,
                "patterns": options.patterns, "retry_failed": options.retry_failed, "refresh": options.refresh, "engine": options.engine}
        with self.conn:
            self.conn.execute("insert into builds (started, finished, sources, options, summary) values (?, ?, ?, ?, ?)",
                              (started, _now(), json.dumps([r.source for r in reports]), json.dumps(opts),
                               json.dumps(summary)))

    def compact(self) -> None:
        """Fold the WAL in, shrink the file (it ships read-only); skipped while another process reads it."""
        try:  # leaving WAL mode needs the only connection
            self.conn.execute("pragma wal_checkpoint(truncate)")
            self.conn.execute("pragma journal_mode = delete")
            # 16 KB pages hold a ~6 KB compressed graph in the leaf (bundled zoo: 65 MB -> 56 MB)
            self.conn.execute(f"pragma page_size = {COMPACT_PAGE_SIZE}")
            self.conn.execute("vacuum")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise


COMPACT_PAGE_SIZE = 16384


# -- the build ------------------------------------------------------------------------------------
def _result_row(source: ZooSource, entry: ZooEntry, result: TaskResult) -> tuple[dict[str, Any], str | None]:
    from narcli.graph.arch_graph import ArchGraph

    row: dict[str, Any] = {"id": f"{source.id_prefix}/{entry.name}", "source": source.name, "name": entry.name,
                           "source_family": entry.family, "task": entry.task, "seconds": round(result.seconds, 3),
                           "built_at": _now()}
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
    family, coarse, reviewed = label(source.name, key, counts)
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


def build_zoo(options: BuildOptions, progress: Progress | None = None) -> list[SourceReport]:
    """Trace the models of `options.sources` that the database at `options.db` lacks."""
    from narcli.trace.isolation import run_isolated
    from narcli.zoo.plugins import get_sources

    if options.limit is not None and options.limit < 0:
        raise UsageError("--limit must be at least 0")
    if options.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if options.jobs is not None and options.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    check_engine(options.engine, options.address)
    sources = get_sources(options.sources, bundled_only=True)
    for source in sources:
        reason = source.missing()
        if reason:
            raise UsageError(f"zoo source {source.name!r} cannot run here: {reason}")
    writer = ZooWriter(options.db)
    started = _now()
    previous = _stop_on_sigterm()
    reports: list[SourceReport] = []
    log = str(options.log or f"{options.db}.log")
    try:
        with engine_session(options.engine, options.address, options.jobs):
            for source in sources:
                report = SourceReport(source.name)
                reports.append(report)
                clock = time.perf_counter()
                entries = _selected(run_isolated(list_entries, (source,), 900, f"listing the {source.name} models"),
                                    options.patterns)
                writer.add_source(source)
                report.listed = len(entries)
                done = writer.statuses(source.name)
                finished = ("ok", "skipped") if options.retry_failed else ("ok", "skipped", "failed")
                todo = [e for e in entries if options.refresh or done.get(f"{source.id_prefix}/{e.name}") not in finished]
                report.already = len(entries) - len(todo)
                if options.limit is not None:
                    todo = todo[:options.limit]
                for entry in [e for e in todo if e.unsupported]:
                    family, coarse, reviewed = label(source.name, entry.family, {})
                    writer.store({"id": f"{source.id_prefix}/{entry.name}", "source": source.name, "name": entry.name,
                                  "family": family, "source_family": entry.family, "coarse": coarse,
                                  "task": entry.task, "labelled_by": "table" if reviewed else "structure",
                                  "status": "skipped", "reason": entry.unsupported, "built_at": _now()})
                    report.skipped += 1
                todo = [e for e in todo if not e.unsupported]
                by_key = {e.name: e for e in todo}
                if progress:
                    progress.start(source.name, len(todo))

                def on_result(result: TaskResult, source: ZooSource = source, report: SourceReport = report,
                              by_key: dict[str, ZooEntry] = by_key) -> None:
                    row, graph_json = _result_row(source, by_key[result.key], result)
                    report.new_architectures += writer.store(row, graph_json)
                    if result.ok and result.value.get("signature") is not None:
                        with writer.conn:
                            store_signature(writer.conn, row["id"], result.value["signature"])
                    if result.ok:
                        report.ok += 1
                    else:
                        report.failed += 1
                        report.reasons[result.reason] += 1
                    if progress:
                        progress.advance(source.name, result)

                run_tasks(trace_entry, [(e.name, (source, e)) for e in todo], on_result, engine=options.engine,
                          address=options.address, jobs=options.jobs, timeout=options.timeout, log_path=log)
                report.seconds = time.perf_counter() - clock
        if options.refresh:
            writer.drop_unused_graphs()
        writer.record_build(started, options, reports)
        writer.compact()
    except sqlite3.DatabaseError as exc:
        raise NarError(f"writing the zoo {options.db} failed: {exc}") from None
    finally:
        writer.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
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

    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if limit is not None and limit < 0:
        raise UsageError("--limit must be at least 0")
    if not Path(db).exists():
        raise ZooError(f"zoo database {db} is missing; build it with `nar zoo build --db {db}`")
    writer = ZooWriter(Path(db))
    reports = []
    try:
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
        writer.compact()
    except sqlite3.DatabaseError as exc:
        raise NarError(f"writing the zoo {db} failed: {exc}") from None
    finally:
        writer.close()
    return reports


def _stop_on_sigterm() -> Any:
    """Let `kill` stop a build as Ctrl-C does (workers stopped, finished results kept)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, stop)
