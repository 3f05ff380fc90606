"""Measurements under $NAR_HOME/bench.db, keyed by graph, batch and device fingerprint, so that
`nar calibrate` resumes and `nar bench` can say what it measured before.

A graph's hash does not change with its input size (`ArchGraph.content_hash`), but its latency
does: a model file timed at 224x224 and scanned again at 128x128 is one hash. So a file's timing is
stored under `sized_key` (the hash and the MACs of the inputs it was timed at), and every lookup of a
graph's timings takes only those at the MACs asked for. Zoo models (the reference set, calibration)
are timed at the zoo's inputs and stored under the plain hash, as before; a row stored before
2026-12-04 under the plain hash by a file's timing is told apart by the MACs its row carries."""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.bench.allocator import same_regime
from narcli.errors import StoreError, damaged_store, storage_trouble
from narcli.scan import sqlite_files

SCHEMA = """create table if not exists measurements (
    graph_hash text not null, batch integer not null, device text not null, name text not null,
    median_ms real not null, iqr_ms real not null, runs integer not null, info text not null,
    measured_at real not null, primary key (graph_hash, batch, device))"""


def store_path() -> Path:
    from narcli.scan.cache import nar_home

    return nar_home() / "bench.db"


TABLES = ("measurements", "unmeasured", "core_speed", "core_speed_seen")
WHAT = "measurement store"


def _connect(path: Path | None = None) -> sqlite3.Connection:
    path = path or store_path()
    sqlite_files.refuse_symlink(path, WHAT, StoreError)
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=30)
    try:
        sqlite_files.refuse_foreign(connection, path, TABLES, WHAT, StoreError)
        connection.execute(SCHEMA)
    except BaseException:
        connection.close()
        raise
    return connection


def _guarded(function: Callable[..., Any]) -> Callable[..., Any]:
    """A damaged bench.db (not SQLite, a bad page, a stored row that does not decode) as one line
    naming the file and the fix, never a traceback; a full or read-only disk as what it is."""
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(f"{WHAT} {store_path()} is busy ({exc}); try again") from None
            trouble = storage_trouble(exc, store_path().parent)
            if trouble:
                raise StoreError(f"{WHAT} {store_path()} cannot be written: {trouble}") from None
            raise StoreError(damaged_store(store_path(), exc, WHAT)) from None
        except sqlite_files.BadBlob as exc:
            raise StoreError(damaged_store(store_path(), f"a stored row cannot be decoded: {exc}", WHAT)) from None

    return wrapper


def _json(text: str) -> dict[str, Any]:
    """A stored measurement, decoded; BadBlob when it is not what nar wrote."""
    value = sqlite_files.decoded(json.loads, text)
    if not isinstance(value, dict):
        raise sqlite_files.BadBlob(f"{type(value).__name__}, not an object")
    return value


CHECKS: tuple[sqlite_files.RowCheck, ...] = (("measurement row", "measurements", "rowid", "info", _json),)


def health() -> dict[str, Any]:
    """bench.db as `nar cache info` shows it: path, size, and "ok" or what is wrong."""
    path = store_path()
    return {"name": "bench.db", "what": "latency measurements (nar bench, nar calibrate)", "path": str(path),
            "exists": path.exists(), "bytes": path.stat().st_size if path.exists() else 0,
            "health": sqlite_files.health(path, TABLES, sqlite_files.first_undecodable(CHECKS))}


def repair() -> str | None:
    """Repair a damaged bench.db: undecodable measurements removed (they are measured again), an
    unreadable file set aside as bench.db.damaged; what was done, or None."""
    return sqlite_files.repair(store_path(), TABLES, CHECKS)


SIZE_MARK = "@"


def sized_key(graph_hash: str, macs: int) -> str:
    """Where a model file's timing is kept: its graph at the inputs it was timed at (see above)."""
    return f"{graph_hash}{SIZE_MARK}{int(macs)}"


