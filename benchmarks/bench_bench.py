"""`nar bench` repeatability and overhead (issue 21): five invocations of `nar bench resnet50`
(fresh processes, nothing reused), the coefficient of variation of their medians, and each
invocation's wall time minus its warm-up and timed runs (what `nar bench` adds: starting Python,
importing torch, building the model, the memory check, storing).

    python benchmarks/bench_bench.py [--model resnet50] [--repeat 20]

Targets: CV <= 5 %; overhead <= 1 s. Writes benchmarks/results/bench_cli.json. Run it on an idle
machine: other work on the two cores shows up as variation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from common import machine, nar_command

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = []
    for _ in range(args.runs):
        began = time.perf_counter()
        done = subprocess.run(nar_command() + ["bench", args.model, "--repeat", str(args.repeat), "--json"],
                              capture_output=True, text=True, check=True, env=dict(os.environ))
        wall = time.perf_counter() - began
        result = json.loads(done.stdout)
        measured = (sum(result["times_ms"]) + result["warmup_ms"]) / 1000
        runs.append({"median_ms": result["median_ms"], "iqr_ms": result["iqr_ms"], "wall_s": round(wall, 3),
                     "measuring_s": round(measured, 3), "overhead_s": round(wall - measured, 3),
                     "threads": result["device"]["threads"]})
        print(runs[-1], flush=True)
    medians = [r["median_ms"] for r in runs]
    summary = {"model": args.model, "repeat": args.repeat, "runs": runs,
               "cv_percent": round(statistics.stdev(medians) / statistics.mean(medians) * 100, 2),
               "overhead_median_s": round(statistics.median(r["overhead_s"] for r in runs), 3),
               "machine": machine()}
    out = ROOT / "benchmarks" / "results" / "bench_cli.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
