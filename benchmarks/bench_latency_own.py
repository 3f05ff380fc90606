"""Six models written for this check (benchmarks/latency_own: a WideResNet-16-4, a MobileNetV2-style
net, an attention U-Net, a bidirectional GRU text classifier, a TCN and a small ViT with hand-written
attention), after `nar calibrate` on this machine, at one thread and at every core.

    python benchmarks/bench_latency_own.py [--calibrate [--fresh]] [--models 20] [--threads 1,2] [--budget S] [--out NAME]

For each thread count T: with `--calibrate`, `nar calibrate --device own-Tt --threads T --models K`
(measurements already stored are reused; with `--fresh` every calibration model is timed again, so
the calibration and the six models are timed in one sitting: this VM's speed moves between days); then for each model `nar bench FILE --threads T --json`
(measured, with the machine watched: a busy timing is reported, not scored) and `nar predict FILE
--device own-Tt --json` (the calibrated head's value and 90 % interval). Scores: the median error,
how many measured values fall inside the interval, and the interval's half-width. Uses the user's
NAR_HOME (the calibration is what a user would have). Run alone on the machine.
Writes benchmarks/results/<out>.json (default latency_own.json).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from common import machine, nar_command, run_json, score_device

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "benchmarks" / "latency_own"
INPUTS = {"wide_resnet.py": ["-i", "1,3,32,32"], "mobile_net.py": ["-i", "1,3,160,160"],
          "attention_unet.py": ["-i", "1,3,128,128"], "gru_classifier.py": ["-i", "1,64", "--input-dtype", "int64"],
          "tcn.py": ["-i", "1,8,512"], "tiny_vit.py": ["-i", "1,3,96,96"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--fresh", action="store_true", help="with --calibrate: `nar calibrate --fresh`")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--threads", default=f"1,{len(os.sched_getaffinity(0))}")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds for each `nar calibrate` (its --budget; default: its own)")
    parser.add_argument("--out", default="latency_own", help="results file name, under benchmarks/results")
    args = parser.parse_args()
    nar = nar_command()
    out = {"machine": machine(), "settings": []}
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    for threads in dict.fromkeys(int(t) for t in args.threads.split(",")):
        device = f"own-{threads}t"
        calibration = None
        if args.calibrate:
            try:
                head = run_json([*nar, "calibrate", "--device", device, "--threads", str(threads), "--models",
                                 str(args.models), "--json", *(["--fresh"] if args.fresh else []),
                                 *(["--budget", str(args.budget)] if args.budget else [])])
            except SystemExit as failed:  # e.g. a machine busy through most of the models: said, not scored
                print(failed, flush=True)
                out["settings"].append({"threads": threads, "device": device, "calibration_failed": str(failed)})
                path.write_text(json.dumps(out, indent=2) + "\n")
                continue
            calibration = {k: head.get(k) for k in ("half_width_pct", "loo_mape", "models", "timings")}
            print(f"calibrated {device}: ±{head['half_width_pct']} %, leave-one-out MAPE {head.get('loo_mape')} %")
        summary = score_device(nar, {path: INPUTS[path.name] for path in sorted(MODELS.glob("*.py"))}, threads,
                               device)
        out["settings"].append(summary | ({"calibration": calibration} if calibration else {}))
        path.write_text(json.dumps(out, indent=2) + "\n")  # each thread count's results as soon as they are in
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
