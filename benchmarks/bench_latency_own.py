"""Six models written for this check (benchmarks/latency_own: a WideResNet-16-4, a MobileNetV2-style
net, an attention U-Net, a bidirectional GRU text classifier, a TCN and a small ViT with hand-written
attention), after `nar calibrate` on this machine, at one thread and at every core.

    python benchmarks/bench_latency_own.py [--calibrate] [--models 20] [--threads 1,2]

For each thread count T: with `--calibrate`, `nar calibrate --device own-Tt --threads T --models K`
(measurements already stored are reused); then for each model `nar bench FILE --threads T --json`
(measured, with the machine watched: a busy timing is reported, not scored) and `nar predict FILE
--device own-Tt --json` (the calibrated head's value and 90 % interval). Scores: the median error,
how many measured values fall inside the interval, and the interval's half-width. Uses the user's
NAR_HOME (the calibration is what a user would have). Run alone on the machine.
Writes benchmarks/results/latency_own.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
from pathlib import Path

from common import machine, nar_command

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "benchmarks" / "latency_own"
INPUTS = {"wide_resnet.py": ["-i", "1,3,32,32"], "mobile_net.py": ["-i", "1,3,160,160"],
          "attention_unet.py": ["-i", "1,3,128,128"], "gru_classifier.py": ["-i", "1,64", "--input-dtype", "int64"],
          "tcn.py": ["-i", "1,8,512"], "tiny_vit.py": ["-i", "1,3,96,96"]}


def run_json(command: list[str]) -> dict:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--threads", default=f"1,{len(os.sched_getaffinity(0))}")
    args = parser.parse_args()
    nar = nar_command()
    out = {"machine": machine(), "settings": []}
    for threads in dict.fromkeys(int(t) for t in args.threads.split(",")):
        device = f"own-{threads}t"
        if args.calibrate:
            head = run_json([*nar, "calibrate", "--device", device, "--threads", str(threads), "--models",
                             str(args.models), "--json"])
            print(f"calibrated {device}: ±{head['half_width_pct']} %, leave-one-out MAPE {head.get('loo_mape')} %")
        rows = []
        for path in sorted(MODELS.glob("*.py")):
            inputs = INPUTS[path.name]
            for _ in range(4):  # a timing the machine's own check calls busy is taken again
                measured = run_json([*nar, "bench", str(path), *inputs, "--threads", str(threads), "--json"])
                if not measured["busy"]:
                    break
            found = run_json([*nar, "predict", str(path), *inputs, "--device", device, "--json"])
            row = next(r for r in found["results"][0]["predictions"] if r["head"] == "device")
            truth = measured["median_ms"]
            item = {"model": path.name, "measured_ms": round(truth, 3), "busy": measured["busy"],
                    "status": row["status"], "predicted_ms": row["value"], "low_ms": row["low"], "high_ms": row["high"]}
            if row["value"]:
                item["error_pct"] = round((row["value"] - truth) / truth * 100, 1)
                item["inside"] = row["low"] <= truth <= row["high"]
                item["half_width_pct"] = round((row["high"] / row["value"] - 1) * 100, 1)
            rows.append(item)
            print(json.dumps(item))
        scored = [r for r in rows if "error_pct" in r and not r["busy"]]
        summary = {"threads": threads, "device": device, "models": rows, "scored": len(scored),
                   "median_abs_error_pct": round(statistics.median(abs(r["error_pct"]) for r in scored), 1)
                   if scored else None,
                   "inside": sum(r["inside"] for r in scored),
                   "half_width_pct": max((r["half_width_pct"] for r in scored), default=None)}
        print(json.dumps({k: v for k, v in summary.items() if k != "models"}))
        out["settings"].append(summary)
    path = ROOT / "benchmarks" / "results" / "latency_own.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
