"""How much the novelty cosine moves with the split: the shipped calibration on several split seeds.

    python benchmarks/bench_novelty_seeds.py [--seeds 0,1,2,3,4] [--variants 2]

The novelty threshold is set as `nar index build` sets it (`search.neighbours.zoo_calibration`:
edited copies of up to four architectures of every family, each searched against all the other
architectures, and for a family two zoo sources list its architectures searched against the other
sources' only; the family-balanced 1 % quantile of their nearest cosine), on the zoo's stored
embeddings: first on the whole zoo (the shipped threshold), then, for each seed, on that random
90/10 split's training part only, with members and edits drawn with that seed. The spread over the
seeds is how much the threshold moves with what the zoo holds and which edits were drawn.
`unseen kept`: the share of edited copies of the encoder card's test architectures (never trained
on) that reach the threshold.
Prints each threshold and the range; writes benchmarks/results/novelty-seeds.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--variants", type=int, default=None, help="edited copies per test architecture "
                        "(default: what `nar index build` uses)")
    parser.add_argument("--db", type=Path, default=ROOT / "narcli" / "data" / "zoo.db")
    args = parser.parse_args()

    from narcli.search.neighbours import CALIBRATION_VARIANTS, _zoo_vectors, zoo_calibration

    variants = CALIBRATION_VARIANTS if args.variants is None else args.variants
    hashes, vectors, _ = _zoo_vectors(args.db)

    def line(label: str, calibration: dict) -> None:
        print(f"{label}: novelty cosine {calibration['novelty_threshold']:.3f}  (edited copies kept "
              f"{calibration.get('rewritten_kept')}, unseen kept {calibration.get('unseen_rewritten_kept')}, "
              f"family-removed flagged {calibration['new_flagged']:.3f}, other libraries' versions kept "
              f"{calibration.get('independent_kept')} of {calibration.get('independent_queries')})", flush=True)

    began = time.perf_counter()
    whole = {**zoo_calibration(args.db, hashes, vectors, variants), "seconds": round(time.perf_counter() - began, 1)}
    line("whole zoo (shipped)", whole)
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        began = time.perf_counter()
        calibration = zoo_calibration(args.db, hashes, vectors, variants, split_seed=seed)
        rows.append({"seed": seed, **calibration, "seconds": round(time.perf_counter() - began, 1)})
        line(f"seed {seed}, training part", calibration)
    values = [r["novelty_threshold"] for r in rows]
    spread = round(max(values) - min(values), 4)
    print(f"range {min(values):.3f}-{max(values):.3f}: spread {spread:.3f}")
    out = {"variants": variants, "whole_zoo": whole, "seeds": rows, "spread": spread, "machine": machine()}
    (ROOT / "benchmarks" / "results" / "novelty-seeds.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
