"""How much the novelty cosine moves with the split: the shipped calibration on several split seeds.

    python benchmarks/bench_novelty_seeds.py [--seeds 0,1,2,3,4] [--variants 6]

For each seed, the zoo's random 90/10 split is redrawn and the novelty threshold is set exactly as
`nar index build` sets it (`search.neighbours.zoo_calibration`: edited copies of the test
architectures, the family-balanced 1 % quantile of their nearest-family cosine), on the zoo's stored
embeddings. Seed 0 is the encoder card's split; for the other seeds some test architectures were in
the encoder's training part, so they sit a little closer to their families than clean ones would.
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
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        began = time.perf_counter()
        calibration = zoo_calibration(args.db, hashes, vectors, variants, split_seed=seed)
        rows.append({"seed": seed, **calibration, "seconds": round(time.perf_counter() - began, 1)})
        print(f"seed {seed}: novelty cosine {calibration['novelty_threshold']:.3f}  (known kept "
              f"{calibration['known_kept']:.3f}, family-removed flagged {calibration['new_flagged']:.3f})", flush=True)
    values = [r["novelty_threshold"] for r in rows]
    spread = round(max(values) - min(values), 4)
    print(f"range {min(values):.3f}-{max(values):.3f}: spread {spread:.3f}")
    out = {"variants": variants, "seeds": rows, "spread": spread, "machine": machine()}
    (ROOT / "benchmarks" / "results" / "novelty-seeds.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
