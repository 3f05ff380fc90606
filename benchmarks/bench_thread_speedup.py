"""How one model's speed-up from one thread to two moves on this VM: the noise floor under any
calibration at two threads, read from measurements already taken.

    python benchmarks/bench_thread_speedup.py [--out NAME]

Pairs every `nar eval calibration` run at two threads with the one-thread run of the same day
(benchmarks/results/calibration-2threads-DAY.json beside calibration-1thread-DAY.json; both measure
the same held-out and calibration models, minutes apart) and reports, per day and per coarse class,
the speed-up t(1 thread) / t(2 threads) of each model. Two threads on this VM's two vCPUs cannot
run a batch-1 model more than 2x faster (no working set here fits a cache only because it is
split), so a speed-up above 2 means one of the two timings was taken on a slowed core; and how one
model's speed-up moves from day to day (and VM to VM: the days ran on three VMs) says how far a
calibration fitted one day can carry to another. Nothing is measured. Writes
benchmarks/results/thread-speedup.json (or --out NAME).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
MOST = 2.0  # two vCPUs: no model can gain more


def pairs() -> list[tuple[str, Path, Path]]:
    out = []
    for two in sorted(RESULTS.glob("calibration-2threads-*.json")):
        one = two.with_name(two.name.replace("2threads", "1thread"))
        day = two.stem.removeprefix("calibration-2threads-")
        if one.exists() and day[:1].isdigit():  # a dated pair (other names rescore a day's timings)
            out.append((day, one, two))
    return out


def times(path: Path) -> tuple[dict[str, float], dict[str, str]]:
    result = json.loads(path.read_text())
    rows = result.get("held_out", []) + result.get("calibration", [])
    return {r["name"]: r["ms"] for r in rows if r.get("ms")}, {r["name"]: r.get("coarse", "") for r in rows}


def summary(values: list[float]) -> dict[str, float]:
    v = np.array(values)
    return {"models": len(v), "median": round(float(np.median(v)), 3), "min": round(float(v.min()), 3),
            "max": round(float(v.max()), 3), "above_2x": int((v > MOST).sum()),
            "spread_iqr_over_median": round(float((np.percentile(v, 75) - np.percentile(v, 25)) / np.median(v)), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="thread-speedup", help="results file name, under benchmarks/results")
    args = parser.parse_args()
    days, medians = {}, {}
    by_model: dict[str, dict[str, float]] = {}
    one_thread: dict[str, dict[str, float]] = {}  # log ms against the day's median model, per model
    for day, one_path, two_path in pairs():
        one, coarse = times(one_path)
        two, _ = times(two_path)
        common = sorted(set(one) & set(two))
        if not common:
            continue
        speedups = {name: one[name] / two[name] for name in common}
        centre = float(np.median([np.log(one[name]) for name in common]))
        for name in common:
            one_thread.setdefault(name, {})[day] = float(np.log(one[name])) - centre
        for name, value in speedups.items():
            by_model.setdefault(name, {})[day] = value
        classes: dict[str, list[float]] = {}
        for name, value in speedups.items():
            classes.setdefault(coarse.get(name) or "other", []).append(value)
        days[day] = {"all": summary(list(speedups.values())),
                     "by_coarse": {kind: summary(values) for kind, values in sorted(classes.items())}}
        medians[day] = days[day]["all"]["median"]
        row = days[day]["all"]
        print(f"{day:<22} {row['models']:>3} models: speed-up median {row['median']:.2f}, {row['min']:.2f}-{row['max']:.2f}, "
              f"{row['above_2x']} above 2x, IQR/median {row['spread_iqr_over_median']:.2f}")
    # one model across days: how much its own speed-up moves
    moving = [np.std(np.log(list(v.values()))) for v in by_model.values() if len(v) >= 3]
    # the same for its one-thread time, after each day's overall speed is taken out
    steady = [np.std(list(v.values())) for v in one_thread.values() if len(v) >= 3]
    across = {"models_on_3_or_more_days": len(moving),
              "median_sd_of_log_speedup": round(float(np.median(moving)), 3) if moving else None,
              "median_sd_of_log_one_thread_time_day_scaled": round(float(np.median(steady)), 3) if steady else None,
              "day_medians": medians}
    if moving:
        print(f"one model's speed-up across days: median sd of its log {across['median_sd_of_log_speedup']:.3f} "
              f"({len(moving)} models timed on 3+ days); day medians {min(medians.values()):.2f}-{max(medians.values()):.2f}; "
              f"its one-thread time, each day's speed taken out: {across['median_sd_of_log_one_thread_time_day_scaled']:.3f}")
    target = RESULTS / f"{args.out}.json"
    target.write_text(json.dumps({"days": days, "across_days": across, "machine": machine()}, indent=2) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