def same_size(info: dict[str, Any], macs: int | None) -> bool:
    """Whether a stored timing was taken at `macs` (None, 0 or a row without MACs: not known, kept)."""
    stored = info.get("macs")
    if not macs or not stored:
        return True
    return isinstance(stored, int) and not isinstance(stored, bool) and stored == int(macs)  # not nar's: no size


@_guarded
def save(graph_hash: str, batch: int, device: str, name: str, result: dict[str, Any]) -> None:
    connection = _connect()
    try:
        with connection:
            connection.execute("insert or replace into measurements values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (graph_hash, batch, device, name, result["median_ms"], result["iqr_ms"],
                                result["runs"], json.dumps(result, separators=(",", ":")), time.time()))
    finally:
        connection.close()


@_guarded
def load(graph_hash: str, batch: int, device: str, macs: int | None = None) -> dict[str, Any] | None:
    """The timing stored under this key (a plain hash or a `sized_key`), if it was taken at `macs` and
    in the malloc regime this version measures in (`allocator.same_regime`: an older one is timed
    again, not reused), with when it was stored (`measured_at`, seconds since the epoch)."""
    if not store_path().exists():
        return None
    connection = _connect()
    try:
        row = connection.execute("select info, measured_at from measurements where graph_hash = ? and batch = ? "
                                 "and device = ?", (graph_hash, batch, device)).fetchone()
    finally:
        connection.close()
    info = _json(row[0]) if row else None
    reusable = info is not None and same_size(info, macs) and same_regime(info)
    return info | {"measured_at": row[1]} if reusable else None


FAILURES = """create table if not exists unmeasured (
    graph_hash text not null, batch integer not null, device text not null, name text not null,
    reason text not null, message text not null, at real not null, primary key (graph_hash, batch, device))"""


@_guarded
def save_failure(graph_hash: str, batch: int, device: str, name: str, reason: str, message: str) -> None:
    """A model `nar bench --zoo` could not measure (build error, timeout, too big for memory): kept,
    so a resumed run does not try it again and the dataset's card can count it."""
    connection = _connect()
    try:
        with connection:
            connection.execute(FAILURES)
            connection.execute("insert or replace into unmeasured values (?, ?, ?, ?, ?, ?, ?)",
                               (graph_hash, batch, device, name, reason, message[:300], time.time()))
    finally:
        connection.close()


@_guarded
def measurements(device: str, batch: int) -> dict[str, dict[str, Any]]:
    """Every stored measurement of `device` at `batch`, by graph hash."""
    if not store_path().exists():
        return {}
    connection = _connect()
    try:
        rows = connection.execute("select graph_hash, info from measurements where device = ? and batch = ?",
                                  (device, batch)).fetchall()
    finally:
        connection.close()
    return {h: _json(info) for h, info in rows}


@_guarded
def failures(device: str, batch: int) -> dict[str, str]:
    """Graph hash -> reason, for what could not be measured on `device`."""
    if not store_path().exists():
        return {}
    connection = _connect()
    try:
        connection.execute(FAILURES)
        rows = connection.execute("select graph_hash, reason from unmeasured where device = ? and batch = ?",
                                  (device, batch)).fetchall()
    finally:
        connection.close()
    return dict(rows)


def known(device: str, batch: int, include_failed: bool = True) -> set[str]:
    """Graph hashes measured on `device` (and, with `include_failed`, those that could not be)."""
    found = set(measurements(device, batch))
    if include_failed:
        found |= set(failures(device, batch))
    return found


@_guarded
def for_graph(graph_hash: str, macs: int | None = None) -> list[dict[str, Any]]:
    """Every stored measurement of this graph (any batch, any device), newest first; with `macs`,
    only those taken at inputs of that size (without: every size, each row saying its MACs)."""
    if not graph_hash or not store_path().exists():
        return []
    connection = _connect()
    try:
        sized = graph_hash + SIZE_MARK  # the prefix of its `sized_key`s
        rows = connection.execute("select info, measured_at from measurements where graph_hash = ? "
                                  "or substr(graph_hash, 1, ?) = ? order by measured_at desc",
                                  (graph_hash, len(sized), sized)).fetchall()
    finally:
        connection.close()
    found = [_json(info) | {"measured_at": at} for info, at in rows]
    return [info for info in found if same_size(info, macs)]


