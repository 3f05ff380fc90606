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
