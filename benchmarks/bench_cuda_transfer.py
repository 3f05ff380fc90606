"""The reference-GPU head on another GPU and on sources it never saw: its zoo predictions against a
set measured elsewhere, raw and after a K-model calibration.

    python benchmarks/bench_cuda_transfer.py [--reference benchmarks/results/cuda-h200] [--k 20] [--draws 200]

The shipped head (narcli/data/cuda) was trained on an H100's timings of timm, transformers,
torchvision, torchaudio, PyG and textbook models. `--reference` is a set written by `nar bench --zoo
--device cuda --export` on another machine (benchmarks/results/cuda-h200: smp, MONAI and diffusers
on a lent H200, 2026-12-04, none of them in the head's training set). Scored: the head's stored
zoo prediction (`nar predict`'s "reference-cuda" row) against each timing, as shipped; then, for
`--draws` random picks of K models, the prediction refitted on those K (log ms = a + b log
predicted, and the scale a alone) and scored on the models of every *other* family, with a 90 %
interval from the K fit's residuals — what a GPU calibration from K timings would give.
Writes benchmarks/results/cuda_transfer.json.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sqlite3
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import machine  # noqa: E402

from narcli.predict.latency import GPU_COLUMN, GPU_HEAD_NAME, read_reference  # noqa: E402
from narcli.predict.metrics import mape, spearman, within  # noqa: E402


def stored_predictions(ids: set[str]) -> dict[str, tuple[str, tuple[float, float, float] | None]]:
    """model id -> (status, (value, low, high) or None) of the reference-GPU head, from the zoo."""
    out = {}
    with sqlite3.connect(f"file:{ROOT / 'narcli' / 'data' / 'zoo.db'}?mode=ro", uri=True) as connection:
        for model_id, data in connection.execute("select id, data from predictions"):
            if model_id not in ids:
                continue
            for predictor, status, _reason, values in json.loads(data):
                if predictor != GPU_HEAD_NAME:
                    continue
                found = [v for v in values if v[0] == GPU_COLUMN]
                out[model_id] = (status, tuple(found[0][1:4]) if status == "ok" and found else None)
    return out


def scores(predicted: list[float], measured: list[float], low: list[float] | None = None,
           high: list[float] | None = None) -> dict[str, float]:
    errors = [abs(p - m) / m for p, m in zip(predicted, measured)]
    out = {"models": len(errors), "mape_pct": round(mape(predicted, measured), 1),
           "median_error_pct": round(100 * statistics.median(errors), 1),
           "within10_pct": round(within(predicted, measured), 1),
           "spearman": round(spearman(predicted, measured), 3),
           "median_ratio": round(statistics.median(m / p for p, m in zip(predicted, measured)), 3)}
    if low is not None and high is not None:
        out["coverage_pct"] = round(100 * sum(lo <= m <= hi for lo, m, hi in zip(low, measured, high)) / len(errors), 1)
        out["median_half_width_pct"] = round(100 * statistics.median((hi / lo) ** 0.5 - 1 for lo, hi in zip(low, high)), 1)
    return out


def calibrated(rows: list[dict], k: int, draws: int, slope: bool, seed: int = 0) -> dict[str, float]:
    """Mean over `draws` random picks of k rows: refit on them, score on rows of other families."""
    generator = random.Random(seed)
    figures: list[dict[str, float]] = []
    for _ in range(draws):
        picked = generator.sample(rows, k)
        families = {r["family"] for r in picked}
        rest = [r for r in rows if r["family"] not in families]
        if len(rest) < 20:
            continue
        x = [math.log(r["predicted"]) for r in picked]
        y = [math.log(r["median_ms"]) for r in picked]
        if slope:
            b, a = statistics.linear_regression(x, y)
        else:
            b, a = 1.0, statistics.fmean(yi - xi for xi, yi in zip(x, y))
        residuals = sorted(abs(yi - (a + b * xi)) for xi, yi in zip(x, y))
        # the 90 % quantile of k residuals, widened by (k + 1) / k for a fit made on the same k
        half = residuals[min(k - 1, math.ceil(0.9 * k) - 1)] * (k + 1) / k
        centre = [a + b * math.log(r["predicted"]) for r in rest]
        figures.append(scores([math.exp(c) for c in centre], [r["median_ms"] for r in rest],
                              [math.exp(c - half) for c in centre], [math.exp(c + half) for c in centre]))
    keys = [key for key in figures[0] if key != "models"]
    return {"draws": len(figures), "scored_models_median": statistics.median(f["models"] for f in figures),
            **{key: round(statistics.fmean(f[key] for f in figures), 3) for key in keys}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=ROOT / "benchmarks" / "results" / "cuda-h200")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--out", default="cuda_transfer")
    args = parser.parse_args()

    rows, card = read_reference(args.reference)
    _, head_card = read_reference(ROOT / "narcli" / "data" / "cuda")
    predictions = stored_predictions({r["model"] for r in rows})
    answered = []
    unanswered: dict[str, int] = {}
    for row in rows:
        status, value = predictions.get(row["model"], ("not in the zoo", None))
        if value is None or row["median_ms"] <= 0:
            unanswered[status] = unanswered.get(status, 0) + 1
            continue
        answered.append(row | {"predicted": value[0], "low": value[1], "high": value[2]})
    shipped = scores([r["predicted"] for r in answered], [r["median_ms"] for r in answered],
                     [r["low"] for r in answered], [r["high"] for r in answered])
    by_source = {}
    for source in sorted({r["source"] for r in answered}):
        part = [r for r in answered if r["source"] == source]
        by_source[source] = scores([r["predicted"] for r in part], [r["median_ms"] for r in part],
                                   [r["low"] for r in part], [r["high"] for r in part])
    out = {"reference": str(args.reference.relative_to(ROOT)) if args.reference.is_relative_to(ROOT) else str(args.reference),
           "measured_on": card["device"], "head_trained_on": head_card["device"],
           "rows": len(rows), "answered": len(answered), "unanswered": unanswered,
           "families": len({r["family"] for r in answered}),
           "shipped": shipped, "shipped_by_source": by_source,
           f"calibrated_k{args.k}_scale": calibrated(answered, args.k, args.draws, slope=False),
           f"calibrated_k{args.k}_scale_slope": calibrated(answered, args.k, args.draws, slope=True),
           "machine": machine()}
    print(f"{out['answered']} of {out['rows']} timings on {card['device']['name']} answered by the head trained on "
          f"{head_card['device']['name']} ({unanswered or 'all'})")
    for name in ("shipped", f"calibrated_k{args.k}_scale", f"calibrated_k{args.k}_scale_slope"):
        f = out[name]
        print(f"{name:>28}: MAPE {f['mape_pct']} %, median {f['median_error_pct']} %, ±10 % {f['within10_pct']} %, "
              f"Spearman {f['spearman']}, coverage {f.get('coverage_pct')} % (±{f.get('median_half_width_pct')} %), "
              f"measured/predicted {f['median_ratio']}")
    for source, f in by_source.items():
        print(f"{source:>28}: {f['models']} models, MAPE {f['mape_pct']} %, median {f['median_error_pct']} %, "
              f"ratio {f['median_ratio']}, coverage {f['coverage_pct']} %")
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
