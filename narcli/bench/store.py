"""Measurements under $NAR_HOME/bench.db, keyed by graph, batch and device fingerprint, so that
`nar calibrate` resumes and `nar bench` can say what it measured before."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

SCHEMA = """create table if not exists measurements (
    graph_hash text not null, batch integer not null, device text not null, name text not null,
    median_ms real not null, iqr_ms real not null, runs integer not null, info text not null,
    measured_at real not null, primary key (graph_hash, batch, device))"""


def store_path() -> Path:
    from narcli.scan.cache import nar_home

    return nar_home() / "bench.db"


def _connect(path: Path | None = None) -> sqlite3.Connection:
    path = path or store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=30)
    connection.execute(SCHEMA)
    return connection


def save(graph_hash: str, batch: int, device: str, name: str, result: dict[str, Any]) -> None:
    connection = _connect()
    try:
        with connection:
            connection.execute("insert or replace into measurements values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (graph_hash, batch, device, name, result["median_ms"], result["iqr_ms"],
                                result["runs"], json.dumps(result, separators=(",", ":")), time.time()))
    finally:
        connection.close()


def load(graph_hash: str, batch: int, device: str) -> dict[str, Any] | None:
    if not store_path().exists():
        return None
    connection = _connect()
    try:
        row = connection.execute("select info from measurements where graph_hash = ? and batch = ? and device = ?",
                                 (graph_hash, batch, device)).fetchone()
    finally:
        connection.close()
    return json.loads(row[0]) if row else None


FAILURES = """create table if not exists unmeasured (
    graph_hash text not null, batch integer not null, device text not null, name text not null,
    reason text not null, message text not null, at real not null, primary key (graph_hash, batch, device))"""


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
    return {h: json.loads(info) for h, info in rows}


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


def for_graph(graph_hash: str) -> list[dict[str, Any]]:
    """Every stored measurement of this graph (any batch, any device), newest first."""
    if not graph_hash or not store_path().exists():
        return []
    connection = _connect()
    try:
        rows = connection.execute("select info, measured_at from measurements where graph_hash = ? "
                                  "order by measured_at desc", (graph_hash,)).fetchall()
    except sqlite3.DatabaseError:
        return []
    finally:
        connection.close()
    return [json.loads(info) | {"measured_at": at} for info, at in rows]
