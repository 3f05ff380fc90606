"""How much a model's time depends on what its process ran before, with malloc as glibc leaves it and
with the regime every `nar` measuring process now holds (`narcli.bench.allocator`).

    python benchmarks/bench_allocator.py [--threads 1] [--rounds 3] [--out NAME]

Each case is a fresh interpreter pinned to the last CPU: torchvision's mobilenet_v2 at 1x3x224x224
timed (median of 30 runs after 3 warm-up runs), then resnet18 run 5 times, then mobilenet_v2 timed
again; once with malloc untouched and once after `hold_allocator_steady()`. `--rounds` repeats both
cases, alternating. Prints each case's figures and the median ratio of "fresh" to "after resnet18".
Run alone on the machine. Writes benchmarks/results/<out>.json (default allocator.json).
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

CASE = """
import json, sys, time
steady = sys.argv[1] == "steady"
if steady:
    from narcli.bench.allocator import hold_allocator_steady
    regime = hold_allocator_steady()
else:
    regime = "untouched"
import torch
from narcli.trace.compat import ensure_torchvision_importable
ensure_torchvision_importable()
import torchvision
torch.set_num_threads(int(sys.argv[2]))
torch.set_flush_denormal(True)

def median_ms(model, x, runs=30):
    with torch.inference_mode():
        for _ in range(3):
            model(x)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[runs // 2]

x = torch.randn(1, 3, 224, 224)
mobilenet, resnet = torchvision.models.mobilenet_v2().eval(), torchvision.models.resnet18().eval()
fresh = median_ms(mobilenet, x)
median_ms(resnet, x, 5)
print(json.dumps({"regime": regime, "fresh_ms": fresh, "after_resnet18_ms": median_ms(mobilenet, x)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="allocator", help="results file name, under benchmarks/results")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))[-args.threads:]
    cases: dict[str, list[dict]] = {"untouched": [], "steady": []}
    for _ in range(args.rounds):
        for name in cases:
            out = subprocess.run(["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-c", CASE, name,
                                  str(args.threads)], capture_output=True, text=True, check=True)
            cases[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(name, cases[name][-1], flush=True)
    summary = {}
    for name, runs in cases.items():
        ratio = statistics.median(r["fresh_ms"] / r["after_resnet18_ms"] for r in runs)
        summary[name] = {"fresh_ms": statistics.median(r["fresh_ms"] for r in runs),
                         "after_resnet18_ms": statistics.median(r["after_resnet18_ms"] for r in runs),
                         "fresh_over_after": round(ratio, 3), "runs": runs}
        print(f"{name}: fresh {summary[name]['fresh_ms']:.2f} ms, after resnet18 "
              f"{summary[name]['after_resnet18_ms']:.2f} ms, fresh / after {ratio:.3f}")
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    path.write_text(json.dumps({"machine": machine(), "threads": args.threads, "cases": summary}, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
