"""The reference-CPU latency head on families it never trained on (issue 33).

    python benchmarks/bench_latency_head.py [--epochs 200] [--seeds 0,1,2] [--reference DIR]
                                            [--huber T] [--balance B] [--offset-decay L]
                                            [--source-balance S] [--out NAME]

For each seed (a different family split and initialisation), trains a head on the training families of the bundled reference dataset (narcli/data/
reference-latency.csv), sets its 90 % interval on the calibration families and scores the test
families (>= 25 % of the rows), beside a MACs-only fit and a boosted-tree baseline trained on the
same rows; tables by coarse class and by source. Targets: MAPE <= 10 %, within +-10 % >= 60 %,
coverage 85-95 %, both baselines beaten. Also the head's figures on the calibration families
(`validation`): training choices (the loss, family and source balance, the pull of each operation's rates
towards its kind's) are made on those, not on the test
families. Prints the first seed's tables and the mean over seeds;
writes benchmarks/results/latency_head.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--reference", type=Path, default=None)
    parser.add_argument("--out", default="latency_head")
    parser.add_argument("--huber", type=float, default=None, help="the loss's Huber threshold (0: squared error)")
    parser.add_argument("--balance", type=float, default=None, help="family balance exponent (0: every row alike)")
    parser.add_argument("--offset-decay", type=float, default=None,
                        help="L2 pull of each operation's rates towards its kind's (0: none)")
    parser.add_argument("--source-balance", type=float, default=None,
                        help="oversample small sources: each row seen (largest source rows / its source rows) ** S times an epoch (0: once)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from rich.console import Console

    from narcli.cli.render_predict import print_latency_evaluation
    from narcli.predict.latency_training import Config, evaluate

    seeds = [int(s) for s in args.seeds.split(",")]
    options = {k: v for k, v in (("huber", args.huber), ("balance", args.balance),
                                                       ("offset_decay", args.offset_decay),
                                                       ("source_balance", args.source_balance)) if v is not None}
    runs = [evaluate(args.reference, Config(epochs=args.epochs, seed=seed, **options), seed,
                     report=lambda line: print(line, file=sys.stderr)) for seed in seeds]
    print_latency_evaluation(Console(width=120), runs[0])
    mean = {name: {key: round(sum(r["overall"][name][key] for r in runs) / len(runs), 2)
                   for key in runs[0]["overall"][name] if key != "rows"} for name in runs[0]["overall"]}
    for name, figures in mean.items():
        print(f"mean over seeds {args.seeds}: {name:>12}  " + "  ".join(f"{k} {v}" for k, v in figures.items()))
    validation = {key: round(sum(r["validation"][key] for r in runs) / len(runs), 2)
                  for key in ("mape", "median_ape", "within10")}
    print(f"mean over seeds {args.seeds}: validation (calibration families)  "
          + "  ".join(f"{k} {v}" for k, v in validation.items()))
    result = {"seeds": seeds, "mean": mean, "validation": validation, "runs": runs, "machine": machine()}
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
