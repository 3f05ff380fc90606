"""The predictor's latency and timm figures (issues 19, 45), each run beside the boosted-tree baseline
trained on the same rows, resumable (finished runs are kept in the JSON and skipped):

    python benchmarks/bench_predictor.py [--only nb201-half timm-80] [--graphs-db .work/nb201.db]

Runs (the same as `nar eval predictor --nb201 DIR|--timm DIR --train-size N --seed S --kind K`):
- nb201-half: 3,906 training cells (the former, the bundled NAS-Bench-201 kind), tested on the other
  3,907: the 27 latency columns (target: GPU and server-CPU mean MAPE <= 1.8 %, every column below
  the baseline) and the accuracies on the 200-epoch labels;
- timm-80: 80 % of the timm architectures (whole graphs; the graph network, the bundled timm kind)
  for training, 20 % held out: top-1 MAE (target <= 0.9), CPU latency MAPE (<= 10 %), GPU
  throughput MAPE (<= 12 %).
NAS-Bench-201 accuracy on both protocols is `bench_nar_former.py`'s. Writes
benchmarks/results/predictor.json (figures on the 12-epoch labels: predictor-12epochs.json).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import machine

from narcli.encode.features import OP_INDEX
from narcli.predict.datasets import SERVER_PREFIXES, load_nb201, load_timm
from narcli.predict.evaluation import evaluate, summarise
from narcli.predict.training import config_for

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
RUNS = {  # name -> (dataset, train size (None: 80 % of architectures), seeds, epochs, kind)
    "nb201-half": ("nb201", 3906, (0,), 30, "former"),
    "timm-80": ("timm", None, (0,), 60, "graph"),
}
GROUPS = {"server": lambda c: c.startswith(SERVER_PREFIXES),
          "phones+raspi4": lambda c: c.startswith(("pixel", "essential", "samsung", "raspi4")),
          "eyeriss+fpga": lambda c: c in ("eyeriss", "fpga"), "all": lambda c: True}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", choices=sorted(RUNS), default=None)
    parser.add_argument("--graphs-db", type=Path, default=ROOT / ".work" / "nb201.db")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "predictor.json")
    args = parser.parse_args()
    results = json.loads(args.out.read_text()) if args.out.exists() else {"runs": {}}
    loaded = {}
    for name in args.only or list(RUNS):
        source, size, seeds, epochs, kind = RUNS[name]
        if source not in loaded:
            loaded[source] = (load_nb201(DATA / "nasbench201", args.graphs_db) if source == "nb201"
                              else load_timm(DATA / "timm"))
        dataset = loaded[source]
        for seed in seeds:
            key = f"{name}/seed{seed}"
            if key in results["runs"]:
                continue
            rows = size or int(0.8 * len(dataset.names))
            began = time.perf_counter()
            result = evaluate(dataset, train_size=rows, seed=seed, op_count=len(OP_INDEX),
                              config=config_for(kind, epochs=epochs, seed=seed, batch=64 if rows > 1000 else 32))
            result["seconds"] = round(time.perf_counter() - began, 1)
            result["summary"] = summarise(result, GROUPS if source == "nb201" else None)
            timings = [c for c, k in result["kinds"].items() if k != "accuracy"]
            better = [c for c in timings if result["columns"][c]["mape"] < result["baseline"][c]["mape"]]
            result["summary"]["timing_columns_below_baseline"] = f"{len(better)} of {len(timings)}"
            result["command"] = (f"nar eval predictor --{source} ../shared/data/{'nasbench201' if source == 'nb201' else 'timm'}"
                                 f" --train-size {rows} --seed {seed} --epochs {epochs} --kind {kind}")
            results["runs"][key] = result
            results["machine"] = machine()
            args.out.write_text(json.dumps(results, indent=2) + "\n")
            print(key, json.dumps(result["summary"]), f"{result['seconds']:.0f} s", flush=True)
    taus = {}
    for key, result in results["runs"].items():
        name = key.split("/")[0]
        first = next(iter(result["columns"]))
        taus.setdefault(name, []).append((result["columns"][first]["tau"], result["baseline"][first]["tau"]))
    results["tau_first_column_mean"] = {n: {"predictor": round(float(np.mean([a for a, _ in v])), 4),
                                            "baseline": round(float(np.mean([b for _, b in v])), 4), "runs": len(v)}
                                        for n, v in taus.items()}
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results["tau_first_column_mean"], indent=2))


if __name__ == "__main__":
    main()
