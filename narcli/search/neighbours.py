"""The indexes a search reads, kept fresh: the zoo's (shipped, else built under $NAR_HOME) and the
user's (scanned models and the user's own zoo), each rebuilt when what it indexes has changed."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from narcli import DATA_DIR
from narcli.errors import NarError
from narcli.search.index import IndexError_, VectorIndex, build_index, check_writable, folder_lock

BUNDLED_INDEX = DATA_DIR / "zoo-index.json"


def index_dir() -> Path:
    from narcli.scan.cache import nar_home

    folder = nar_home() / "index"
    if folder.exists() and not folder.is_dir():
        raise IndexError_(f"{folder} is a file, not a directory; remove it or point NAR_HOME elsewhere")
    return folder


def _matrix(blobs: list[bytes]) -> np.ndarray:
    """Stored float32 vectors (bytes) as one matrix."""
    return np.stack([np.frombuffer(b, dtype=np.float32) for b in blobs]) if blobs else np.zeros((0, 1), np.float32)


def _fingerprint(db: Path) -> str:
    from narcli.zoo.store import Zoo

    with Zoo([db]) as zoo:
        return zoo.embedding_fingerprint()


def _zoo_vectors(db: Path) -> tuple[list[str], np.ndarray, set[str]]:
    from narcli.zoo.store import Zoo

    with Zoo([db]) as zoo:
        hashes, blobs, encoders = zoo.embeddings()
    return hashes, _matrix(blobs), encoders


# edited copies per architecture for the novelty calibration, of at most CALIBRATION_MEMBERS
# architectures per family: every family weighs the same in its 1 % tail, so more members only
# cost time (the bundled zoo: 0.660 either way, from 2,620 copies instead of 6,950;
# benchmarks/bench_novelty_seeds.py)
CALIBRATION_VARIANTS = 2
CALIBRATION_MEMBERS = 4


def zoo_calibration(db: Path, hashes: list[str], vectors: np.ndarray,
                    variants: int = CALIBRATION_VARIANTS, split_seed: int | None = None) -> dict[str, Any]:
    """The novelty threshold of this zoo's embeddings (see family.py), set on edited copies of
    every family's architectures (`encode.augment`; CALIBRATION_MEMBERS of each, drawn with the
    seed) when `variants` > 0, each searched against all the other architectures, and on every
    architecture of a family two zoo sources list, searched against the other sources' only.
    `split_seed`: recomputed on that random split's training part only, with edits of that seed,
    to see how much the threshold moves with what the zoo holds."""
    from narcli.encode.dataset import Item, augmented_items, card_split, original_hash, split_random, zoo_labels
    from narcli.encode.weights import bundled_weights_path
    from narcli.search.family import calibrate_novelty
    from narcli.zoo.store import Zoo

    card = json.loads(bundled_weights_path().with_suffix(".json").read_text())
    card_seed = card["config"]["seed"]
    with Zoo([db]) as zoo:
        labelled = zoo_labels(zoo)
        position = {h: i for i, h in enumerate(hashes)}
        items = [Item(h, *labelled[h], None) for h in labelled if h in position]
        _, never_trained = card_split(items, card, zoo)  # the encoder card's test part
        pool = list(range(len(items))) if split_seed is None else split_random(items, seed=split_seed)[0]
        seed = card_seed if split_seed is None else split_seed
        local = {row: k for k, row in enumerate(pool)}
        made_from, copy_vectors = [], None
        if variants > 0:
            from narcli.encode.embedder import Embedder

            edited = _members(items, pool, CALIBRATION_MEMBERS, seed)
            copies = augmented_items(items, edited, variants, seed + 1, zoo=zoo)
            if copies:
                row_of = {items[row].graph_hash: local[row] for row in pool}
                made_from = [row_of[original_hash(c)] for c in copies]
                copy_vectors, _ = Embedder().embed_encoded([c.encoded for c in copies])
        listed = zoo.sources_by_hash([items[row].graph_hash for row in pool])
    ordered = vectors[[position[items[row].graph_hash] for row in pool]]
    return calibrate_novelty(ordered, [items[row].family for row in pool], list(range(len(pool))),
                             (copy_vectors, made_from) if copy_vectors is not None else None,
                             {local[row] for row in never_trained if row in local},
                             [listed.get(items[row].graph_hash, frozenset()) for row in pool])


def _members(items: list, rows: list[int], most: int, seed: int) -> list[int]:
    """At most `most` of `rows` per family, drawn with `seed`; none of a family of one (nothing
    else would have its family, so its copies could not be known queries)."""
    import random

    rng = random.Random(seed)
    by_family: dict[str, list[int]] = {}
    for row in rows:
        by_family.setdefault(items[row].family, []).append(row)
    chosen = []
    for family in sorted(by_family):
        members = by_family[family]
        rng.shuffle(members)
        chosen += members[:most] if len(members) >= 2 else []
    return sorted(chosen)


def build_zoo_index(db: Path, path: Path, report: Callable[[str], None] = lambda line: None) -> VectorIndex:
    """Index every embedding of the zoo at `db` (with its novelty calibration) at `path`."""

    check_writable(path)  # before the minutes of novelty calibration
    hashes, vectors, encoders = _zoo_vectors(db)
    if not hashes:
        raise NarError(f"the zoo {db} has no embeddings; run `nar zoo embed --db {db}`")
    fingerprint = _fingerprint(db)
    report(f"indexing {len(hashes)} zoo architectures")
    meta = {"kind": "zoo", "fingerprint": fingerprint, "encoders": sorted(encoders), "database": str(db)}
    try:
        meta["calibration"] = zoo_calibration(db, hashes, vectors)
    except (KeyError, ValueError, OSError):  # a zoo without the card's families: use the default threshold
        pass
    from narcli.errors import ZooError
    from narcli.zoo.composite import split_decoder_prototypes
    from narcli.zoo.store import Zoo

    try:
        with Zoo([db]) as zoo:  # what a query's decoder is named by (`search.family.query_names`)
            meta["decoders"], meta["other_decoders"] = split_decoder_prototypes(zoo)
    except ZooError as exc:  # a graph missing or damaged: search without renaming by decoders
        report(f"decoders not read ({exc}); searches will not rename a family by its decoder")
        meta["decoders"], meta["other_decoders"] = {}, {}
    return build_index(path, hashes, vectors, meta)


def zoo_index(db: Path | None = None, report: Callable[[str], None] = lambda line: None) -> VectorIndex:
    """The index of the zoo at `db` (default: the bundled zoo): the shipped one when it matches
    the zoo's embeddings, else one under $NAR_HOME, built now if needed (no torch involved)."""
    from narcli.zoo.store import BUNDLED, bundled_zoo_path

    db = Path(db or bundled_zoo_path())
    fingerprint = _fingerprint(db)
    candidates = [BUNDLED_INDEX] if db.resolve() == BUNDLED.resolve() else []
    built = index_dir() / f"zoo-{fingerprint}.json"
    for path in [*candidates, built]:
        try:
            index = VectorIndex(path)
            # else from before decoders, or before other families' decoders (2026-12-06)
            if index.meta.get("fingerprint") == fingerprint and "other_decoders" in index.meta:
                index.verify()
                return index
        except IndexError_ as exc:
            report(f"{exc}; rebuilding it" if path == built else f"{exc}; building one under {built.parent}")
    return build_zoo_index(db, built, report)


