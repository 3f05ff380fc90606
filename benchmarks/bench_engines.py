"""The local pool against the Ray engine: one DARTS build of N cells with each, in one run.

    python benchmarks/bench_engines.py [--cells 2000] [--jobs 2] [--check 40] [--embed]

Runs `nar zoo build --source darts --limit N --jobs J` into two fresh databases, first with the
local pool, then with `--engine ray` (which starts a local Ray with J CPUs: its start-up is in the
time), after a short warm-up build that is thrown away (imports and the page cache warm for both).
Compares every model's graph hash (and the first `--check` on their own), and records wall times,
their ratio, the per-model cost and the SQLite writer's share. `--embed` also times `nar zoo embed`
of the local database here and on one Ray encoder actor. Writes benchmarks/results/engines.json.
Target: Ray <= 1.15 x the local pool's time at the same parallelism; identical hashes.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from common import machine, nar_command

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def build(db: Path, cells: int, jobs: int, engine: str, env: dict[str, str]) -> float:
    cmd = [*nar_command(), "zoo", "build", "--source", "darts", "--limit", str(cells), "--jobs", str(jobs),
           "--engine", engine, "--db", str(db)]
    began = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - began


def hashes(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("select id, coalesce(graph_hash, 'failed: ' || reason) from models"))


def writer_seconds(db: Path) -> float:
    """What the driver's writes cost: the models re-stored into a copy, one commit each, as a build does."""
    from narcli.zoo.writer import ZooWriter

    with sqlite3.connect(db) as conn:
        rows = [dict(zip([d[0] for d in conn.execute("select * from models limit 0").description], row))
                for row in conn.execute("select * from models")]
        graphs = dict(conn.execute("select hash, data from graphs"))
    import zlib

    with tempfile.TemporaryDirectory() as tmp:
        writer = ZooWriter(Path(tmp) / "w.db")
        began = time.perf_counter()
        for row in rows:
            blob = graphs.get(row["graph_hash"])
            writer.store(row, zlib.decompress(blob).decode() if blob else None)
        seconds = time.perf_counter() - began
        writer.close()
    return seconds


def embed(db: Path, engine: str, env: dict[str, str]) -> float:
    cmd = [*nar_command(), "zoo", "embed", "--db", str(db), "--engine", engine, "--force", "--json"]
    began = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--check", type=int, default=40)
    parser.add_argument("--embed", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = dict(os.environ, NAR_HOME=str(folder / "home"))
        build(folder / "warm.db", 20, args.jobs, "local", env)
        local_seconds = build(folder / "local.db", args.cells, args.jobs, "local", env)
        print(f"local pool: {local_seconds:.1f} s", flush=True)
        ray_seconds = build(folder / "ray.db", args.cells, args.jobs, "ray", env)
        print(f"ray:        {ray_seconds:.1f} s", flush=True)
        local, on_ray = hashes(folder / "local.db"), hashes(folder / "ray.db")
        first = sorted(local)[:args.check]
        out = {"machine": machine(), "source": "darts", "cells": args.cells, "jobs": args.jobs,
               "local_seconds": round(local_seconds, 1), "ray_seconds": round(ray_seconds, 1),
               "ray_over_local": round(ray_seconds / local_seconds, 3),
               "identical_hashes": local == on_ray, f"identical_first_{args.check}": all(
                   local[k] == on_ray.get(k) for k in first),
               "models": len(local), "failed": sum(v.startswith("failed") for v in local.values()),
               "architectures": len({v for v in local.values() if not v.startswith("failed")}),
               "seconds_per_cell_per_worker": round(local_seconds * args.jobs / max(1, len(local)), 4),
               "writer_seconds": round(writer_seconds(folder / "local.db"), 2)}
        out["writer_ms_per_model"] = round(1000 * out["writer_seconds"] / max(1, len(local)), 3)
        if args.embed:
            out["embed_local_seconds"] = round(embed(folder / "local.db", "local", env), 1)
            out["embed_ray_seconds"] = round(embed(folder / "local.db", "ray", env), 1)
    print(json.dumps(out, indent=2))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "engines.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
