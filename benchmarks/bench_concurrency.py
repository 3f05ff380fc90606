"""Concurrent `nar similar` on new files in one NAR_HOME (issue 30): each round writes `--jobs`
model files nobody has scanned, starts `nar similar FILE` on all of them at once, and counts the
runs that fail. Afterwards the cache's quick check and every index's digest must pass.

    python benchmarks/bench_concurrency.py [--jobs 8] [--rounds 10]

Target: 0 failures over all rounds. Writes benchmarks/results/concurrency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import machine, nar_command

ROOT = Path(__file__).resolve().parent.parent
MODEL = """
from torch import nn


class Net{tag}(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear({inputs}, {hidden}), nn.{act}(), nn.Linear({hidden}, {depth}))

    def forward(self, x):
        return self.body(x)
"""
ACTIVATIONS = ["ReLU", "Tanh", "GELU", "SiLU", "Sigmoid", "ELU", "Mish", "Softplus"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="nar-concurrency-"))
    env = {**os.environ, "NAR_HOME": str(home / "home")}
    failures, runs, seconds = [], 0, []
    for r in range(args.rounds):
        files = []
        for j in range(args.jobs):
            path = home / f"round{r}" / f"model{j}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(MODEL.format(tag=f"{r}x{j}", inputs=8 + r, hidden=16 + 4 * j,
                                         act=ACTIVATIONS[j % len(ACTIVATIONS)], depth=2 + j))
            files.append(path)
        start = time.perf_counter()
        procs = [subprocess.Popen([*nar_command(), "similar", str(f), "-k", "3"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) for f in files]
        for f, p in zip(files, procs):
            _, err = p.communicate(timeout=900)
            runs += 1
            if p.returncode != 0:
                failures.append({"round": r, "file": f.name, "stderr": err.strip()[-400:]})
        seconds.append(time.perf_counter() - start)
        print(f"round {r + 1}/{args.rounds}: {len(failures)} failure(s) so far, {seconds[-1]:.1f} s", flush=True)
    cache = json.loads(subprocess.run([*nar_command(), "cache", "info", "--json"], env=env, capture_output=True,
                                      text=True, check=True).stdout)
    indexes = json.loads(subprocess.run([*nar_command(), "index", "info", "--json"], env=env, capture_output=True,
                                        text=True, check=True).stdout)
    digests = subprocess.run([sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
                              "from narcli.search.index import VectorIndex\n"
                              "for p in sys.argv[1:]: VectorIndex(Path(p)).verify()\nprint('ok')",
                              *[row["path"] for row in indexes]], env=env, capture_output=True, text=True)
    result = {"jobs": args.jobs, "rounds": args.rounds, "runs": runs, "failures": len(failures),
              "failure_samples": failures[:5], "round_seconds": [round(s, 1) for s in seconds],
              "cache_health": cache["health"], "cached_models": cache["models"],
              "index_status": {Path(row["path"]).name: row["status"] for row in indexes},
              "index_digests": digests.stdout.strip() or digests.stderr.strip()[-300:],
              "machine": machine()}
    out = ROOT / "benchmarks" / "results" / "concurrency.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