def user_entries(encoder: str) -> tuple[list[str], list[bytes], dict[str, dict[str, Any]]]:
    """(keys, vectors, details) of the user's scanned models and user-zoo architectures."""
    from narcli.scan.cache import Cache
    from narcli.scan.targets import cache_name, zoo_key
    from narcli.zoo.store import Zoo, user_zoo_path

    keys, blobs, details = [], [], {}
    for item in Cache().embeddings(encoder):
        key = cache_name(item['model_id'])
        keys.append(key)
        blobs.append(item.pop("vector"))
        details[key] = item
    if user_zoo_path().exists():
        with Zoo([user_zoo_path()]) as zoo:
            hashes, vectors, _ = zoo.embeddings()
        for graph_hash, blob in zip(hashes, vectors):
            keys.append(zoo_key(graph_hash))
            blobs.append(blob)
    return keys, blobs, details


def user_index(encoder: str, report: Callable[[str], None] = lambda line: None,
               force: bool = False) -> tuple[VectorIndex | None, dict]:
    """The index of the user's entries (None when there are none) and their details; rebuilt when
    the entries changed since it was built."""
    path = index_dir() / "user.json"
    current = _current_user_index(path, encoder, force)
    if current[0] is not None or not current[1]:
        return current[0], current[2]
    # stale: rebuild one process at a time, each from the entries it reads under the lock, so that a
    # build from an older read never replaces a newer one (six concurrent `nar similar` of new files
    # once left 11 of 12 rows that way)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: the build reports that itself
        pass
    with folder_lock(path.parent, exclusive=True, name=".user-build.lock"):
        index, keys, details, blobs, fingerprint = _current_user_index(path, encoder, force)
        if index is not None or not keys:
            return index, details
        report(f"indexing {len(keys)} of your models")
        return build_index(path, keys, _matrix(blobs), {"kind": "user", "fingerprint": fingerprint,
                                                        "encoder": encoder}), details


