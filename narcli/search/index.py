"""Nearest-neighbour indexes: annoy (angular) over unit embeddings, re-ranked by exact cosine.

An index is two files: `<name>.json` (keys, dimension, what it was built from) and the annoy file
it names, `<name>-<digest>.ann`. A build writes the annoy file under a new name, then replaces the
JSON in one rename, then removes the old annoy file, so a crash at any point leaves either the old
index or the new one, never a mix. Reads check the annoy file's size and digest against the JSON.

Concurrent processes (eight `nar similar` at once, each rebuilding the user's index): a reader
reads the JSON and opens the annoy file it names under a shared lock (`.index.lock` in the folder),
and a build swaps the JSON and removes the old annoy file under the exclusive lock. So the file a
reader has just read the name of cannot vanish before it is open; once open, the reader keeps the
descriptor and loads through it, so a later removal costs it nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import NarError, storage_trouble, trouble_phrase

SEARCH_FACTOR = 8  # nodes inspected per query, in multiples of annoy's default
DEFAULT_TREES = 32
FORMAT = 1


class IndexError_(NarError):  # noqa: N801 (IndexError is a builtin)
    """An index file that is missing, stale or damaged."""


def angular_to_cosine(distance: float) -> float:
    """annoy's angular distance is sqrt(2 (1 - cos)) between unit vectors: invert it."""
    return 1.0 - distance * distance / 2.0


def _file_digest(path: Path | int) -> str:
    """sha256 prefix of a file, by path or by an open descriptor (read from its start, not moved)."""
    digest = hashlib.sha256()
    if isinstance(path, int):
        offset = 0
        while block := os.pread(path, 1 << 20, offset):
            digest.update(block)
            offset += len(block)
        return digest.hexdigest()[:16]
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


LOCK_NAME = ".index.lock"


