"""Nearest-neighbour indexes: annoy over a short search vector, re-ranked by cosine on the full one.

Search vectors are the unit embeddings centred and projected on their first `SEARCH_DIM` principal
axes (euclidean there ranks like cosine in full); annoy finds a few hundred candidates among them
and the full vectors order those. At a million 1024-d architectures this keeps the annoy file at
0.66 GB and a query under a millisecond, where annoy over the full vectors took 3.5 GB and 6.8 ms.

An index is three files: `<name>.json` (keys, dimension, what it was built from) and the two files
it names, `<name>-<digest>.ann` (annoy) and `<name>-<digest>.vec` (the projection, then the full
vectors: float32 when small; when large, each row as its search vector (float16) plus the rest
of it in int8 with a scale per row, which fits a million 1024-d rows in 1.2 GB where float16 needs
2 GB, and moves a cosine by ~4e-4, half what int8 of the whole row does: among a million
near-copies the 10th and 11th neighbours are ~1e-4 apart). A build writes both under new names,
then replaces the JSON in one
rename, then removes the old pair, so a crash at any point leaves either the old index or the new
one, never a mix. Reads check both files' sizes and the annoy file's digest against the JSON.

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
import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import NarError, storage_trouble, trouble_phrase
from narcli.fsutil import fresh_file, open_lock_file

SEARCH_FACTOR = 2  # nodes inspected per query, in multiples of annoy's default (trees x candidates)
CANDIDATES = 150  # re-ranked per query at least: a tight family (or a DARTS neighbourhood) fits in it
SEARCH_DIM = 64  # length of the vectors annoy searches
FLOAT_ROWS_MAX_BYTES = 256 << 20  # full vectors kept as float32 up to this size (~65,000 at 1024-d)
DEFAULT_TREES = 32
# above this many items, half the trees: the annoy file shrinks by a third (a million: 0.66 -> 0.47 GB)
# and a query inspects half the nodes, while candidates (not trees) keep recall
LARGE_INDEX_ITEMS, LARGE_INDEX_TREES = 200_000, 16
FORMAT = 2


class IndexError_(NarError):  # noqa: N801 (IndexError is a builtin)
    """An index file that is missing, stale or damaged."""


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
    try:  # never through a symlink planted at its name (UnsafePathError)
        fd = open_lock_file(folder / name, create=exclusive)
    except OSError:  # no build has run here yet, or a read-only folder (where none can)
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def _projection(vectors: np.ndarray, search_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, dim x search_dim axes): the principal axes of `vectors`, from a covariance summed in
    blocks so a million rows never need a second copy."""
    dim = vectors.shape[1]
    if dim <= search_dim or len(vectors) < 2:
        return np.zeros(dim, np.float32), np.eye(dim, min(dim, search_dim), dtype=np.float32)
    mean = vectors.mean(axis=0, dtype=np.float64)
    covariance = np.zeros((dim, dim), np.float64)
    for start in range(0, len(vectors), 65536):
        block = vectors[start:start + 65536] - mean
        covariance += block.T.astype(np.float64) @ block
    _, axes = np.linalg.eigh(covariance)  # ascending eigenvalues: the last columns lead
    return mean.astype(np.float32), np.ascontiguousarray(axes[:, ::-1][:, :search_dim], dtype=np.float32)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _write_vectors(path: Path, vectors: np.ndarray, mean: np.ndarray, axes: np.ndarray) -> str:
    """The .vec file: mean, axes, then the full rows: float32, or (when large) the float16 search
    vectors, the residual rows in int8 and a float32 scale per row."""
    rows_dtype = "float32" if vectors.nbytes <= FLOAT_ROWS_MAX_BYTES else "int8"
    with fresh_file(path) as handle:
        handle.write(mean.astype(np.float32).tobytes())
        handle.write(axes.astype(np.float32).tobytes())
        if rows_dtype == "float32":
            handle.write(vectors.astype(np.float32).tobytes())
            return rows_dtype
        blocks = range(0, len(vectors), 65536)
        for start in blocks:
            handle.write(((vectors[start:start + 65536] - mean) @ axes).astype(np.float16).tobytes())
        scales = []
        for start in blocks:
            block = vectors[start:start + 65536]
            search = ((block - mean) @ axes).astype(np.float16).astype(np.float32)
            residual = block - mean - search @ axes.T
            scale = np.maximum(np.abs(residual).max(axis=1), 1e-12) / 127.0
            handle.write(np.rint(residual / scale[:, None]).astype(np.int8).tobytes())
            scales.append(scale.astype(np.float32))
        handle.write(np.concatenate(scales).tobytes() if scales else b"")
    return rows_dtype


