"""Does timing more runs make `nar bench` repeat itself better? Interleaved, so drift hits both.

    python benchmarks/bench_repeat_length.py [--model resnet18] [--rounds 6] [--repeats 20,100]

Run it alone on the machine. For each thread setting (all cores, one thread), `--rounds` rounds of
`nar bench MODEL --json --repeat R` for each R in `--repeats`, one after another within a round.
Reported per R: the medians, the CV of each consecutive triple (issue 46's "three runs in a row")
and the CV of all rounds. Writes benchmarks/results/repeat-length.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent


def cv(values: list[float]) -> float:
    return round(statistics.stdev(values) / statistics.mean(values) * 100, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--repeats", default="20,100")
    args = parser.parse_args()
    repeats = [int(r) for r in args.repeats.split(",")]
    out = {"model": args.model, "machine": machine(), "settings": []}
    for threads in (len(os.sched_getaffinity(0)), 1):
        rows: dict[int, list[dict]] = {r: [] for r in repeats}
        for _ in range(args.rounds):
            for repeat in repeats:
                done = subprocess.run([sys.executable, "-m", "narcli", "bench", args.model, "--json", "--threads",
                                       str(threads), "--repeat", str(repeat)], capture_output=True, text=True, check=True)
                result = json.loads(done.stdout)
                rows[repeat].append({"median_ms": round(result["median_ms"], 3), "busy": result["quiet"]["busy"]})
                print(threads, repeat, rows[repeat][-1], flush=True)
        for repeat, values in rows.items():
            medians = [v["median_ms"] for v in values]
            setting = {"threads": threads, "repeat": repeat, "medians_ms": medians,
                       "busy": [v["busy"] for v in values],
                       "cv_of_triples_pct": [cv(medians[i:i + 3]) for i in range(0, len(medians) - 2, 3)],
                       "cv_of_all_pct": cv(medians)}
            out["settings"].append(setting)
            print(json.dumps(setting), flush=True)
    target = ROOT / "benchmarks" / "results" / "repeat-length.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
