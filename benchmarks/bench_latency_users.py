"""Six user-written models (issue 33's check: CIFAR ResNet, U-Net, LSTM forecaster, GRU seq2seq,
DiT, KAN) through `nar predict`: each must get a reference-CPU latency with an interval. With
`--measure`, each is also measured with `nar bench --threads 1` (the reference protocol's thread
count) and the prediction is scored against it.

    python benchmarks/bench_latency_users.py [--measure]
    python benchmarks/bench_latency_users.py --calibrated [--threads 1,2]

Writes benchmarks/results/latency_users.json. With `--calibrated`, the calibrated heads instead, as
`bench_latency_own.py` scores its six: for each thread count T, `nar bench FILE --threads T` against
`nar predict FILE --device own-Tt`, the devices `bench_latency_own.py --calibrate` fitted in the same
NAR_HOME (run that first); writes benchmarks/results/latency_users_calibrated.json. These six were
written outside the team (issue 33), so they check choices made for user-written models without
touching the six that `bench_latency_own.py` reports. Run alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

from common import machine, nar_command, score_device

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "benchmarks" / "latency_users"
# the inputs each model is called with, as its author would pass them
INPUTS = {"cifar_resnet.py": ["-i", "1,3,32,32"], "unet.py": ["-i", "1,1,256,256"], "lstm_forecaster.py": ["-i", "1,96,7"],
          "gru_seq2seq.py": ["-i", "1,40", "-i", "1,40", "--input-dtype", "int64", "--input-dtype", "int64"],
          "dit.py": ["-i", "1,4,32,32", "-i", "1", "-i", "1", "--input-dtype", "float32", "--input-dtype", "int64",
                     "--input-dtype", "int64"],
          "kan.py": ["-i", "1,1,28,28"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", action="store_true")
    parser.add_argument("--calibrated", action="store_true")
    parser.add_argument("--threads", default=f"1,{len(os.sched_getaffinity(0))}")
    args = parser.parse_args()
    nar = nar_command()
    if args.calibrated:
        models = {path: INPUTS.get(path.name, []) for path in sorted(MODELS.glob("*.py"))}
        settings = [score_device(nar, models, threads, f"own-{threads}t")
                    for threads in dict.fromkeys(int(t) for t in args.threads.split(","))]
        path = ROOT / "benchmarks" / "results" / "latency_users_calibrated.json"
        path.write_text(json.dumps({"machine": machine(), "settings": settings}, indent=2) + "\n")
        print(f"wrote {path}")
        return
    rows = []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "NAR_HOME": home}
        for path in sorted(MODELS.glob("*.py")):
            out = subprocess.run([*nar, "predict", str(path), *INPUTS.get(path.name, []), "--json"], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                rows.append({"model": path.name, "error": out.stderr.strip()[-300:]})
                continue
            found = json.loads(out.stdout)["results"][0]["predictions"]
            ref = next(r for r in found if r["head"] == "reference")
            row = {"model": path.name, "status": ref["status"], "reason": ref["reason"], "predicted_ms": ref["value"],
                   "low_ms": ref["low"], "high_ms": ref["high"]}
            if args.measure:
                bench = subprocess.run([*nar, "bench", str(path), *INPUTS.get(path.name, []), "--threads", "1", "--repeat", "10",
                                        "--json"],
                                       env=env, capture_output=True, text=True)
                if bench.returncode == 0:
                    measured = json.loads(bench.stdout)["median_ms"]
                    row["measured_ms"] = measured
                    if ref["value"]:
                        row["error_pct"] = round((ref["value"] - measured) / measured * 100, 1)
                        row["inside_interval"] = ref["low"] <= measured <= ref["high"]
            rows.append(row)
            print(json.dumps(row))
    answered = sum(r.get("status") == "ok" for r in rows)
    print(f"{answered} of {len(rows)} models got a reference-CPU latency with an interval")
    path = ROOT / "benchmarks" / "results" / "latency_users.json"
    path.write_text(json.dumps({"models": rows, "answered": answered, "machine": machine()}, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
