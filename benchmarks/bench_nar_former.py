"""NAS-Bench-201 accuracy on both protocols, every network kind and the boosted trees in one run
(issues 35, 45), on the 200-epoch labels; resumable (finished runs are kept in the JSON and skipped),
one process at a time:

    python benchmarks/bench_nar_former.py [--only nar-former held-out nar-former-1%] [--graphs-db .work/nb201.db]

- nar-former: NAR-Former's protocol exactly: the first N rows of accuracy.csv in index order, trained on
  `cifar10-val` (CIFAR-100 and ImageNet16-120 have no 200-epoch -val, so their columns train on their
  -test values and are reported as such), the checkpoint chosen by tau on the next 200 rows' -val
  labels, Kendall tau on every row, trained ones included, against -test; at 1 % / 5 % / 10 % / 50 %
  of the rows, three seeds where the seed matters (not at 50 %: one run there fits a session), for
  the former network (tokens over the folded graph), the graph network and boosted trees on the
  cell's one-hot operations (trained on the same rows and labels). With the protocol's ceiling,
  tau(-val, -test) over all rows. Same as `nar eval predictor --nb201 DIR --protocol nar-former
  --train-size 5% --kind former`.
- held-out: the project's protocol (781 random cells, -test labels, tau on every cell never
  trained on), seeds 0-2, former and graph.
Writes benchmarks/results/nar_former.json (the 12-epoch label's figures: nar_former-12epochs.json).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import machine

from narcli.encode.features import OP_INDEX
from narcli.predict.datasets import load_nb201
from narcli.predict.evaluation import evaluate, rows_for
from narcli.predict.training import config_for

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
EPOCHS = {"former": {"small": 100, "large": 30}, "graph": {"small": 60, "large": 20}}
BOTH = ("former", "graph")
RUNS = {  # name -> (protocol, train size, seeds, kinds)
    "nar-former-1%": ("nar-former", "1%", (0, 1, 2), BOTH),
    "nar-former-5%": ("nar-former", "5%", (0, 1, 2), BOTH),
    "nar-former-10%": ("nar-former", "10%", (0, 1, 2), BOTH),
    "nar-former-50%": ("nar-former", "50%", (0,), BOTH),
    "held-out-781": ("held-out", "781", (0, 1, 2), BOTH),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=None, help="run names or protocols (nar-former, held-out)")
    parser.add_argument("--kinds", nargs="*", default=None, help="only these network kinds (former, graph)")
    parser.add_argument("--seeds", nargs="*", type=int, default=None, help="only these seeds")
    parser.add_argument("--graphs-db", type=Path, default=ROOT / ".work" / "nb201.db")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "nar_former.json")
    args = parser.parse_args()
    results = json.loads(args.out.read_text()) if args.out.exists() else {"runs": {}}
    dataset = load_nb201(DATA / "nasbench201", args.graphs_db)
    for name, (protocol, size, seeds, kinds) in RUNS.items():
        if args.only and name not in args.only and protocol not in args.only:
            continue
        rows = rows_for(size, len(dataset.names))
        for kind in kinds:
            for seed in seeds:
                key = f"{name}/{kind}/seed{seed}"
                if key in results["runs"] or (args.kinds and kind not in args.kinds) or \
                        (args.seeds is not None and seed not in args.seeds):
                    continue
                epochs = EPOCHS[kind]["large" if rows > 2000 else "small"]
                began = time.perf_counter()
                result = evaluate(dataset, train_size=rows, seed=seed, op_count=len(OP_INDEX), protocol=protocol,
                                  config=config_for(kind, epochs=epochs, seed=seed, batch=64 if rows > 1000 else 32))
                result["seconds"] = round(time.perf_counter() - began, 1)
                result["command"] = (f"nar eval predictor --nb201 ../shared/data/nasbench201 --protocol {protocol}"
                                     f" --train-size {size} --kind {kind} --epochs {epochs} --seed {seed}")
                results["runs"][key] = _slim(result)
                results["machine"] = machine()
                args.out.write_text(json.dumps(results, indent=2) + "\n")
                print(key, json.dumps(_headline(result)), f"{result['seconds']:.0f} s", flush=True)
    results["summary"] = summary(results["runs"])
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results["summary"], indent=2))


def _slim(result: dict) -> dict:
    """Accuracy columns only (the latency columns have their own benchmark)."""
    keep = {c for c, k in result["kinds"].items() if k == "accuracy"}
    out = dict(result)
    for part in ("columns", "baseline", "unseen"):
        if part in out:
            out[part] = {c: m for c, m in out[part].items() if c in keep}
    out["kinds"] = {c: "accuracy" for c in keep}
    out.pop("labels", None)
    return out


def _headline(result: dict) -> dict:
    out = {"tau": result["columns"]["cifar10-test"]["tau"], "boosted": result["baseline"].get("cifar10-test", {}).get("tau")}
    if result["mode"] == "nar-former":
        out["unseen"] = result["unseen"].get("cifar10-test", {}).get("tau")
        out["ceiling"] = result["ceiling"].get("cifar10-test")
    return out


def summary(runs: dict) -> dict:
    """Per run and kind: CIFAR-10 tau mean ± sd over seeds (and the boosted trees', the ceiling)."""
    grouped: dict[str, list[dict]] = {}
    for key, result in runs.items():
        name, kind, _ = key.split("/")
        grouped.setdefault(f"{name}/{kind}", []).append(_headline(result))
    out = {}
    for key, heads in grouped.items():
        taus = [h["tau"] for h in heads]
        entry = {"seeds": len(taus), "tau_mean": round(float(np.mean(taus)), 4), "tau_sd": round(float(np.std(taus)), 4),
                 "boosted_mean": round(float(np.mean([h["boosted"] for h in heads if h["boosted"] is not None] or [np.nan])), 4)}
        if "ceiling" in heads[0]:
            entry["unseen_mean"] = round(float(np.mean([h["unseen"] for h in heads])), 4)
            entry["ceiling"] = heads[0]["ceiling"]
        out[key] = entry
    return out


if __name__ == "__main__":
    main()