@contextlib.contextmanager
def folder_lock(folder: Path, exclusive: bool, name: str = LOCK_NAME) -> Iterator[bool]:
    """A lock over the index files of `folder`: shared for readers, exclusive for a build's swap;
    yields whether it is held. A build creates the lock file; a reader only opens it, so reading
    the shipped index writes nothing into the package. Without fcntl (Windows), nothing is locked.
    Another `name` is another lock (the user index's rebuilds take one of their own)."""
    try:
        import fcntl
    except ImportError:
        yield False
        return
    try:
        fd = os.open(folder / name, (os.O_RDWR | os.O_CREAT) if exclusive else os.O_RDONLY, 0o644)
    except OSError:  # no build has run here yet, or a read-only folder (where none can)
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def build_index(path: Path, keys: list[str], vectors: np.ndarray, meta: dict[str, Any] | None = None,
                trees: int = DEFAULT_TREES, seed: int = 0, jobs: int = 1) -> VectorIndex:
    """Write an index of `vectors` (one row per key) at `path` (the .json); atomic, see above.

    `jobs` threads build the trees (-1: every core); one thread keeps a build reproducible.
    """
    from annoy import AnnoyIndex

    vectors = np.asarray(vectors, dtype=np.float32)
    if len(keys) != len(vectors):
        raise ValueError(f"{len(keys)} keys for {len(vectors)} vectors")
    dim = int(vectors.shape[1]) if vectors.ndim == 2 and len(vectors) else int((meta or {}).get("dim", 1))
    path = Path(path)
    if path.parent.exists() and not path.parent.is_dir():
        raise IndexError_(f"{path.parent} is a file, not a directory; remove it or point NAR_HOME elsewhere")
    tmp_ann = path.with_name(f"{path.stem}.{os.getpid()}.ann.tmp")
    tmp_json = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        annoy = AnnoyIndex(dim, "angular")
        annoy.set_seed(seed)
        for i, vector in enumerate(vectors):
            annoy.add_item(i, vector.tolist())
        annoy.build(trees, n_jobs=jobs)
        annoy.save(str(tmp_ann))
        annoy.unload()
        digest = _file_digest(tmp_ann)
        ann = path.with_name(f"{path.stem}-{digest}.ann")
        record = {"format": FORMAT, "ann": ann.name, "ann_bytes": tmp_ann.stat().st_size, "ann_digest": digest,
                  "dim": dim, "items": len(keys), "trees": trees, "metric": "angular", "keys": list(keys),
                  **(meta or {})}
        tmp_json.write_text(json.dumps(record))
        # Every rename in and every removal happens under the exclusive lock: two builds of the same
        # entries name the same annoy file, and one must not remove it after the other has put it back.
        with folder_lock(path.parent, exclusive=True):
            tmp_ann.replace(ann)
            old = _previous_ann(path)  # read under the lock: a concurrent build may have swapped it
            tmp_json.replace(path)
            if old is not None and old != ann:
                old.unlink(missing_ok=True)
    except OSError as exc:  # read-only or full: leave nothing half-written, and say which
        for tmp in (tmp_ann, tmp_json):
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
        trouble = storage_trouble(exc, path.parent)
        if trouble is None:
            raise
        raise IndexError_(f"cannot write the index {path}: {trouble_phrase(trouble)}") from None
    return VectorIndex(path)


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Delete the `NAME.PID.ann.tmp` / `NAME.json.PID.tmp` files of builds whose process is gone
    (killed mid-write); the files of a build still running are left alone."""
    removed = []
    for file in folder.glob("*.tmp"):
        parts = file.name.split(".")
        pid = next((int(p) for p in reversed(parts[:-1]) if p.isdigit()), None)
        if pid is None or _process_alive(pid):
            continue
        file.unlink(missing_ok=True)
        removed.append(file)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or a number we cannot ask about: leave the file
    return True


def _previous_ann(path: Path) -> Path | None:
    try:
        return path.with_name(json.loads(path.read_text())["ann"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class VectorIndex:
    """A built index: `query` returns (key, cosine) pairs, best first."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fd: int | None = None
        try:
            if not self.path.parent.is_dir():
                raise FileNotFoundError(self.path)
            for attempt in range(3):
                with folder_lock(self.path.parent, exclusive=False) as locked:  # JSON and annoy file: one generation
                    self.meta: dict[str, Any] = json.loads(self.path.read_text())
                    ann = self.path.with_name(self.meta["ann"])
                    try:
                        self._fd = os.open(ann, os.O_RDONLY)
                        break
                    except FileNotFoundError:
                        if locked or attempt == 2:  # no build could have swapped it: it is gone
                            raise IndexError_(f"index {self.path} is damaged or incomplete (no {ann.name})") from None
                        # unlocked (the first build in this folder is making the lock): read again
            size_ok = os.fstat(self._fd).st_size == self.meta["ann_bytes"]
        except FileNotFoundError:
            raise IndexError_(f"index {self.path} is missing") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.close()
            raise IndexError_(f"index {self.path} is damaged ({exc})") from None
        except IndexError_:
            raise
        if self.meta.get("format") != FORMAT or not size_ok:
            self.close()
            raise IndexError_(f"index {self.path} is damaged or incomplete")
        self.keys: list[str] = self.meta["keys"]
        self.dim: int = self.meta["dim"]
        self._ann_path = ann
        self._annoy: Any = None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except (OSError, AttributeError):
            pass

    def _open_path(self) -> str:
        """A path to the very file this index opened: through the descriptor where /proc shows it
        (a build may have removed the name since), else the name."""
        fd_path = f"/proc/self/fd/{self._fd}"
        return fd_path if self._fd is not None and os.path.exists(fd_path) else str(self._ann_path)

    def verify(self) -> None:
        """Check the annoy file's digest (reads the whole file)."""
        digest = _file_digest(self._fd) if self._fd is not None else _file_digest(self._ann_path)
        if digest != self.meta["ann_digest"]:
            raise IndexError_(f"index {self._ann_path} is damaged (digest mismatch)")

    def _load(self) -> Any:
        if self._annoy is None:
            from annoy import AnnoyIndex

            self.verify()  # annoy trusts its file blindly: a damaged one could crash the process
            annoy = AnnoyIndex(self.dim, "angular")
            annoy.load(self._open_path())  # memory-mapped: the mapping outlives the name
            self._annoy = annoy
        return self._annoy

    def __len__(self) -> int:
        return len(self.keys)

    def vector(self, position: int) -> np.ndarray:
        return np.asarray(self._load().get_item_vector(position), dtype=np.float32)

    def query(self, vector: np.ndarray, n: int, search_k: int = -1) -> list[tuple[str, float]]:
        """The `n` nearest keys by exact cosine among annoy's candidates (annoy returns
        several times `n` candidates, then the exact cosine orders them)."""
        if n <= 0 or not self.keys:
            return []
        annoy = self._load()
        vector = np.asarray(vector, dtype=np.float32)
        if vector.shape != (self.dim,):
            raise IndexError_(f"index {self.path} holds {self.dim}-d vectors, the query is {vector.shape[0]}-d; "
                              "rebuild it with `nar index build`")
        wanted = min(len(self.keys), max(n * 4, 50))
        if search_k <= 0:
            # annoy's default (trees x wanted nodes) missed ~1.5 % of the true top 10 on the zoo,
            # whose families sit in tight clusters; 4x reached 0.996 on 2,420 architectures but
            # 0.988 on 3,696 (smp's decoders over shared encoders); 8x reaches 0.992 in ~1.8 ms
            search_k = SEARCH_FACTOR * int(self.meta.get("trees", DEFAULT_TREES)) * wanted
        candidates = annoy.get_nns_by_vector(vector.tolist(), wanted, search_k=search_k)
        stored = np.array([annoy.get_item_vector(i) for i in candidates], dtype=np.float32).reshape(-1, self.dim)
        norms = np.linalg.norm(stored, axis=1) * max(float(np.linalg.norm(vector)), 1e-12)
        cosines = stored @ vector / np.maximum(norms, 1e-12)
        order = np.argsort(-cosines, kind="stable")[:n]
        return [(self.keys[candidates[i]], float(cosines[i])) for i in order]
