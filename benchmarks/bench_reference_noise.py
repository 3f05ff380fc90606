"""How repeatable the reference latency labels are: re-measure N models of the stored reference set
(same protocol, same worker set-up) and compare with what was stored — the noise floor any latency
predictor is scored against.

    python benchmarks/bench_reference_noise.py [--models 100] [--seed 0]

Needs the reference measurements in this NAR_HOME's bench.db (run `nar bench --zoo` first).
Writes benchmarks/results/reference_noise.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from common import change_figures, machine

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from narcli.bench import reference, store
    from narcli.bench.device import device_info
    from narcli.bench.lock import measuring
    from narcli.trace.pool import run_pool

    info = device_info("cpu", reference.THREADS)
    stored = {h: r for h, r in store.measurements(info.key, 1).items() if r.get("protocol") == "reference"}
    picks = random.Random(args.seed).sample(sorted(stored), min(args.models, len(stored)))
    from narcli.zoo.store import Zoo

    with Zoo() as zoo:
        sources = {h: zoo.resolve(stored[h]["name"]).source for h in picks}
    again: dict[str, float] = {}

    def on_result(result) -> None:
        if result.ok:
            again[result.key] = result.value["median_ms"]

    tasks = [(h, (sources[h], stored[h]["name"], reference.THREADS)) for h in picks]
    with measuring("cpu"):
        run_pool(reference.measure_zoo_model, tasks, on_result, jobs=1, timeout=300, tasks_per_worker=400)
    ratios = [again[h] / stored[h]["median_ms"] for h in again]
    out = {"models": len(ratios), **change_figures(ratios),
           "rows": [{"model": stored[h]["name"], "stored_ms": stored[h]["median_ms"], "again_ms": again[h]}
                    for h in again], "machine": machine()}
    print(f"{out['models']} models re-measured: median |change| {out['median_abs_change_pct']} %, mean "
          f"{out['mean_abs_change_pct']} %, within 10 % {out['within10_pct']} %, median ratio {out['median_ratio']}")
    path = ROOT / "benchmarks" / "results" / "reference_noise.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
