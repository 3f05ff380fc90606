"""Which zoo models `nar calibrate` should time: its farthest-point order as shipped against the same
order that also spreads the models' work split (convolution, matrix products, other work, calls,
per-operation dispatch; `composition`), offline, on measurements already taken.

    python benchmarks/bench_calibration_choice.py [RESULT.json ...] [--splits 40] [--out NAME]

Reads dated one-thread `nar eval calibration --json` results (default:
benchmarks/results/calibration-1thread-DATE*.json): every calibration and held-out model each timed
on one machine, one day. Per run and per random split, a third of those models is set aside as the
test set; each way of choosing then orders the rest (`calibration_set.spread_order`, with or without the
work split) and fits the shipped head (`transfer.fit_head` on the five one-thread columns, the
interval pooled with the reference head's) on its first K, scored on the test set: MAPE, median
error, coverage of the 90 % interval and its half-width; a random choice of K beside them. The
test set is the same for every way of choosing, so the differences are the choice's alone. Parts
come from the head fitted without the held-out families (`held_out_head`), as in
`bench_calibration_fit.py`. Nothing is measured. Writes benchmarks/results/calibration-choice.json
(or --out NAME).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from narcli.bench import calibration_set, transfer
    from narcli.bench.calibration_eval import held_out_head
    from narcli.zoo.store import Zoo

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", type=Path)
    parser.add_argument("--splits", type=int, default=40, help="random test sets per run")
    parser.add_argument("--ks", default="10,15", help="calibration sizes")
    parser.add_argument("--out", default="calibration-choice")
    args = parser.parse_args()
    files = args.results or sorted(p for p in RESULTS.glob("calibration-1thread-2*.json"))
    ks = [int(k) for k in args.ks.split(",")]
    head = held_out_head()
    reference = transfer.measured_on_reference()
    ways = {"shipped order (no work split)": None, "with the work split": 1.0,
            "with the work split, weight 2": 2.0}
    out: dict = {"runs": {}, "ways": list(ways) + ["reference-measured first", "random"]}
    totals: dict = {}
    with Zoo() as zoo:
        for path in files:
            result = json.loads(path.read_text())
            if "held_out" not in result:
                continue
            rows = {r["name"]: r["ms"] for r in result["calibration"] + result["held_out"]}
            pool = []
            for name in rows:
                model = zoo.resolve(name)
                parts = head.parts(zoo.graph(model), model.macs, model.params)
                if parts is None:
                    continue
                pool.append(calibration_set.Candidate(name, model.macs, model.params or 0,
                                                {calibration_set.REFERENCE_COLUMN: float(transfer.predicted_ms(parts)[0])},
                                                np.zeros(0), model.coarse or "", model.graph_hash, parts=parts))
            y_all = np.log([rows[c.name] for c in pool])
            fitting = transfer.fitting_parts(pool, reference)
            raw = np.stack([c.parts for c in pool])
            rng = np.random.default_rng(0)
            run: dict = {}
            for split in range(args.splits):
                test = rng.permutation(len(pool))[: len(pool) // 3]
                left_out = set(test)
                rest = [i for i in range(len(pool)) if i not in left_out]
                truth = np.exp(y_all[test])
                split_shares, orders = composition(raw[rest]), {}
                for way, weight in ways.items():
                    shares = None if weight is None else weight * split_shares
                    orders[way] = [rest[i] for i in calibration_set.spread_order([pool[i] for i in rest], shares)]
                measured_first = [i for i in rest if pool[i].graph_hash in reference]
                unmeasured = [i for i in rest if pool[i].graph_hash not in reference]
                orders["reference-measured first"] = [
                    group[i] for group in (measured_first, unmeasured) if group
                    for i in calibration_set.spread_order([pool[j] for j in group])]
                orders["random"] = list(rng.permutation(rest))
                for k in ks:
                    for way, order in orders.items():
                        chosen = order[:k]
                        fit = transfer.fit_head(transfer.work_columns(fitting[chosen]), y_all[chosen],
                                                prior_half=head.half)
                        centre = transfer.predict_log(fit, raw[test])
                        error = np.abs(np.exp(centre) - truth) / truth
                        figures = [float(error.mean() * 100), float(np.median(error) * 100),
                                   float((np.abs(np.log(truth) - centre) <= fit["half"]).mean() * 100),
                                   float((np.exp(fit["half"]) - 1) * 100)]
                        run.setdefault(f"K={k}", {}).setdefault(way, []).append(figures)
                        totals.setdefault(f"K={k}", {}).setdefault(way, []).append(figures)
            out["runs"][path.stem] = {k: {w: mean(v) for w, v in by.items()} for k, by in run.items()}
            print(path.stem, len(pool), "models")
            print_means(out["runs"][path.stem])
    out["all"] = {k: {w: mean(v) for w, v in by.items()} for k, by in totals.items()}
    print("all runs")
    print_means(out["all"])
    target = RESULTS / f"{args.out}.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


def composition(parts: np.ndarray) -> np.ndarray:
    """Rows of `LatencyHead.parts` as each model's work split (`transfer.FIT_COLUMNS`, each as a share
    of the reference prediction), standardised over the rows: what the order spreads besides its own
    features, so that each scale the one-thread fit learns has models whose time it is."""
    from narcli.bench.transfer import predicted_ms, work_columns

    shares = work_columns(parts) / np.maximum(predicted_ms(parts), 1e-12)[:, None]
    return (shares - shares.mean(0)) / (shares.std(0) + 1e-9)


def print_means(by_k: dict) -> None:
    for k, by in by_k.items():
        for way, figures in by.items():
            print(f"  {k:<5} {way:<34} MAPE {figures['mape']:5.1f}  median {figures['median']:5.1f}  "
                  f"coverage {figures['coverage']:5.1f} %  ±{figures['half_width']:.1f} %")


def mean(rows: list[list[float]]) -> dict[str, float]:
    figures = np.array(rows).mean(0)
    return dict(zip(("mape", "median", "coverage", "half_width"), (round(float(f), 2) for f in figures)))


if __name__ == "__main__":
    main()
