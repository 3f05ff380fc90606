"""The index: recall against brute-force cosine on the zoo, and a million architectures.

    python benchmarks/bench_index.py [--synthetic 1000000] [--kind clustered|zoo-like] [--trees 32]
                                     [--queries 1000] [--jobs -1]

--synthetic 0 times the zoo only and keeps the last synthetic sections of index.json.

Zoo: every architecture queries the shipped index; recall@10 of `VectorIndex.query` against brute
force. Synthetic, at the encoder's dimension: `clustered` is unit vectors around n/100 random
centres (isotropic, the hard case for a short search vector: the top 10 inside a cluster is decided
by noise in every dimension); `zoo-like` is the bundled zoo's vectors plus noise shaped like the
zoo's own spread (its low intrinsic dimension). For each: build time, bytes on disk, and, from a
fresh process that opens the index and answers the queries, p50/p99 latency, recall@10 and that
process's peak resident memory. Writes benchmarks/results/index.json.
Targets: zoo recall@10 >= 0.99; 1M: p99 <= 2 ms, recall@10 >= 0.95, memory <= 2 GB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def serve(folder: Path) -> None:
    """In a fresh process: open the index, answer the saved queries, print what it measured."""
    from narcli.search.index import VectorIndex

    queries = np.load(folder / "queries.npy")
    exact = np.load(folder / "exact.npy")
    began = time.perf_counter()
    index = VectorIndex(folder / "big.json")
    index.query(queries[0], 10)  # loads and verifies the files
    open_seconds = time.perf_counter() - began
    position = {key: i for i, key in enumerate(index.keys)}
    hits, latencies = 0, []
    for query, truth in zip(queries, exact):
        began = time.perf_counter()
        found = index.query(query, 10)
        latencies.append(time.perf_counter() - began)
        hits += len(set(truth.tolist()) & {position[key] for key, _ in found})
    peak = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps({"open_seconds": round(open_seconds, 2), "recall@10": round(hits / (10 * len(queries)), 4),
                      "p50_ms": round(1000 * float(np.percentile(latencies, 50)), 3),
                      "p99_ms": round(1000 * float(np.percentile(latencies, 99)), 3),
                      "peak_rss_bytes": peak}))


def exact_top10(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Brute-force top 10 by cosine (rows are unit), in blocks of rows."""
    best_scores = np.full((len(queries), 10), -np.inf, np.float32)
    best_ids = np.zeros((len(queries), 10), np.int64)
    for start in range(0, len(vectors), 100_000):
        scores = queries @ vectors[start:start + 100_000].T
        ids = np.argpartition(-scores, 10, axis=1)[:, :10]
        merged_scores = np.concatenate([best_scores, np.take_along_axis(scores, ids, 1)], axis=1)
        merged_ids = np.concatenate([best_ids, ids + start], axis=1)
        keep = np.argsort(-merged_scores, axis=1)[:, :10]
        best_scores = np.take_along_axis(merged_scores, keep, 1)
        best_ids = np.take_along_axis(merged_ids, keep, 1)
    return best_ids


def synthetic_vectors(kind: str, count: int, zoo_vectors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    dim = zoo_vectors.shape[1]
    if kind == "clustered":
        centres = rng.standard_normal((count // 100, dim)).astype(np.float32)
        vectors = centres[rng.integers(0, len(centres), count)]
        vectors += 0.5 * rng.standard_normal(vectors.shape).astype(np.float32)
    else:  # zoo-like: each a zoo architecture moved by noise with the zoo's covariance, a fifth of its spread
        centred = zoo_vectors - zoo_vectors.mean(axis=0)
        _, singular, axes = np.linalg.svd(centred, full_matrices=False)
        spread = (singular / np.sqrt(len(zoo_vectors)))[:, None] * axes  # rows: principal directions
        vectors = zoo_vectors[rng.integers(0, len(zoo_vectors), count)].copy()
        for start in range(0, count, 100_000):
            block = vectors[start:start + 100_000]
            block += 0.2 * (rng.standard_normal((len(block), len(spread))).astype(np.float32) @ spread)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def synthetic(kind: str, count: int, zoo_vectors: np.ndarray, args: argparse.Namespace) -> dict:
    from narcli.search.index import build_index

    rng = np.random.default_rng(0)
    vectors = synthetic_vectors(kind, count, zoo_vectors, rng)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        began = time.perf_counter()
        big = build_index(folder / "big.json", [str(i) for i in range(len(vectors))], vectors,
                          trees=args.trees, jobs=args.jobs)
        build_seconds = time.perf_counter() - began
        files = {name: (folder / big.meta[name]).stat().st_size for name in ("ann", "vec")}
        files["json"] = big.path.stat().st_size
        meta = {k: big.meta[k] for k in ("dim", "search_dim", "trees", "rows_dtype")}
        del big
        queries = vectors[rng.choice(len(vectors), args.queries, replace=False)]
        np.save(folder / "queries.npy", queries)
        np.save(folder / "exact.npy", exact_top10(vectors, queries))
        del vectors
        served = subprocess.run([sys.executable, __file__, "--serve", str(folder)], capture_output=True, text=True,
                                check=True)
    measured = json.loads(served.stdout.strip().splitlines()[-1])
    return {"kind": kind, "items": count, **meta, "jobs": args.jobs, "build_seconds": round(build_seconds, 1),
            "bytes": sum(files.values()), "files": files, "queries": args.queries, **measured}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=1_000_000)
    parser.add_argument("--kind", action="append", choices=["clustered", "zoo-like"],
                        help="synthetic distribution(s) (default: both)")
    parser.add_argument("--trees", type=int, default=None, help="annoy trees (default: the index's own choice by size)")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=-1, help="threads that build the synthetic index (-1: all cores)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return

    from narcli.search.neighbours import zoo_index

    previous = json.loads((RESULTS / "index.json").read_text()) if (RESULTS / "index.json").exists() else {}
    out: dict = {"machine": machine()}
    index = zoo_index()
    zoo_vectors = index.vectors(np.arange(len(index)))
    exact = exact_top10(zoo_vectors, zoo_vectors)
    hits, latencies = 0, []
    for q, truth in enumerate(exact):
        began = time.perf_counter()
        found = index.query(zoo_vectors[q], 10)
        latencies.append(time.perf_counter() - began)
        hits += len(set(truth.tolist()) & {index.keys.index(key) for key, _ in found})
    out["zoo"] = {"items": len(index), "dim": index.dim, "search_dim": index.meta["search_dim"],
                  "recall@10": round(hits / (10 * len(index)), 4),
                  "p50_ms": round(1000 * float(np.percentile(latencies, 50)), 3),
                  "p99_ms": round(1000 * float(np.percentile(latencies, 99)), 3)}
    print("zoo", out["zoo"], flush=True)

    out["synthetic"] = {}
    for kind in (args.kind or ["clustered", "zoo-like"]) if args.synthetic else []:
        out["synthetic"][kind] = synthetic(kind, args.synthetic, zoo_vectors, args)
        print(kind, out["synthetic"][kind], flush=True)
    for kind, last in (previous.get("synthetic") or {}).items():  # keep runs not repeated, with their machine
        if kind not in out["synthetic"] and isinstance(last, dict) and "kind" in last:
            out["synthetic"][kind] = {"machine": previous.get("machine"), **last}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "index.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
