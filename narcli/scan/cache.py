"""The scan cache: a SQLite database of scans, model records and compressed graphs.

The schema is created through sqlite-utils; lookups and the transactional writes use the standard
library's sqlite3 (a cache hit must start fast, and one scan is stored in one explicit
transaction). WAL mode and a busy timeout let several `nar` processes share one database.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from narcli.errors import CacheError, NarError, storage_trouble
from narcli.fsutil import database_files
from narcli.scan import sqlite_files
from narcli.scan.cache_errors import guarded

BUSY_TIMEOUT_MS = 30_000
TABLES = ("scans", "models", "graphs")


def nar_home() -> Path:
    """`$NAR_HOME`, else the platform's user cache directory for nar; an error when it names
    something that is not a directory."""
    if os.environ.get("NAR_HOME"):
        home = Path(os.environ["NAR_HOME"]).expanduser()
    else:
        from platformdirs import user_cache_dir

        home = Path(user_cache_dir("nar"))
    if home.exists() and not home.is_dir():
        raise CacheError(f"NAR_HOME {home} is a file, not a directory; point NAR_HOME at a directory")
    return home


def default_db_path() -> Path:
    return nar_home() / "nar.db"


@dataclass
class ModelRecord:
    """What a scan found for one model: headline figures and how the graph was obtained."""

    name: str
    source: str
    kind: str  # py, onnx, pt2
    tracer: str
    inputs: list[dict[str, Any]]
    assumed: str | None
    params: int
    macs: int
    depth: int
    nodes: int
    edges: int
    graph_hash: str  # the architecture's content hash
    top_ops: list[tuple[str, int]]
    seconds: float = 0.0
    cached: bool = False
    id: str = ""
    graph_key: str = ""  # the stored graph (with this scan's shapes and metadata)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["top_ops"] = [list(p) for p in self.top_ops]
        return data


def short_id(model_id: str) -> str:
    """A cached model's unique short name (`cache:3fa2c1d04e:0`): its scan key's first 10 characters
    and its position in the file. Two scans of one file (other input shapes, another torch) differ
    here when their names do not; `nar cache list` shows it."""
    key, _, position = model_id.rpartition(":")
    return f"{key[:10]}:{position}" if key else model_id[:10]


def _int64(count: int) -> int:
    """A count as SQLite can keep it (a forged file's MACs can pass 2^63)."""
    return max(-(2**63), min(int(count), 2**63 - 1))


def _record(text: str) -> ModelRecord:
    return sqlite_files.decoded(lambda t: ModelRecord(**json.loads(t)), text)


def _cached_record(conn: sqlite3.Connection, model_id: str) -> ModelRecord | None:
    """The model record stored under `model_id`, marked as read from the cache, or None."""
    row = conn.execute("select record from models where id = ?", (model_id,)).fetchone()
    if row is None:
        return None
    record = _record(row[0])
    record.cached = True
    return record


def _check_blobs(conn: sqlite3.Connection) -> str | None:
    """What `cache info` finds undecodable among the stored graphs, records and scans, or None."""
    return sqlite_files.first_undecodable((
        ("graph", "graphs", "key", "data", sqlite_files.graph_blob_check),
        ("model record", "models", "id", "record", _record),
        ("scan", "scans", "key", "model_ids", json.loads)))(conn)


class Cache:
    """The cache database at `path` (created on first write). Every public method raises NarError,
    with the fix, when the database is damaged."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_db_path()

    # -- reading (stdlib only) -------------------------------------------------------------------
    def _read(self) -> sqlite3.Connection | None:
        """A read-only connection, or None while there is no cache (or its schema is being made)."""
        sqlite_files.refuse_symlink(self.path, "cache", CacheError)
        if not self.path.exists():
            return None
        conn = None
        try:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute("select 1 from scans limit 1")
            return conn
        except sqlite3.DatabaseError as exc:
            if "no such table" in str(exc):  # another process has just created the file, or it is not ours
                try:
                    sqlite_files.refuse_foreign(conn, self.path, TABLES, "cache", CacheError)
                finally:
                    conn.close()
                return None
            if conn is not None:
                conn.close()
            if "unable to open" in str(exc) and storage_trouble(exc, self.path.parent):
                # a WAL database on a read-only mount, without its -shm file: SQLite cannot set up
                # shared memory, but the file itself reads fine as immutable (as of its last checkpoint)
                conn = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True)
                conn.execute("select 1 from scans limit 1")
                return conn
            raise  # the public methods (`guarded`) say what is wrong and how to fix it

    @guarded
    def lookup(self, key: str) -> list[ModelRecord] | None:
        """The records of the scan stored under `key`, or None."""
        conn = self._read()
        if conn is None:
            return None
        try:
            row = conn.execute("select model_ids from scans where key = ?", (key,)).fetchone()
            if row is None:
                return None
            records = [_cached_record(conn, model_id) for model_id in json.loads(row[0])]
            return None if any(r is None for r in records) else records  # a record gone: no scan
        finally:
            conn.close()

    @guarded
    def scans_at(self, path: str) -> list[list[ModelRecord]]:
        """The records of every scan of the file at `path` (absolute), newest first."""
        conn = self._read()
        if conn is None:
            return []
        try:
            rows = conn.execute("select model_ids from scans where path = ? order by created desc", (path,)).fetchall()
            scans = []
            for (ids,) in rows:
                found = [conn.execute("select record from models where id = ?", (i,)).fetchone() for i in json.loads(ids)]
                if all(found):
                    scans.append([_record(row[0]) for row in found])
            return scans
        finally:
            conn.close()

    @guarded
    def records(self) -> list[ModelRecord]:
        """Every cached model record (scanned by `nar scan` or by a search), oldest first."""
        conn = self._read()
        if conn is None:
            return []
        try:
            rows = conn.execute("select record from models order by created, id").fetchall()
        finally:
            conn.close()
        records = [_record(row[0]) for row in rows]
        for record in records:
            record.cached = True
        return records

    @guarded
    def record(self, model_id: str) -> ModelRecord | None:
        """The cached model record `model_id` (`ModelRecord.id`), or None when it is not there."""
        conn = self._read()
        if conn is None:
            return None
        try:
            return _cached_record(conn, model_id)
        finally:
            conn.close()

    @guarded
    def graph(self, graph_key: str) -> Any:
        """The ArchGraph stored under `graph_key` (see `ModelRecord.graph_key`), or None."""
        from narcli.graph.arch_graph import ArchGraph

        conn = self._read()
        if conn is None:
            return None
        row = conn.execute("select data from graphs where key = ?", (graph_key,)).fetchone()
        conn.close()
        return sqlite_files.decoded(lambda data: ArchGraph.from_json(zlib.decompress(data).decode()), row[0]) if row else None

    @guarded
    def info(self) -> dict[str, Any]:
        """Counts, size, and `health`: "ok", or what is wrong (SQLite's quick check, a stored value
        that does not decode, a symlink, another program's database)."""
        counts = dict.fromkeys(TABLES, 0)
        health = sqlite_files.health(self.path, TABLES, _check_blobs)
        if health == "ok":
            conn = self._read()
            if conn is not None:
                try:
                    for table in counts:
                        counts[table] = conn.execute(f"select count(*) from {table}").fetchone()[0]
                finally:
                    conn.close()
        size = sum(p.stat().st_size for p in self._files() if p.exists())
        return {"path": str(self.path), "exists": self.path.exists(), "bytes": size, **counts, "health": health}

    def _files(self) -> list[Path]:
        return database_files(self.path)

    # -- writing ---------------------------------------------------------------------------------
    def _write(self) -> sqlite3.Connection:
        """A connection in autocommit mode (transactions are explicit), with the schema in place.

        Every write transaction starts with BEGIN IMMEDIATE: it takes the write lock up front, so
        concurrent writers wait on the busy timeout instead of failing on a lock upgrade.
        """
        sqlite_files.refuse_symlink(self.path, "cache", CacheError)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"pragma busy_timeout = {BUSY_TIMEOUT_MS}")
        try:  # before anything is changed: no WAL mode, no tables in another program's database
            sqlite_files.refuse_foreign(conn, self.path, TABLES, "cache", CacheError)
        except CacheError:
            conn.close()
            raise
        if conn.execute("pragma journal_mode").fetchone()[0] != "wal":
            self._retry_locked(lambda: conn.execute("pragma journal_mode = wal"))
        if conn.execute("select 1 from sqlite_master where name = 'scans'").fetchone() is None:
            self._retry_locked(lambda: self._create_schema(conn))
        return conn

    @staticmethod
    def _retry_locked(step: Any) -> None:
        # switching journal mode fails at once (no busy wait) while another process holds a lock
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                step()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @staticmethod
    def _create_schema(conn: sqlite3.Connection) -> None:
        import sqlite_utils

        conn.execute("begin immediate")
        try:
            db = sqlite_utils.Database(conn)
            db["graphs"].create({"key": str, "hash": str, "data": bytes, "nodes": int,
                                 "edges": int, "created": float}, pk="key", if_not_exists=True)
            db["models"].create({"id": str, "graph_hash": str, "name": str, "source": str,
                                 "record": str, "created": float}, pk="id", if_not_exists=True)
            db["scans"].create({"key": str, "path": str, "model_ids": str, "created": float},
                               pk="key", if_not_exists=True)
        finally:
            if conn.in_transaction:
                conn.execute("commit")

    @guarded
    def store(self, key: str, path: str, records: list[ModelRecord], graphs: list[Any]) -> None:
        """Store one scan atomically: its model records and their graphs, or nothing."""
        conn = self._write()
        now = time.time()
        try:
            conn.execute("begin immediate")
            for i, (record, graph) in enumerate(zip(records, graphs, strict=True)):
                record.id = f"{key}:{i}"
                text = graph.to_json().encode()
                record.graph_key = hashlib.sha256(text).hexdigest()[:32]
                conn.execute("insert or replace into graphs (key, hash, data, nodes, edges, created) "
                             "values (?, ?, ?, ?, ?, ?)",
                             (record.graph_key, record.graph_hash, zlib.compress(text, 6),
                              graph.num_nodes, len(graph.edges), now))
                body = record.to_json()
                body["cached"] = False
                conn.execute("insert or replace into models (id, graph_hash, name, source, record, created) "
                             "values (?, ?, ?, ?, ?, ?)",
                             (record.id, record.graph_hash, record.name, record.source, json.dumps(body), now))
            conn.execute("insert or replace into scans (key, path, model_ids, created) values (?, ?, ?, ?)",
                         (key, path, json.dumps([r.id for r in records]), now))
            conn.execute("commit")
        except BaseException:
            if conn.in_transaction:
                conn.execute("rollback")
            raise
        finally:
            conn.close()

    # -- embeddings of scanned models (`nar similar FILE` computes them once) --------------------
    # one row per scanned model (two files may share a graph), keyed by the model record's id
    EMBEDDINGS = ("create table if not exists embeddings (model_id text primary key, graph_key text not null, "
                  "encoder text not null, vector blob not null, prediction text, motifs text, name text, path text, "
                  "graph_hash text, params integer, macs integer, created real)")

    @guarded
    def embedding(self, graph_key: str, encoder: str) -> dict[str, Any] | None:
        """The stored embedding of one scanned graph by `encoder`, or None."""
        conn = self._read()
        if conn is None:
            return None
        try:
            row = conn.execute("select vector, prediction, motifs from embeddings where graph_key = ? and encoder = ? "
                               "limit 1", (graph_key, encoder)).fetchone()
        except sqlite3.OperationalError:  # a cache from before embeddings
            return None
        finally:
            conn.close()
        if row is None:
            return None
        return {"vector": row[0], "prediction": json.loads(row[1] or "null"), "motifs": json.loads(row[2] or "[]")}

    @guarded
    def store_embedding(self, record: ModelRecord, encoder: str, vector: bytes, prediction: Any, motifs: Any) -> None:
        conn = self._write()
        try:
            conn.execute(self.EMBEDDINGS)
            conn.execute("insert or replace into embeddings values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (record.id, record.graph_key, encoder, vector, json.dumps(prediction), json.dumps(motifs),
                          record.name, str(Path(record.source).resolve()), record.graph_hash,
                          _int64(record.params), _int64(record.macs), time.time()))
        finally:
            conn.close()

    @guarded
    def update_prediction(self, graph_key: str, encoder: str, prediction: Any) -> None:
        """Replace the prediction stored with every embedding of `graph_key` by `encoder` (the vector,
        and so the user index built from it, is unchanged)."""
        conn = self._write()
        try:
            conn.execute(self.EMBEDDINGS)
            conn.execute("update embeddings set prediction = ? where graph_key = ? and encoder = ?",
                         (json.dumps(prediction), graph_key, encoder))
        finally:
            conn.close()

    @guarded
    def embeddings(self, encoder: str) -> list[dict[str, Any]]:
        """Every stored embedding by `encoder`, with what a results table shows about its model."""
        conn = self._read()
        if conn is None:
            return []
        try:
            rows = conn.execute("select model_id, graph_key, vector, prediction, motifs, name, path, graph_hash, params, "
                                "macs from embeddings where encoder = ? order by model_id", (encoder,)).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()
        names = ("model_id", "graph_key", "vector", "prediction", "motifs", "name", "path", "graph_hash", "params", "macs")
        out = []
        for row in rows:
            item = dict(zip(names, row))
            item["prediction"] = json.loads(item["prediction"] or "null")
            item["motifs"] = json.loads(item["motifs"] or "[]")
            out.append(item)
        return out

    def clear(self) -> dict[str, int]:
        """Delete every scan, model and graph; returns how many of each were removed. A damaged
        database cannot be emptied, so its files are deleted: clearing always works."""
        if not self.path.exists() and not self.path.is_symlink():
            return {"scans": 0, "models": 0, "graphs": 0}
        before = self.info()
        if sqlite_files.is_foreign(before["health"]):  # not nar's file to empty or delete
            raise CacheError(f"cache {self.path} is {before['health']}; nar leaves it alone: move it away or "
                             "point NAR_HOME elsewhere")
        try:
            if before["health"] != "ok":
                raise sqlite3.DatabaseError(before["health"][:200])
            conn = self._write()
            try:
                conn.execute("begin immediate")
                for table in ("scans", "models", "graphs"):
                    conn.execute(f"delete from {table}")
                conn.execute("drop table if exists embeddings")
                conn.execute("commit")
                conn.execute("vacuum")
            finally:
                conn.close()
            return {k: before[k] for k in ("scans", "models", "graphs")}
        except (NarError, sqlite3.DatabaseError) as exc:
            if "busy" in str(exc) or "locked" in str(exc):
                raise
            for file in self._files():  # not a sound database any more: nothing in it can be saved
                file.unlink(missing_ok=True)
            return {"scans": 0, "models": 0, "graphs": 0, "damaged": str(exc)}
