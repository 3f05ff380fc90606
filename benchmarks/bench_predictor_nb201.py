"""NAS-Bench-201 accuracy prediction (issue 19, in progress): Kendall tau of the predictor trained on
N cells, on the cells not trained on, beside the boosted-tree floor (one-hot cell ops) in the same run.

    NAR_NB201_ARCHS=../shared/data/nasbench201/accuracy.csv \\
        nar zoo build --source nasbench201 --db .work/nb201.db --jobs 2      # once, ~25 min
    python benchmarks/bench_predictor_nb201.py --train-size 781 --seeds 0 [--epochs 60] [--dim 64]

Needs scikit-learn for the floor (HistGradientBoostingRegressor). Writes
benchmarks/results/predictor_nb201.json. Targets (issue 19): tau >= 0.88 at 781 training cells,
>= 0.92 at 1,563, >= 0.955 at half of the data; NAR-Former 0.849 / 0.901 / 0.947; floor ~0.68 / 0.76 / 0.85.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import machine

from narcli.encode.features import OP_INDEX
from narcli.predict.metrics import kendall_tau
from narcli.predict.nb201_data import load_nb201, one_hot_cells
from narcli.predict.training import PredictorConfig, train_predictor

ROOT = Path(__file__).resolve().parent.parent


def boosted_floor(features: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int) -> float:
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(random_state=seed).fit(features[train], y[train])
    return kendall_tau(model.predict(features[test]), y[test])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "nasbench201")
    parser.add_argument("--db", type=Path, default=ROOT / ".work" / "nb201.db")
    parser.add_argument("--train-size", type=int, default=781)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--column", default="cifar10-test")
    args = parser.parse_args()

    data = load_nb201(args.data, args.db)
    y = data.accuracy[args.column]
    features = one_hot_cells(data.archs)
    runs = []
    for seed in args.seeds:
        order = np.random.default_rng(seed).permutation(len(y))
        train, test = order[:args.train_size], order[args.train_size:]
        began = time.perf_counter()
        config = PredictorConfig(dim=args.dim, layers=args.layers, epochs=args.epochs, seed=seed, lr=1e-3)
        trained = train_predictor([data.tokens[i] for i in train], y[train], config, len(OP_INDEX),
                                  on_epoch=lambda e: print(e, flush=True) if e["epoch"] % 10 == 0 else None)
        seconds = time.perf_counter() - began
        predicted = trained.predict([data.tokens[i] for i in test])[:, 0]
        run = {"seed": seed, "tau": kendall_tau(predicted, y[test]), "floor_tau": boosted_floor(features, y, train, test, seed),
               "train_seconds": round(seconds, 1), "test_cells": len(test)}
        print(run, flush=True)
        runs.append(run)
    result = {"column": args.column, "train_size": args.train_size, "cells": len(y), "epochs": args.epochs,
              "dim": args.dim, "layers": args.layers, "runs": runs,
              "tau_mean": float(np.mean([r["tau"] for r in runs])),
              "floor_tau_mean": float(np.mean([r["floor_tau"] for r in runs])), "machine": machine()}
    out = ROOT / "benchmarks" / "results" / "predictor_nb201.json"
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()
