"""The zoo database opened for writing: one writer per database (a `flock` beside it), the schema
checked, rows and graphs stored so that one graph serves each architecture, and the file compacted
when a job ends. `writing(path)` is the skeleton every zoo writer shares (build, signatures, embed,
upgrade): open, work, compact, close, and a database error as one line."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from narcli import IR_VERSION
from narcli.errors import NarError, ZooError
from narcli.fsutil import connect_sqlite, open_lock_file
from narcli.zoo.signatures import add_name_sketches
from narcli.zoo.sources import ZooSource
from narcli.zoo.store import SCHEMA, SCHEMA_VERSION, pack_vector, rebuild_hint


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@contextmanager
def writing(path: Path, compact: bool = True) -> Iterator["ZooWriter"]:
    """The zoo at `path` opened for writing for one job; compacted when the job ends well, closed
    however it ends, a database error raised as one line."""
    writer = ZooWriter(Path(path))
    try:
        yield writer
        if compact:
            writer.compact()
    except sqlite3.DatabaseError as exc:
        raise NarError(f"writing the zoo {path} failed: {exc}") from None
    finally:
        writer.close()


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

    def record_build(self, started: str, options: Any, reports: list[Any]) -> None:
        summary = [{**{k: v for k, v in r.__dict__.items() if k != "reasons"}, "reasons": dict(r.reasons)}
                   for r in reports]
        opts = {"limit": options.limit, "jobs": options.jobs, "timeout": options.timeout,
                "patterns": options.patterns, "retry_failed": options.retry_failed, "refresh": options.refresh, "engine": options.engine}
        with self.conn:
            self.conn.execute("insert into builds (started, finished, sources, options, summary) values (?, ?, ?, ?, ?)",
                              (started, now(), json.dumps([r.source for r in reports]), json.dumps(opts),
                               json.dumps(summary)))

    def compact(self) -> None:
        """Fold the WAL in, shrink the file (it ships read-only); skipped while another process reads it."""
        try:  # leaving WAL mode needs the only connection
            self.conn.execute("pragma wal_checkpoint(truncate)")
            self.conn.execute("pragma journal_mode = delete")
            # big pages hold a ~7 KB compressed graph in the leaf with little left over (bundled zoo
            # of 4,097 models: 69.4 MB at 4 KB pages, 60.2 MB at 16 KB, 58.5 MB at 32 KB, 59.0 MB at 64 KB)
            self.conn.execute(f"pragma page_size = {COMPACT_PAGE_SIZE}")
            self.conn.execute("vacuum")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise


COMPACT_PAGE_SIZE = 32768