def _current_user_index(path: Path, encoder: str, force: bool) -> tuple:
    """(the index when it is current else None, keys, details, blobs, fingerprint) from one read."""
    import hashlib

    keys, blobs, details = user_entries(encoder)
    fingerprint = hashlib.sha256("\n".join(keys).encode() + b"".join(blobs)).hexdigest()[:16]
    if keys and not force:
        try:
            index = VectorIndex(path)
            if index.meta.get("fingerprint") == fingerprint:
                return index, keys, details, blobs, fingerprint
        except IndexError_:
            pass
    return None, keys, details, blobs, fingerprint


def index_info() -> list[dict[str, Any]]:
    """What `nar index info` shows: each index, its size, what it holds, whether it is current."""
    from narcli.zoo.store import bundled_zoo_path

    rows = []
    fingerprint = _fingerprint(bundled_zoo_path())
    paths = [BUNDLED_INDEX, *sorted(index_dir().glob("*.json"))] if index_dir().exists() else [BUNDLED_INDEX]
    for path in paths:
        row: dict[str, Any] = {"path": str(path)}
        try:
            index = VectorIndex(path)
            meta = index.meta
            row.update({"kind": meta.get("kind"), "items": meta["items"], "dim": meta["dim"], "trees": meta["trees"],
                        "search_dim": meta["search_dim"],
                        "bytes": meta["ann_bytes"] + meta["vec_bytes"] + path.stat().st_size, "status": "ok"})
            if meta.get("kind") == "zoo":
                row["current"] = meta.get("fingerprint") == fingerprint
                if "calibration" in meta:
                    row["novelty_threshold"] = meta["calibration"]["novelty_threshold"]
        except IndexError_ as exc:
            row.update({"status": str(exc)})
        rows.append(row)
    return rows


def rebuild_indexes(bundled: bool = False, report: Callable[[str], None] = lambda line: None) -> list[dict[str, Any]]:
    """`nar index build`: rebuild the zoo index (the shipped file with `bundled`) and the user's."""
    from narcli.encode.weights import bundled_weights_path, encoder_id
    from narcli.zoo.store import BUNDLED, bundled_zoo_path

    db = bundled_zoo_path()
    if bundled:
        if db.resolve() != BUNDLED.resolve():
            raise NarError("--bundled writes the shipped index of the shipped zoo; unset NAR_ZOO")
        build_zoo_index(db, BUNDLED_INDEX, report)
    else:
        build_zoo_index(db, index_dir() / f"zoo-{_fingerprint(db)}.json", report)
    user_index(encoder_id(bundled_weights_path()), report, force=True)
    return index_info()


def _index_problems() -> list[tuple[Path, str]]:
    """(JSON file, what is wrong) for each damaged index under $NAR_HOME/index: unreadable, a file
    it names missing or cut short, or an annoy file whose digest does not match."""
    folder = index_dir()
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            index = VectorIndex(path)
            try:
                index.verify()
            finally:
                index.close()
        except IndexError_ as exc:  # its words without the path: "digest mismatch", "no user-1.vec", "missing"
            inner = re.search(r"\((.*)\)[^()]*$", str(exc))
            found.append((path, inner.group(1) if inner else str(exc).rpartition(" is ")[2]))
    return found


def indexes_health() -> dict[str, Any]:
    """The indexes under $NAR_HOME as `nar cache info` shows them (a damaged one is rebuilt when a
    search next needs it, so it costs time, never an answer)."""
    folder = index_dir()
    files = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    problems = _index_problems()
    return {"name": "index/", "what": "search indexes (rebuilt when needed)", "path": str(folder),
            "exists": bool(files), "bytes": sum(p.stat().st_size for p in files),
            "health": "; ".join(f"{p.name}: {why[:100]}" for p, why in problems[:3]) or "ok"}


def repair_indexes() -> str | None:
    """Delete each damaged index (its JSON and the files it names): the next search rebuilds it."""
    problems = _index_problems()
    if not problems:
        return None
    with folder_lock(index_dir(), exclusive=True):  # no reader is opening them meanwhile
        for path, _ in problems:
            for file in [*_named_files(path), path]:
                file.unlink(missing_ok=True)
    return f"deleted the damaged {', '.join(p.name for p, _ in problems)} from {index_dir()} (rebuilt when needed)"


def _named_files(path: Path) -> list[Path]:
    try:
        record = json.loads(path.read_text())
        return [path.with_name(record[kind]) for kind in ("ann", "vec")
                if isinstance(record, dict) and isinstance(record.get(kind), str) and "/" not in record[kind]]
    except (OSError, ValueError, RecursionError):
        return []