@_guarded
def devices(kind: str, batch: int) -> list[dict[str, Any]]:
    """Each device of `kind` ("cpu", "cuda") with measurements at `batch`: its DeviceInfo dict and
    how many rows it has."""
    if not store_path().exists():
        return []
    connection = _connect()
    try:
        rows = connection.execute("select device, count(*), min(info) from measurements where batch = ? "
                                  "group by device", (batch,)).fetchall()
    finally:
        connection.close()
    out = []
    for key, count, info in rows:
        device = _json(info).get("device") or {}
        if isinstance(device, dict) and device.get("kind") == kind:
            out.append(device | {"key": key, "rows": count})
    return out


CORE_SPEED = """create table if not exists core_speed (
    machine text primary key, best_ms real not null, at real not null)"""


@_guarded
def best_probe(machine: str, fastest_ms: float) -> float | None:
    """The fastest speed probe (`quiet.probe`, ms) `machine` showed before this one; `fastest_ms`
    becomes the new best when it is faster (or the first)."""
    connection = _connect()
    try:
        with connection:
            connection.execute(CORE_SPEED)
            row = connection.execute("select best_ms from core_speed where machine = ?", (machine,)).fetchone()
            if row is None or fastest_ms < row[0]:
                connection.execute("insert or replace into core_speed values (?, ?, ?)", (machine, fastest_ms, time.time()))
    finally:
        connection.close()
    return float(row[0]) if row else None


# The matrix product's median over each measurement, busy or not, per machine, thread count and torch
# build: its fastest tenth is the speed this machine reaches, held against each new measurement
# (`runner.core_speed_checked`). The lowest median ever shown only falls as measurements pile up, so a
# check against it grew stricter with use: on this project's VM the best one-thread product was
# 1.188 ms, and the 62 one-thread timings stored as quiet before 2026-12-07 read 1.188-1.282 ms
# (median 1.241), so a timing like the median one stood at the 5 % limit.
CORE_SPEED_SEEN = """create table if not exists core_speed_seen (
    machine text not null, ms real not null, at real not null)"""
SPEED_HISTORY = 2000  # measurements kept per key, at most
SPEED_HISTORY_DAYS = 14  # and none older: the speed of recent weeks, not of a machine's first day
SPEED_HISTORY_NEEDED = 10  # fewer seen before: held against the lowest (`best_probe`), as before
FAST_SHARE = 0.10  # the share of measurements at least as fast as "the speed this machine reaches"


@_guarded
def usual_fast_probe(machine: str, ms: float) -> tuple[float, int] | None:
    """The speed `machine` (a `best_probe` key) reaches: the FAST_SHARE quantile of the probes its
    measurements of the last SPEED_HISTORY_DAYS (at most SPEED_HISTORY) showed before this one, and how
    many that was; None when fewer than SPEED_HISTORY_NEEDED. `ms` is added to them. A window of days,
    not of measurements: one calibration on a noisy morning is a hundred of them."""
    now = time.time()
    since = now - SPEED_HISTORY_DAYS * 86_400
    connection = _connect()
    try:
        with connection:
            connection.execute(CORE_SPEED_SEEN)
            seen = [row[0] for row in connection.execute(
                "select ms from core_speed_seen where machine = ? and at >= ? order by at desc, rowid desc limit ?",
                (machine, since, SPEED_HISTORY))]
            connection.execute("insert into core_speed_seen values (?, ?, ?)", (machine, ms, now))
            connection.execute("delete from core_speed_seen where machine = ? and (at < ? or rowid not in (select rowid "
                               "from core_speed_seen where machine = ? order by at desc, rowid desc limit ?))",
                               (machine, since, machine, SPEED_HISTORY))
    finally:
        connection.close()
    if len(seen) < SPEED_HISTORY_NEEDED:
        return None
    import numpy as np  # only here: the store is read where numpy is not otherwise needed

    return float(np.quantile(seen, FAST_SHARE)), len(seen)
