"""The reference-CPU latency head on hand-written models of families it never trained on: where
`Config.source_balance` (oversampling the small sources) was checked.

    python benchmarks/bench_latency_classics.py [--seeds 0,1] [--epochs 200] [--source-balance S]
                                                [--folds 4] [--dispatch-elementwise] [--out NAME]

The classics source (textbook designs written by hand: GRU and LSTM forecasters, DCGANs, SRCNN,
TCNs, LeNet) is what a user's own model looks like, and 4 % of the reference set. Its families are
dealt into `--folds` groups (fixed order, seed 0); for each group a head is trained on every other
row of the reference set (other sources' rows of those families left out too) and scored on the
group. Reported per seed and on the mean: MAPE, median error and the median signed error over all
groups. The standard family-held-out figures stay `bench_latency_head.py`'s; this one is a
validation check (the six models of `bench_latency_own.py` were not used to choose anything).
Writes benchmarks/results/<out>.json (default latency_classics.json).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

from common import machine

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--source-balance", type=float, default=None, help="default: the shipped Config's")
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--out", default="latency_classics")
    parser.add_argument("--dispatch-elementwise", action="store_true",
                        help="elementwise operations and activations cost one fixed dispatch a call, as slices do "
                             "(tune_latency_rules.py's variant), instead of a learnt call rate")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from narcli.predict import latency_training as training

    if args.dispatch_elementwise:
        from narcli.predict.latency import fixed_call_indices
        from tune_latency_rules import dispatch_indices, use_fixed_calls

        fixed = dispatch_indices(fixed_call_indices())
        use_fixed_calls(lambda: fixed)
    from narcli.predict.latency_split import family_of, source_of

    samples, _ = training.load_samples()
    families = sorted({family_of(s) for s in samples if source_of(s) == "classics"})
    random.Random(0).shuffle(families)
    groups = [set(families[i::args.folds]) for i in range(args.folds)]
    options = {} if args.source_balance is None else {"source_balance": args.source_balance}
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        config = training.Config(epochs=args.epochs, seed=seed, **options)
        predicted, true, models = [], [], []
        for group in groups:
            test = [i for i, s in enumerate(samples) if family_of(s) in group]
            train = [i for i, s in enumerate(samples) if family_of(s) not in group]
            answered = [i for i, ok in zip(test, training.answerable(samples, train, test)) if ok]
            weights = training.fit(samples, train, config)
            predicted += training.predict_samples(weights, samples, answered).tolist()
            true += [samples[i].log_ms for i in answered]
            models += [samples[i].row["model"] for i in answered]
        e = np.array(predicted) - np.array(true)
        run = {"seed": seed, "config": vars(config), **training.scores(np.array(predicted), np.array(true)),
               "median_signed": round(float(np.expm1(np.median(e)) * 100), 2),
               "errors_pct": {m: round(float(np.expm1(x) * 100), 1) for m, x in zip(models, e)}}
        print(f"seed {seed}: {run['rows']} models, MAPE {run['mape']} %, median error {run['median_ape']} %, "
              f"median signed {run['median_signed']} %", flush=True)
        runs.append(run)
    mean = {k: round(float(np.mean([r[k] for r in runs])), 2) for k in ("mape", "median_ape", "median_signed")}
    print(f"mean over seeds {args.seeds}: " + "  ".join(f"{k} {v}" for k, v in mean.items()))
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    path.write_text(json.dumps({"mean": mean, "runs": runs, "machine": machine()}, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
