"""State-dict signatures of the zoo's models: which tensors (name, shape) a checkpoint of each holds.

Each signature is stored with a MinHash sketch of it, so a checkpoint is matched against the whole
zoo by comparing 64 numbers per model, and only the closest few signatures are read in full.
`nar zoo build` stores the signatures of the models it traces; `nar zoo signatures`
(`build.compute_signatures`) fills in the rest. Reads use numpy and the standard library.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from dataclasses import dataclass
from typing import Any

from narcli.errors import ZooError
from narcli.trace.checkpoint import Shape, canonical_shapes
from narcli.zoo.sources import ZooEntry, ZooSource
from narcli.zoo.store import Zoo, rebuild_hint

SKETCH_SIZE = 64


def _hash_parameters() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(20261123)
    a = rng.integers(1, 2**63, SKETCH_SIZE, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd multipliers
    b = rng.integers(0, 2**63, SKETCH_SIZE, dtype=np.uint64)
    return a, b


def tokens(canonical: dict[str, Shape], shapes: bool = True) -> Any:
    """One 64-bit id per (canonical name, shape), or per name alone."""
    import numpy as np

    texts = (f"{n}|{','.join(map(str, s))}" if shapes else n for n, s in canonical.items())
    ids = [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts]
    return np.array(ids, dtype=np.uint64)


def sketch(canonical: dict[str, Shape], shapes: bool = True) -> Any:
    """MinHash of the signature's tokens: the share of equal entries of two sketches estimates the
    Jaccard similarity of the two token sets. Without `shapes`, of the names alone (which find a
    differently sized variant of an architecture: the same names, other shapes)."""
    import numpy as np

    ids = tokens(canonical, shapes)
    if ids.size == 0:
        return np.full(SKETCH_SIZE, np.iinfo(np.uint64).max, dtype=np.uint64)
    a, b = _hash_parameters()
    with np.errstate(over="ignore"):
        return (ids[:, None] * a[None, :] + b[None, :]).min(axis=0)


def encode_signature(signature: list[tuple[str, Shape]]) -> tuple[int, bytes, bytes, bytes]:
    """(tensor count, sketch bytes, compressed data, name-sketch bytes) as stored."""
    canonical = canonical_shapes(signature)
    data = zlib.compress(json.dumps([[n, list(s)] for n, s in signature], separators=(",", ":")).encode(), 9)
    return len(canonical), sketch(canonical).tobytes(), data, sketch(canonical, shapes=False).tobytes()


def decode_signature(blob: bytes) -> list[tuple[str, Shape]]:
    return [(n, tuple(s)) for n, s in json.loads(zlib.decompress(blob))]


# -- reading ---------------------------------------------------------------------------------------
@dataclass
class SketchTable:
    """Every stored signature's sketch, row-aligned with `ids`."""

    ids: list[str]
    sizes: Any  # int array: canonical tensor count
    sketches: Any  # (n, SKETCH_SIZE) uint64, of (name, shape)
    name_sketches: Any  # (n, SKETCH_SIZE) uint64, of names alone


def load_sketches(zoo: Zoo) -> SketchTable:
    """The sketches of every model with a signature (the user's zoo wins on equal ids)."""
    import numpy as np

    rows: dict[str, tuple[int, bytes, bytes]] = {}
    for path, conn in zoo._connections():
        try:
            columns = {row[1] for row in conn.execute("pragma table_info(signatures)")}
            names_column = "s.name_sketch" if "name_sketch" in columns else "null"  # a zoo from before them
            for model_id, size, blob, names, data in conn.execute(
                    f"select s.id, s.tensors, s.sketch, {names_column}, case when {names_column} is null "
                    "then s.data end from signatures s join models m on m.id = s.id where m.status = 'ok'"):
                if names is None:  # stored before name sketches existed
                    names = sketch(canonical_shapes(decode_signature(data)), shapes=False).tobytes()
                rows[model_id] = (size, blob, names)
        except sqlite3.OperationalError:  # a zoo without signatures yet
            continue
        except sqlite3.DatabaseError as exc:
            raise ZooError(f"zoo database {path} is unreadable ({exc}); {rebuild_hint(path)}") from None
    ids = sorted(rows)
    sizes = np.array([rows[i][0] for i in ids], dtype=np.int64)
    def matrix(column: int) -> Any:
        if not ids:
            return np.zeros((0, SKETCH_SIZE), dtype=np.uint64)
        return np.frombuffer(b"".join(rows[i][column] for i in ids), dtype=np.uint64).reshape(len(ids), SKETCH_SIZE)

    return SketchTable(ids, sizes, matrix(1), matrix(2))


def load_signatures(zoo: Zoo, ids: list[str]) -> dict[str, list[tuple[str, Shape]]]:
    found: dict[str, list[tuple[str, Shape]]] = {}
    marks = ",".join("?" * len(ids))
    for _, conn in zoo._connections():
        try:
            for model_id, blob in conn.execute(f"select id, data from signatures where id in ({marks})", tuple(ids)):
                found[model_id] = decode_signature(blob)
        except sqlite3.OperationalError:
            continue
    return found


def signature_count(zoo: Zoo) -> int:
    return len(load_sketches(zoo).ids)


# -- computing (worker processes import torch) -----------------------------------------------------
def signature_entry(source: ZooSource, entry: ZooEntry) -> list[tuple[str, Shape]]:
    """Build one zoo model on meta and return its checkpoint signature (runs in a worker)."""
    from narcli.trace.checkpoint import module_signature

    built = source.build(entry)
    return module_signature(built.weights if built.weights is not None else built.module)


def store_signature(conn: sqlite3.Connection, model_id: str, signature: list[tuple[str, Shape]]) -> None:
    size, sketch_bytes, data, names = encode_signature(signature)
    conn.execute("insert or replace into signatures (id, tensors, sketch, data, name_sketch) values (?, ?, ?, ?, ?)",
                 (model_id, size, sketch_bytes, data, names))


def add_name_sketches(conn: sqlite3.Connection) -> int:
    """Give signatures stored before name sketches existed theirs (from the stored data; no build)."""
    columns = {row[1] for row in conn.execute("pragma table_info(signatures)")}
    if "name_sketch" not in columns:
        conn.execute("alter table signatures add column name_sketch blob")
    rows = conn.execute("select id, data from signatures where name_sketch is null").fetchall()
    with conn:
        for model_id, data in rows:
            names = sketch(canonical_shapes(decode_signature(data)), shapes=False).tobytes()
            conn.execute("update signatures set name_sketch = ? where id = ?", (names, model_id))
    return len(rows)