def build_index(path: Path, keys: list[str], vectors: np.ndarray, meta: dict[str, Any] | None = None,
                trees: int | None = None, seed: int = 0, jobs: int = 1,
                search_dim: int = SEARCH_DIM) -> VectorIndex:
    """Write an index of `vectors` (one row per key) at `path` (the .json); atomic, see above.

    `trees` defaults by size (DEFAULT_TREES, LARGE_INDEX_TREES); `jobs` threads build them (-1:
    every core); one thread keeps a build reproducible.
    """
    if trees is None:
        trees = DEFAULT_TREES if len(keys) <= LARGE_INDEX_ITEMS else LARGE_INDEX_TREES
    from annoy import AnnoyIndex

    vectors = np.asarray(vectors, dtype=np.float32)
    if len(keys) != len(vectors):
        raise ValueError(f"{len(keys)} keys for {len(vectors)} vectors")
    dim = int(vectors.shape[1]) if vectors.ndim == 2 and len(vectors) else int((meta or {}).get("dim", 1))
    vectors = _unit(vectors.reshape(len(keys), dim))
    path = Path(path)
    if path.parent.exists() and not path.parent.is_dir():
        raise IndexError_(f"{path.parent} is a file, not a directory; remove it or point NAR_HOME elsewhere")
    tmp_ann = path.with_name(f"{path.stem}.{os.getpid()}.ann.tmp")
    tmp_vec = path.with_name(f"{path.stem}.{os.getpid()}.vec.tmp")
    tmp_json = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        mean, axes = _projection(vectors, search_dim)
        annoy = AnnoyIndex(axes.shape[1], "euclidean")
        annoy.set_seed(seed)
        for start in range(0, len(vectors), 65536):
            for i, row in enumerate((vectors[start:start + 65536] - mean) @ axes, start):
                annoy.add_item(i, row)
        annoy.build(trees, n_jobs=jobs)
        annoy.save(str(tmp_ann))
        annoy.unload()
        rows_dtype = _write_vectors(tmp_vec, vectors, mean, axes)
        digest = _file_digest(tmp_ann)
        ann, vec = path.with_name(f"{path.stem}-{digest}.ann"), path.with_name(f"{path.stem}-{digest}.vec")
        record = {"format": FORMAT, "ann": ann.name, "ann_bytes": tmp_ann.stat().st_size, "ann_digest": digest,
                  "vec": vec.name, "vec_bytes": tmp_vec.stat().st_size, "rows_dtype": rows_dtype,
                  "dim": dim, "search_dim": int(axes.shape[1]), "items": len(keys), "trees": trees,
                  "metric": "cosine", "keys": list(keys), **(meta or {})}
        with fresh_file(tmp_json) as handle:
            handle.write(json.dumps(record).encode())
        # Every rename in and every removal happens under the exclusive lock: two builds of the same
        # entries name the same files, and one must not remove them after the other has put them back.
        with folder_lock(path.parent, exclusive=True):
            tmp_ann.replace(ann)
            tmp_vec.replace(vec)
            old = _previous_files(path)  # read under the lock: a concurrent build may have swapped it
            tmp_json.replace(path)
            for file in old:
                if file not in (ann, vec):
                    file.unlink(missing_ok=True)
    except OSError as exc:  # read-only or full: leave nothing half-written, and say which
        for tmp in (tmp_ann, tmp_vec, tmp_json):
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
        _unwritable(exc, path)
    return VectorIndex(path)


