"""The user's zoo ($NAR_HOME/zoo.db) as `nar cache info` checks it and `nar cache clear` repairs it:
SQLite's quick check, then every stored graph, vector and JSON column decoded. A repair deletes
the rows that do not decode, with the models of a lost graph (the next `nar zoo build` traces them
again, `nar zoo embed` embeds them again); a file SQLite itself faults is set aside."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from narcli.scan import sqlite_files
from narcli.zoo.store import checked_vector, user_zoo_path

TABLES = ("models", "graphs")


def _json_or_empty(text: str | None) -> Any:
    return json.loads(text or "null")


def _checks(conn: sqlite3.Connection) -> tuple[sqlite_files.RowCheck, ...]:
    present = set(sqlite_files.table_names(conn))
    checks: list[sqlite_files.RowCheck] = [
        ("graph", "graphs", "hash", "data", sqlite_files.graph_blob_check),
        ("the inputs of model", "models", "id", "inputs", _json_or_empty),
        ("the top operations of model", "models", "id", "top_ops", _json_or_empty)]
    optional = [("the embedding of graph", "embeddings", "hash", "vector", checked_vector),
                ("the annotation of graph", "annotations", "hash", "prediction", _json_or_empty),
                ("the motifs of graph", "annotations", "hash", "motifs", _json_or_empty),
                ("the predictions of model", "predictions", "id", "data", _json_or_empty)]
    checks += [check for check in optional if check[1] in present]  # older zoos lack some tables
    return tuple(checks)


def _decode(conn: sqlite3.Connection) -> str | None:
    return sqlite_files.first_undecodable(_checks(conn))(conn)


def _cascade(conn: sqlite3.Connection, bad: list[tuple[sqlite_files.RowCheck, Any, str]]) -> None:
    """A graph that is lost takes its models (rebuilt by the next build) and its vectors with it."""
    lost = [key for (_, table, *_), key, _why in bad if table == "graphs"]
    present = set(sqlite_files.table_names(conn))
    for graph_hash in lost:
        conn.execute("delete from models where graph_hash = ?", (graph_hash,))
        for table in ("embeddings", "annotations"):
            if table in present:
                conn.execute(f"delete from {table} where hash = ?", (graph_hash,))


def zoo_health(path: Path | None = None) -> dict[str, Any]:
    """The user's zoo as `nar cache info` shows it: path, size, and "ok" or what is wrong."""
    path = Path(path or user_zoo_path())
    return {"name": "zoo.db", "what": "your zoo (nar zoo build)", "path": str(path), "exists": path.exists(),
            "bytes": path.stat().st_size if path.exists() else 0,
            "health": sqlite_files.health(path, TABLES, _decode)}


def repair_zoo(path: Path | None = None) -> str | None:
    """Repair the user's zoo when it is damaged; what was done, or None."""
    path = Path(path or user_zoo_path())
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            checks = _checks(conn)
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        checks = ()  # not readable at all: the repair sets it aside
    return sqlite_files.repair(path, TABLES, checks, _cascade)
