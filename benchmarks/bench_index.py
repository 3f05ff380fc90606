"""The annoy index: recall against brute-force cosine on the zoo, and scale on synthetic vectors.

    python benchmarks/bench_index.py [--synthetic 1000000] [--trees 32] [--queries 1000] [--jobs -1]

--synthetic 0 times the zoo only and keeps the last synthetic section of index.json.

Zoo: every architecture queries the shipped index; recall@10 of `VectorIndex.query` (annoy, then
exact cosine over its candidates) against brute force. Synthetic: that many random unit vectors of
the encoder's dimension, clustered (so neighbours are meaningful): build time, size on disk, p50/p99
query latency and recall@10. Writes benchmarks/results/index.json. Target: zoo recall@10 >= 0.99.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def recall_at_10(index, vectors: np.ndarray, queries: np.ndarray) -> tuple[float, list[float]]:
    hits, latencies = 0, []
    position = {key: i for i, key in enumerate(index.keys)}
    for q in queries:
        exact = set(np.argpartition(-(vectors @ vectors[q]), 10)[:10].tolist())
        began = time.perf_counter()
        found = index.query(vectors[q], 10)
        latencies.append(time.perf_counter() - began)
        hits += len(exact & {position[key] for key, _ in found})
    return hits / (10 * len(queries)), latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=32)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=-1, help="threads that build the synthetic index (-1: all cores)")
    args = parser.parse_args()

    from narcli.search.index import build_index
    from narcli.search.neighbours import zoo_index

    out: dict = {"machine": machine()}
    index = zoo_index()
    zoo_vectors = np.stack([index.vector(i) for i in range(len(index))])
    recall, latencies = recall_at_10(index, zoo_vectors, np.arange(len(index)))
    out["zoo"] = {"items": len(index), "dim": index.dim, "recall@10": round(recall, 4),
                  "p50_ms": round(1000 * float(np.percentile(latencies, 50)), 3),
                  "p99_ms": round(1000 * float(np.percentile(latencies, 99)), 3)}
    print("zoo", out["zoo"], flush=True)

    if args.synthetic:
        rng = np.random.default_rng(0)
        dim = index.dim
        centres = rng.standard_normal((args.synthetic // 100, dim)).astype(np.float32)
        vectors = centres[rng.integers(0, len(centres), args.synthetic)]
        vectors += 0.5 * rng.standard_normal(vectors.shape).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with tempfile.TemporaryDirectory() as folder:
            began = time.perf_counter()
            big = build_index(Path(folder) / "big.json", [str(i) for i in range(len(vectors))], vectors,
                              trees=args.trees, jobs=args.jobs)
            build_seconds = time.perf_counter() - began
            size = big.path.stat().st_size + big.path.with_name(big.meta["ann"]).stat().st_size
            queries = rng.choice(len(vectors), args.queries, replace=False)
            recall, latencies = recall_at_10(big, vectors, queries)
        out["synthetic"] = {"items": len(vectors), "dim": dim, "trees": args.trees, "jobs": args.jobs,
                            "build_seconds": round(build_seconds, 1), "bytes": size,
                            "recall@10": round(recall, 4), "queries": args.queries,
                            "p50_ms": round(1000 * float(np.percentile(latencies, 50)), 3),
                            "p99_ms": round(1000 * float(np.percentile(latencies, 99)), 3)}
        print("synthetic", out["synthetic"], flush=True)
    else:  # keep the last synthetic run (its own dim and machine are in it) rather than drop it
        previous = RESULTS / "index.json"
        if previous.exists() and "synthetic" in (last := json.loads(previous.read_text())):
            out["synthetic"] = {"machine": last.get("machine"), **last["synthetic"]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "index.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