def _unwritable(exc: OSError, path: Path) -> None:
    """Raise the one-line error for an index that cannot be written (read-only, full); re-raise
    any other OSError as it was."""
    trouble = storage_trouble(exc, path.parent)
    if trouble is None:
        raise exc
    raise IndexError_(f"cannot write the index {path}: {trouble_phrase(trouble)}") from None


def check_writable(path: Path) -> None:
    """Fail at once where the index at `path` could not be written, with `build_index`'s error:
    a caller with minutes of work before the build (the novelty calibration) says so first."""
    import tempfile

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.stem}.probe-"):
            pass
    except OSError as exc:
        _unwritable(exc, path)


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


def _previous_files(path: Path) -> list[Path]:
    try:
        record = json.loads(path.read_text())
        return [path.with_name(record[kind]) for kind in ("ann", "vec") if kind in record]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


class VectorIndex:
    """A built index: `query` returns (key, cosine) pairs, best first."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fds: dict[str, int] = {}
        try:
            if not self.path.parent.is_dir():
                raise FileNotFoundError(self.path)
            for attempt in range(3):
                with folder_lock(self.path.parent, exclusive=False) as locked:  # JSON and its files: one generation
                    self.meta: dict[str, Any] = json.loads(self.path.read_text())
                    if self.meta.get("format") != FORMAT:
                        raise IndexError_(f"index {self.path} was written by another version of nar; "
                                          "rebuild it with `nar index build`")
                    try:
                        self._open_files()
                        break
                    except FileNotFoundError as exc:
                        self.close()
                        if locked or attempt == 2:  # no build could have swapped them: they are gone
                            raise IndexError_(f"index {self.path} is damaged or incomplete "
                                              f"(no {Path(exc.filename or '').name})") from None
                        # unlocked (the first build in this folder is making the lock): read again
            sizes_ok = all(os.fstat(self._fds[kind]).st_size == self.meta[f"{kind}_bytes"] for kind in ("ann", "vec"))
        except FileNotFoundError:
            raise IndexError_(f"index {self.path} is missing") from None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            self.close()
            raise IndexError_(f"index {self.path} is damaged ({exc})") from None
        except IndexError_:
            self.close()
            raise
        if not sizes_ok:
            self.close()
            raise IndexError_(f"index {self.path} is damaged or incomplete")
        self.keys: list[str] = self.meta["keys"]
        self.dim: int = self.meta["dim"]
        self._annoy: Any = None
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray, tuple | None] | None = None
        self._positions: dict[str, int] | None = None

    def _open_files(self) -> None:
        for kind in ("ann", "vec"):
            self._fds[kind] = os.open(self.path.with_name(self.meta[kind]), os.O_RDONLY)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def __del__(self) -> None:
        try:
            self.close()
        except (OSError, AttributeError):
            pass

    def _open_path(self, kind: str) -> str:
        """A path to the very file this index opened: through the descriptor where /proc shows it
        (a build may have removed the name since), else the name."""
        fd_path = f"/proc/self/fd/{self._fds.get(kind)}"
        return fd_path if kind in self._fds and os.path.exists(fd_path) else str(self.path.with_name(self.meta[kind]))

    def verify(self) -> None:
        """Check the annoy file's digest (reads the whole file; the .vec file is only ever read as
        numbers, so its size, checked on opening, is what matters)."""
        fd = self._fds.get("ann")
        digest = _file_digest(fd) if fd is not None else _file_digest(self.path.with_name(self.meta["ann"]))
        if digest != self.meta["ann_digest"]:
            raise IndexError_(f"index {self.path.with_name(self.meta['ann'])} is damaged (digest mismatch)")

    def _load(self) -> Any:
        if self._annoy is None:
            from annoy import AnnoyIndex

            self.verify()  # annoy trusts its file blindly: a damaged one could crash the process
            annoy = AnnoyIndex(self.meta["search_dim"], "euclidean")
            annoy.load(self._open_path("ann"))  # memory-mapped: the mapping outlives the name
            self._annoy = annoy
        return self._annoy

    def _vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple | None]:
        """(mean, axes, rows, None) mapped from the .vec file, read on first use; for int8 rows,
        (mean, axes, residuals, (search vectors, scales))."""
        if self._arrays is None:
            dim, search_dim, items = self.dim, self.meta["search_dim"], len(self.keys)
            fd = self._fds.get("vec")
            if fd is None:
                fd = os.open(self.path.with_name(self.meta["vec"]), os.O_RDONLY)
                self._fds["vec"] = fd
            size = self.meta["vec_bytes"]
            data = mmap.mmap(fd, size, prot=mmap.PROT_READ) if size else b""
            mean = np.frombuffer(data, np.float32, dim, 0)
            axes = np.frombuffer(data, np.float32, dim * search_dim, 4 * dim).reshape(dim, search_dim)
            offset = 4 * dim * (1 + search_dim)
            if self.meta["rows_dtype"] == "float32":
                self._arrays = (mean, axes, np.frombuffer(data, np.float32, items * dim, offset).reshape(items, dim), None)
            else:
                search = np.frombuffer(data, np.float16, items * search_dim, offset).reshape(items, search_dim)
                offset += 2 * items * search_dim
                residual = np.frombuffer(data, np.int8, items * dim, offset).reshape(items, dim)
                scales = np.frombuffer(data, np.float32, items, offset + items * dim)
                self._arrays = (mean, axes, residual, (search, scales))
        return self._arrays

    def __len__(self) -> int:
        return len(self.keys)

    def vectors(self, positions: Any) -> np.ndarray:
        """The full unit vectors at `positions` (float32; int8 rows rebuilt from their parts)."""
        mean, axes, rows, parts = self._vectors()
        positions = np.asarray(positions, dtype=np.int64)
        if parts is None:
            return rows[positions].astype(np.float32)
        search, scales = parts
        return (mean + search[positions].astype(np.float32) @ axes.T
                + rows[positions].astype(np.float32) * scales[positions, None])

    def _cosines(self, positions: np.ndarray, unit: np.ndarray) -> np.ndarray:
        """Cosines of the stored (unit) vectors at `positions` with the unit `unit`: for int8 rows,
        summed part by part (mean, search vector, residual), never rebuilding the rows."""
        mean, axes, rows, parts = self._vectors()
        if not len(positions):
            return np.zeros(0, np.float32)
        if parts is None:
            return rows[positions] @ unit
        search, scales = parts
        return (float(mean @ unit) + search[positions].astype(np.float32) @ (unit @ axes)
                + (rows[positions] @ unit) * scales[positions])

    def vector(self, position: int) -> np.ndarray:
        return self.vectors([position])[0]

    def position(self, key: str) -> int | None:
        """Where `key` is stored, or None."""
        if self._positions is None:
            self._positions = {k: i for i, k in enumerate(self.keys)}
        return self._positions.get(key)

    def query(self, vector: np.ndarray, n: int, search_k: int = -1) -> list[tuple[str, float]]:
        """The `n` nearest keys by cosine on the full vectors among annoy's candidates, which it
        finds on the short search vectors (several times `n`, and never fewer than CANDIDATES)."""
        if n <= 0 or not self.keys:
            return []
        vector = np.asarray(vector, dtype=np.float32)
        if vector.shape != (self.dim,):
            raise IndexError_(f"index {self.path} holds {self.dim}-d vectors, the query is {vector.shape[0]}-d; "
                              "rebuild it with `nar index build`")
        annoy = self._load()
        mean, axes, _, _ = self._vectors()
        unit = _unit(vector)
        wanted = min(len(self.keys), max(n * 4, CANDIDATES))
        if search_k <= 0:
            # 2x annoy's default reaches recall@10 0.99+ on the zoo and 0.98 on a million clustered
            # vectors at p99 ~0.9 ms (benchmarks/bench_index.py)
            search_k = SEARCH_FACTOR * int(self.meta.get("trees", DEFAULT_TREES)) * wanted
        candidates = np.asarray(annoy.get_nns_by_vector((unit - mean) @ axes, wanted, search_k=search_k), np.int64)
        cosines = self._cosines(candidates, unit)
        order = np.argsort(-cosines, kind="stable")[:n]
        return [(self.keys[candidates[i]], float(cosines[i])) for i in order]
