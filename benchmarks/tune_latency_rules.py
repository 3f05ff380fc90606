"""Choose how the reference latency head costs operation calls, on the calibration families only
(the families each split holds out to set the interval; never the test families).

    python benchmarks/tune_latency_rules.py [--splits 0,1,2] [--inits 0,1,2] [--epochs 200]
                                            [--variants "NAME;NAME"] [--out NAME]

Each variant is fitted on every split's training families once per initialisation (the held-out
fit's MAPE on one split moves by up to 3 points between initialisations, so one fit per variant
decides nothing): the rules of 2026-11-28 (a slice's call cost learnt), a slice costing one fixed
dispatch (`latency.SLICE_CALL_MS`, shipped), and every elementwise operation and activation costing
that dispatch too (2026-12-07: tried, not shipped; calibration families 14.45 -> 14.73 %). (The
recorded run of 2026-12-01 has another, a node feature flagging the convolutions PyTorch runs
without oneDNN, tried and not shipped.) `--variants` fits only the named ones. Prints each fit's
MAPE on the calibration and the test families and the mean per variant; writes
benchmarks/results/<NAME>.json (default latency-rules.json). About 40 s a fit on this 2-core VM.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    import narcli.predict.latency as latency
    import narcli.predict.latency_training as training

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="0,1,2")
    parser.add_argument("--inits", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--out", default="latency-rules")
    parser.add_argument("--variants", default="", help="variant names to fit, separated by semicolons (default: all)")
    args = parser.parse_args()
    splits, inits = [int(s) for s in args.splits.split(",")], [int(s) for s in args.inits.split(",")]
    samples, _ = training.load_samples(report=print)
    shipped = latency.fixed_call_indices
    variants = {"2026-11-28 rules": lambda: np.array([-1], dtype=np.int64),  # no operation has a fixed call cost
                "slices one dispatch (shipped)": shipped,
                "slices and elementwise ops and activations one dispatch": lambda: dispatch_indices(shipped())}
    if args.variants:
        wanted = set(args.variants.split(";"))
        if wanted - set(variants):  # a name that matches nothing would otherwise fit nothing, silently
            raise SystemExit(f"unknown variant(s) {sorted(wanted - set(variants))}; known: {sorted(variants)}")
        variants = {name: rule for name, rule in variants.items() if name in wanted}
    out: dict = {"machine": machine(), "rows": len(samples), "variants": {}}
    try:
        for variant, indices in variants.items():
            use_fixed_calls(indices)
            fits = []
            for split in splits:
                train, calibration, test = training.family_split(samples, split)
                for init in inits:
                    weights = training.fit(samples, train, training.Config(epochs=args.epochs, seed=100 + init))
                    scores = {}
                    for name, rows in (("calibration", calibration), ("test", test)):
                        error = training.predict_samples(weights, samples, rows) - np.array([samples[i].log_ms for i in rows])
                        scores[name] = round(float(100 * np.mean(np.abs(np.exp(error) - 1))), 2)
                    fits.append({"split": split, "init": init, **scores})
                    print(variant, fits[-1], flush=True)
            mean = {k: round(float(np.mean([f[k] for f in fits])), 2) for k in ("calibration", "test")}
            out["variants"][variant] = {"fits": fits, "mean_mape": mean}
            print("MEAN", variant, mean, flush=True)
    finally:
        use_fixed_calls(shipped)
    target = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


def use_fixed_calls(rule) -> None:
    """Cost the operations `rule()` names at one fixed dispatch a call, in both twins: the numpy head
    that scores and the torch network that trains."""
    import narcli.predict.latency as latency
    import narcli.predict.latency_network as network

    latency.fixed_call_indices = network.fixed_call_indices = rule


def dispatch_indices(fixed: np.ndarray) -> np.ndarray:
    """`fixed` and the operation indices of every elementwise operation and activation: a kernel over
    a small tensor costs one dispatch in eager PyTorch (1.3-3 us here on 2026-12-07: an add, a
    compare, a tanh over 1,024-8,624 elements), where the learnt call rates put 14-30 us on them."""
    from narcli.encode.features import op_index
    from narcli.graph.vocab import OPS
    from narcli.predict.latency import cost_op

    kinds = {op_index(cost_op(op)) for op, kind in OPS.items() if kind in ("elementwise", "activation")}
    return np.array(sorted(kinds | set(fixed.tolist())), dtype=np.int64)


if __name__ == "__main__":
    main()
