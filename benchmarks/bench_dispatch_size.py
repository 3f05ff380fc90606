"""How a one-thread calibration counts operation calls: each call weighted by its output's size,
e / (e + E) for its e numbers (`latency_parts.dispatch_calls`), against every call counted whole
(E = 0, until 2026-12-08). Offline, on timings already taken.

    python benchmarks/bench_dispatch_size.py [--tiny RESULT.json] [--device demo-1t] [--out NAME]

The choice: for each E in `SIZES`, every dated one-thread `nar eval calibration --json` result
(benchmarks/results/calibration-1thread-*.json) is fitted again on its first 20 calibration models, as
`nar calibrate` fits (`transfer.fit_head` on the parts rescaled to the reference machine's times), and
scored on its held-out models, predicted from the head fitted without their families (as `nar eval
calibration` does). The rule, the project's usual one for a prior: the largest E whose mean held-out MAPE
over the runs is within 0.1 point of the best. Those models are all 0.05-20 GMACs.

The check, not used to choose: small models, which the calibration never times. `--tiny` is a
`benchmarks/bench_latency_tiny.py` result (ten small zoo models and two written for that check, timed
at one thread); `--device`'s stored calibration models are fitted again at each E with the bundled head,
as `calibrate.refitted` would, and the small models scored. Nothing is measured and nothing stored is
changed. Writes benchmarks/results/<out>.json (default dispatch-size.json).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SIZES = (0, 256, 1024, 4096, 16384)  # 0: every call whole; fixed before any was scored
TOLERANCE = 0.1  # MAPE points


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from bench_latency_tiny import OWN, OWN_INPUTS

    from narcli.bench import calibrate, transfer
    from narcli.bench.calibration_eval import held_out_head
    from narcli.predict.bundle import load_bundle
    from narcli.predict.latency_parts import DISPATCH_ELEMENTS, DISPATCH_MS, dispatch_calls
    from narcli.scan.scanner import ScanOptions
    from narcli.search.targets import resolve_graphs
    from narcli.zoo.store import Zoo

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", type=Path, default=RESULTS / "latency-tiny-2026-12-07.json")
    parser.add_argument("--device", default="demo-1t", help="a one-thread device calibrated on this machine")
    parser.add_argument("--out", default="dispatch-size")
    args = parser.parse_args()
    reference = transfer.measured_on_reference()
    out: dict = {"sizes": list(SIZES), "shipped": DISPATCH_ELEMENTS, "runs": {}, "machine": machine()}

    with Zoo() as zoo:
        def split(head, name: str) -> tuple[np.ndarray, dict[int, float], str]:
            """The head's parts of a zoo model or an own small model, its calls counted at each size."""
            if name in OWN_INPUTS:
                graph = resolve_graphs(str(OWN / name), ScanOptions(input_shapes=[OWN_INPUTS[name][1]]))[0].graph
                parts, graph_hash = head.parts(graph, graph.macs, graph.params), ""
            else:
                model = zoo.resolve(name)
                graph, graph_hash = zoo.graph(model), model.graph_hash
                parts = head.parts(graph, model.macs, model.params)
            return parts, {size: dispatch_calls(graph, size) for size in SIZES}, graph_hash

        def at(rows: list[tuple[np.ndarray, dict[int, float], str]], size: int) -> np.ndarray:
            parts = np.stack([row[0] for row in rows])
            parts[:, -1] = [row[1][size] * DISPATCH_MS for row in rows]
            return parts

        def fit(rows: list, times: list[float], size: int, half: float) -> dict:
            candidates = [calibrate.Candidate("", 0, 0, {}, np.zeros(0), parts=row[0], graph_hash=row[2]) for row in rows]
            rescaled = transfer.fitting_parts(candidates, reference)
            rescaled[:, -1] = at(rows, size)[:, -1]
            return transfer.fit_head(transfer.work_columns(rescaled), np.log(times), prior_half=half)

        def score(fitted: dict, rows: list, truth: list[float], size: int) -> tuple[np.ndarray, np.ndarray]:
            centre = transfer.predict_log(fitted, at(rows, size))
            return np.exp(centre) / np.array(truth) - 1, np.abs(np.log(truth) - centre) <= fitted["half"]

        head = held_out_head()
        cache: dict[str, tuple] = {}
        for path in sorted(RESULTS.glob("calibration-1thread-*.json")):
            result = json.loads(path.read_text())
            if "held_out" not in result or (result.get("device") or {}).get("threads") != 1:
                continue
            chosen, held = result["calibration"][:20], result["held_out"]
            rows = [cache.setdefault(r["name"], split(head, r["name"])) for r in chosen]
            held_rows = [cache.setdefault(r["name"], split(head, r["name"])) for r in held]
            run = {}
            for size in SIZES:
                fitted = fit(rows, [r["ms"] for r in chosen], size, head.half)
                errors, inside = score(fitted, held_rows, [r["ms"] for r in held], size)
                run[str(size)] = {"mape": round(100 * float(np.mean(np.abs(errors))), 2),
                                  "coverage90": round(100 * float(inside.mean()), 1),
                                  "half_width_pct": round((math.exp(fitted["half"]) - 1) * 100, 1),
                                  "dispatch_scale": round(math.exp(fitted["scales"][-1]), 3)}
            out["runs"][path.stem] = run
            print(path.stem, " | ".join(f"{s}: {v['mape']:.1f} % {v['coverage90']:.0f} % ±{v['half_width_pct']:.0f}"
                                        for s, v in run.items()), flush=True)
        means = {str(size): {key: round(float(np.mean([run[str(size)][key] for run in out["runs"].values()])), 2)
                             for key in ("mape", "coverage90", "half_width_pct")} for size in SIZES}
        best = min(m["mape"] for m in means.values())
        chosen_size = max(size for size in SIZES if means[str(size)]["mape"] <= best + TOLERANCE)
        out |= {"mean_over_runs": means, "chosen": chosen_size}
        for size, m in means.items():
            print(f"E {size:>6}: mean held-out MAPE {m['mape']:.2f} %, coverage {m['coverage90']:.1f} %, "
                  f"±{m['half_width_pct']:.1f} % over {len(out['runs'])} runs")
        print(f"chosen by the rule: E = {chosen_size} (shipped: {DISPATCH_ELEMENTS})")

        bundled = load_bundle().latency
        device = json.loads((calibrate.devices_dir() / f"{args.device}.json").read_text())
        if "one_thread_models" in device:
            raise SystemExit(f"{args.device} is fitted over one thread: name a one-thread device")
        tiny = json.loads(args.tiny.read_text())["measured_ms"]
        rows = [split(bundled, m["name"]) for m in device["models"]]
        tiny_rows = [split(bundled, name) for name in tiny]
        out["small_models"] = {"device": args.device, "from": args.tiny.name, "sizes": {}}
        for size in SIZES:
            fitted = fit(rows, [m["ms"] for m in device["models"]], size, bundled.half)
            errors, inside = score(fitted, tiny_rows, list(tiny.values()), size)
            row = {"mape": round(100 * float(np.mean(np.abs(errors))), 1),
                   "median_error": round(100 * float(np.median(np.abs(errors))), 1),
                   "inside": f"{int(inside.sum())}/{len(inside)}",
                   "half_width_pct": round((math.exp(fitted["half"]) - 1) * 100, 1),
                   "errors_pct": {name: round(100 * e, 1) for name, e in zip(tiny, errors)}}
            out["small_models"]["sizes"][str(size)] = row
            print(f"small models, E {size:>6}: MAPE {row['mape']} %, median {row['median_error']} %, "
                  f"{row['inside']} inside ±{row['half_width_pct']} %")
    target = RESULTS / f"{args.out}.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
