"""What every SQLite store nar keeps under NAR_HOME shares (the scan cache here, the measurements in
`bench/`, the user's zoo in `zoo/`): never opened through a symlink, never another program's
database, an integrity check for `nar cache info`, and a damaged file set aside by `nar cache clear`.
Standard library only (a cache hit must stay fast)."""

from __future__ import annotations

import os
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.errors import NarError, storage_trouble
from narcli.fsutil import connect_sqlite, database_files

DAMAGED_SUFFIX = ".damaged"
# what a decoder may raise on a stored blob that is not what nar wrote there
DECODE_ERRORS = (ValueError, TypeError, KeyError, IndexError, UnicodeError, OverflowError, RecursionError)


class BadBlob(Exception):
    """A stored value that does not decode to what nar wrote (a damaged page, a hand-edited row);
    each store turns it into its one line naming the file and the fix."""


def decoded(decode: Callable[[Any], Any], data: Any) -> Any:
    """`decode(data)`, or BadBlob saying why it failed."""
    try:
        return decode(data)
    except (zlib.error, *DECODE_ERRORS) as exc:
        raise BadBlob(f"{type(exc).__name__}: {exc}"[:160]) from None


def graph_blob_check(data: bytes) -> None:
    """ValueError unless `data` decompresses to a JSON object, as every store keeps a graph. Not
    parsed (zlib's checksum catches damage): ~0.08 ms a graph, where parsing costs ten times that."""
    if not zlib.decompress(data).lstrip().startswith(b"{"):
        raise ValueError("not a graph")


# (what a row is called, table, key column, value column, decode): the stored values a store checks
RowCheck = tuple[str, str, str, str, Callable[[Any], Any]]


def undecodable_rows(conn: sqlite3.Connection, checks: tuple[RowCheck, ...], first: bool = False
                     ) -> list[tuple[RowCheck, Any, str]]:
    """(check, key, why) of every stored value that does not decode (only the first with `first`)."""
    found = []
    for check in checks:
        _, table, key_column, column, decode = check
        for key, data in conn.execute(f"select {key_column}, {column} from {table}"):
            try:
                decoded(decode, data)
            except BadBlob as exc:
                found.append((check, key, str(exc)))
                if first:
                    return found
    return found


def first_undecodable(checks: tuple[RowCheck, ...]) -> Callable[[sqlite3.Connection], str | None]:
    """A `decode` for `health`: the first value that does not decode, in words."""
    def decode(conn: sqlite3.Connection) -> str | None:
        for (what, *_), key, why in undecodable_rows(conn, checks, first=True):
            return f"{what} {key} cannot be decoded ({why})"
        return None

    return decode


def repair(path: Path, tables: tuple[str, ...], checks: tuple[RowCheck, ...],
           cascade: Callable[[sqlite3.Connection, list[tuple[RowCheck, Any, str]]], None] | None = None) -> str | None:
    """Repair the database at `path` for `nar cache clear`: rows whose values do not decode are
    deleted (with what `cascade` deletes beside them), keeping everything sound; a file SQLite
    itself faults is set aside. What was done, or None when there was nothing to do (sound, absent,
    or not nar's: that is left alone, and `health` names it)."""
    state = health(path, tables, first_undecodable(checks))
    if state == "ok" or is_foreign(state):
        return None
    try:
        conn = connect_sqlite(path, timeout=30, isolation_level=None)
        try:
            if [row[0] for row in conn.execute("pragma quick_check")] != ["ok"]:
                raise sqlite3.DatabaseError("quick check failed")
            bad = undecodable_rows(conn, checks)
            conn.execute("begin immediate")
            for (_, table, key_column, *_), key, _why in bad:
                conn.execute(f"delete from {table} where {key_column} = ?", (key,))
            if cascade is not None:
                cascade(conn, bad)
            conn.execute("commit")
        finally:
            conn.close()
        if health(path, tables, first_undecodable(checks)) == "ok":
            return f"removed {len(bad)} damaged row{'s' * (len(bad) != 1)} from {path}"
    except sqlite3.DatabaseError:
        pass
    return f"set the damaged {path} aside as {set_aside(path).name}"


def refuse_symlink(path: Path, what: str, error: type[NarError]) -> None:
    """`error` when `path` is a symlink: its target may be any database (another program's), which
    nar would fill with its tables and switch to WAL mode."""
    if os.path.islink(path):
        raise error(f"{what} {path} is a symlink; nar never opens its stores through one (its target may be "
                    "another program's database): remove the link or point NAR_HOME elsewhere")


def table_names(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("select name from sqlite_master where type = 'table' "
                                           "and name not like 'sqlite_%'")]


def refuse_foreign(conn: sqlite3.Connection, path: Path, tables: tuple[str, ...], what: str,
                   error: type[NarError]) -> None:
    """`error` when the database holds tables and none of nar's `tables`: it is another program's
    file (an empty database is one being created, and is nar's to fill)."""
    names = table_names(conn)
    if names and not set(tables) & set(names):
        shown = ", ".join(sorted(names)[:5]) + (", …" if len(names) > 5 else "")
        raise error(f"{what} {path} is not nar's (it holds the tables {shown}); nar leaves another program's "
                    "database alone: move it away or point NAR_HOME elsewhere")


def _open_readonly(path: Path) -> tuple[sqlite3.Connection, list[str]]:
    """A read-only connection and what `pragma quick_check` says; sqlite3.DatabaseError if neither."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return conn, [row[0] for row in conn.execute("pragma quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        conn.close()
        if not ("unable to open" in str(exc) and storage_trouble(exc, path.parent)):
            raise
    # a WAL database on a read-only mount, without its -shm file: sound, and readable as immutable
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return conn, [row[0] for row in conn.execute("pragma quick_check").fetchall()]
    except sqlite3.DatabaseError:
        conn.close()
        raise


def health(path: Path, tables: tuple[str, ...], decode: Callable[[sqlite3.Connection], str | None] | None = None
           ) -> str:
    """"ok", or in one line what is wrong with the database at `path` (absent counts as ok): a
    symlink, not SQLite, another program's tables, what `pragma quick_check` finds, or what
    `decode(conn)` says of the values it reads."""
    if os.path.islink(path):
        return "a symlink (nar never opens its stores through one)"
    if not path.exists():
        return "ok"
    try:
        conn, problems = _open_readonly(path)
    except sqlite3.DatabaseError as exc:
        return _one_line(exc)
    try:
        if problems != ["ok"]:
            return _one_line("; ".join(problems[:3]))
        names = table_names(conn)
        if names and not set(tables) & set(names):
            return f"not nar's database (tables {', '.join(sorted(names)[:5])})"
        return (decode(conn) if decode and names else None) or "ok"
    except sqlite3.DatabaseError as exc:
        return _one_line(exc)
    finally:
        conn.close()


def is_foreign(state: str) -> bool:
    """Whether `health` found a file that `nar cache clear` must leave alone (not nar's to touch)."""
    return state.startswith(("not nar's", "a symlink"))


def set_aside(path: Path) -> Path:
    """Move a damaged database (with its journals) to `NAME.damaged`, replacing an earlier one, so a
    fresh one can be made without destroying what the user may still want to look at."""
    target = path.with_name(path.name + DAMAGED_SUFFIX)
    for source, dest in zip(database_files(path), database_files(target)):
        if source.exists():
            os.replace(source, dest)
        elif dest.exists():
            dest.unlink()  # a journal of an older damaged copy no longer matches it
    return target


def _one_line(text: object) -> str:
    return " ".join(str(text).split())[:200]
