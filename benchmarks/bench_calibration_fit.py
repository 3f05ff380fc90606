"""The calibration's per-part fit, offline, on measurements already taken: squared error against
Huber, and the parts as the reference head splits them against the parts rescaled to what the
reference machine measured (`transfer.fitting_parts`, what `nar calibrate` fits since 2026-11-28).

    python benchmarks/bench_calibration_fit.py [RESULT.json ...]

Reads `nar eval calibration --json` results (default: benchmarks/results/calibration-*.json), which
hold every measured calibration and held-out model, and fits the first K calibration models with
each variant (the ridge strength chosen by leave-one-out error as `nar calibrate` does), scoring
each on the held-out models: MAPE, interval coverage and half-width. The held-out models are
always predicted from the parts of the head fitted without their families (as `nar eval
calibration` does; a model a user brings has no reference time). The last variant is what `nar
calibrate` ships: its interval pooled with that head's own (`transfer.pooled_half`), whose weight
was chosen on the 2026-11-25 and 2026-11-27 runs; at more than one thread, the one-thread head times
thread factors fitted on the same models' one-thread times (`transfer.fit_over_one_thread`), chosen
over the pooled head on the 2026-11-25 and 2026-11-27 runs. At one thread the shipped head has the
head's per-call terms and the operation count as columns of their own (since 2026-12-06); the
variants beside it put the count at 3 or 30 µs a call instead of 10, or leave the calls column out,
and "the work parts alone" is the fit before; at two threads, the interval from the whole figure's
leave-one-out errors (`over_one_thread_loo`) was tried beside the shipped one, and the thread
factors' interval is shown unpooled (before 2026-12-07) and pooled with the other days' spread (the
shipped `THREAD_RATIO_HALF` has seen every day). Nothing is measured, so it runs anywhere the
bundled zoo is. Writes benchmarks/results/calibration-fit.json (or --out NAME).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def one_thread_times(path: Path, result: dict) -> dict[str, float]:
    """The calibration models' one-thread times for a run at more threads: stored beside each
    (`nar eval calibration` since 2026-12-01), else from the one-thread run of the same day and
    models (calibration-2threads-DATE.json beside calibration-1thread-DATE.json)."""
    found = {r["name"]: r["one_thread_ms"] for r in result["calibration"] if r.get("one_thread_ms")}
    sibling = path.with_name(path.name.replace("2threads", "1thread"))
    if found or sibling == path or not sibling.exists():
        return found
    return {r["name"]: r["ms"] for r in json.loads(sibling.read_text())["calibration"]}


def legacy_split(head, graph, macs: int, params: int) -> np.ndarray | None:
    """The reference prediction split as `nar calibrate` split it before 2026-12-05
    (`transfer.LEGACY_PARTS`): convolutions and matrix products of a million MACs or more together,
    the other compute, memory traffic, calls."""
    from narcli.graph.vocab import OPS
    from narcli.predict import latency, latency_parts

    current = head.parts(graph, macs, params)
    if current is None:
        return None
    run = latency.as_run(graph)
    ops, numeric, work = latency.node_features(run)
    terms = latency.node_cost_terms(head.weights, ops, numeric, work)
    dense = np.array([OPS.get(n.op, "") in ("convolution", "linear") and max(n.macs, 0) >= latency_parts.DENSE_MACS
                      for n in run.nodes] or [False])
    out = np.array([terms[dense, 0].sum(), terms[~dense, 0].sum(), terms[:, 1].sum(),
                    terms[:, 2].sum() + float(np.exp(head.weights["overhead"][0]))])
    return out * current[:len(latency_parts.PARTS)].sum() / out.sum()


def over_work_parts(work: np.ndarray, y_one: np.ndarray, y: np.ndarray, prior: float) -> dict:
    """The head over one thread as `nar calibrate` fitted it before 2026-12-05: a thread factor per
    work part (of `legacy_split`), its ridge pulling the four towards one common factor."""
    from narcli.bench import transfer

    one = transfer.fit_head(work, y_one, prior_half=prior)
    scaled = np.exp(np.array(one["scales"])) * work
    scaled *= (np.exp(y_one) / np.maximum(scaled.sum(1), 1e-12))[:, None]
    factors = transfer.fit_head(scaled, y)
    return one | {"scales": (np.array(one["scales"]) + np.array(factors["scales"])).tolist(),
                  "half": max(factors["half"], one["half"])}


def over_one_thread_loo(parts: np.ndarray, y_one: np.ndarray, y: np.ndarray, one_prior: float,
                        thread_prior: float, shape: np.ndarray, delta: float = 0.1) -> np.ndarray:
    """Leave-one-out log errors of the whole figure a head over one thread gives: for each model,
    the one-thread scales and the thread factors both fitted without it (at the ridge strengths
    chosen on all), and its time at these threads predicted from its parts alone. Tried on 2026-12-07
    as the interval of a head over one thread instead of the wider of its two parts' intervals: on the
    eight dated two-thread runs the mean width came out the same (±40 against ±40 %), wider on three
    and coverage lower on four; not shipped."""
    from narcli.bench import transfer

    work, share = transfer.prediction_columns(parts), transfer.thread_share(parts)
    errors = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        one = transfer.fit_scales(work[keep], y_one[keep], one_prior, delta=delta)
        factors = transfer.fit_scales(share[keep] * np.exp(y_one[keep])[:, None] * np.exp(shape), y[keep],
                                      thread_prior, delta=delta) + shape
        centre = transfer._predict(one, work[i:i + 1])[0] + math.log(max(float(share[i] @ np.exp(factors)), 1e-12))
        errors.append(float(centre - y[i]))
    return np.array(errors)


def thread_pairs(files: list[Path], parts) -> dict[Path, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per two-thread result with one-thread times beside it: (parts, log ms at one thread, log ms at
    two) of every model timed at both, held-out and calibration models alike. Only dated runs
    (calibration-2threads-DAY.json): the undated ones rescore a dated run's timings."""
    out = {}
    for path in files:
        if not path.stem.removeprefix("calibration-2threads-")[:1].isdigit():
            continue
        result = json.loads(path.read_text())
        if "held_out" not in result or result["device"]["threads"] <= 1:
            continue
        sibling = path.with_name(path.name.replace("2threads", "1thread"))
        one = {r["name"]: r["ms"] for r in json.loads(sibling.read_text()).get("held_out", [])} if sibling.exists() else {}
        one |= one_thread_times(path, result)
        rows = [r for r in result["held_out"] + result["calibration"] if r["name"] in one]
        if rows:
            out[path] = (np.stack([parts(r["name"]) for r in rows]), np.log([one[r["name"]] for r in rows]),
                         np.log([r["ms"] for r in rows]))
    return out


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from narcli.bench import calibrate, transfer
    from narcli.bench.calibration_eval import held_out_head
    from narcli.predict import latency_parts
    from narcli.predict.metrics import spearman
    from narcli.zoo.store import Zoo

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", type=Path, help="`nar eval calibration --json` results")
    parser.add_argument("--out", default="calibration-fit", help="results file name, under benchmarks/results")
    args = parser.parse_args()
    name = args.out
    files = args.results or sorted(RESULTS.glob("calibration-*thread*.json"))
    head = held_out_head()
    out = {}
    reference = transfer.measured_on_reference()
    with Zoo() as zoo:
        def parts(name: str) -> np.ndarray:
            model = zoo.resolve(name)
            return head.parts(zoo.graph(model), model.macs, model.params)

        def legacy(name: str) -> np.ndarray:
            model = zoo.resolve(name)
            return legacy_split(head, zoo.graph(model), model.macs, model.params)

        def rescaled(names: list[str], split: np.ndarray) -> np.ndarray:  # to the reference machine's times
            return transfer.fitting_parts([calibrate.Candidate(name, 0, 0, {}, np.zeros(0), parts=row,
                                                               graph_hash=zoo.resolve(name).graph_hash)
                                           for name, row in zip(names, split)], reference)

        pairs = thread_pairs(files, parts)  # every model timed at one thread and at two, per file
        if pairs:
            every = [np.concatenate(column) for column in zip(*pairs.values())]
            out["thread_shape_all_days"] = transfer.thread_shape(*every)
            out["thread_ratio_half_all_days"] = round(transfer.thread_ratio_half(list(pairs.values())), 4)
            print(f"thread factors' 90 % half-width over those days: {out['thread_ratio_half_all_days']} "
                  f"(shipped THREAD_RATIO_HALF {transfer.THREAD_RATIO_HALF})")
            print(f"thread shape over {len(every[0])} one- and two-thread timings: {out['thread_shape_all_days']} "
                  f"(shipped THREAD_SHAPE {transfer.THREAD_SHAPE})")
        for path in files:
            result = json.loads(path.read_text())
            if "held_out" not in result:  # this script's own outputs (calibration-fit-*-threads.json) match the glob
                continue
            truth = np.array([r["ms"] for r in result["held_out"]])
            held_out = np.stack([parts(r["name"]) for r in result["held_out"]])
            held_out_legacy = np.stack([legacy(r["name"]) for r in result["held_out"]])
            one = one_thread_times(path, result)
            many = result["device"]["threads"] > 1
            for k in (3, 5, 10, 20, 40):
                chosen = result["calibration"][:k]
                if many and one:  # the head over one thread needs both times: models without one left out
                    chosen = [r for r in chosen if r["name"] in one]
                names = [r["name"] for r in chosen]
                y = np.log([r["ms"] for r in chosen])
                y_one = np.log([one[n] for n in names]) if many and one else None
                fitted = np.stack([parts(n) for n in names])
                measured = rescaled(names, fitted)
                # rescaled to the reference machine's times as the current split is (both sum to the prediction)
                measured_legacy = np.stack([legacy(n) for n in names]) * (
                    transfer.predicted_ms(measured) / transfer.predicted_ms(fitted))[:, None]
                work = transfer.work_columns
                pooled = f"interval pooled ({transfer.INTERVAL})"
                # label -> (fit, parts the fit predicts from, the prior interval)
                variants = {
                    "squared": (lambda: transfer.fit_head(work(fitted), y, np.inf), held_out, None),
                    "huber": (lambda: transfer.fit_head(work(fitted), y), held_out, None),
                    "huber, reference-measured parts": (lambda: transfer.fit_head(work(measured), y), held_out, None),
                    f"{pooled}, parts before 2026-12-05 ({'/'.join(transfer.LEGACY_PARTS)})":
                        (lambda: transfer.fit_head(measured_legacy, y, prior_half=head.half), held_out_legacy, head.half),
                    f"{pooled}, the work parts alone (no calls or dispatch columns: until 2026-12-06)":
                        (lambda: transfer.fit_head(transfer.prediction_columns(measured), y, prior_half=head.half),
                         transfer.prediction_columns(held_out), head.half),
                    f"as shipped: {pooled}" if not many else f"{pooled}, on these threads' times alone":
                        (lambda: transfer.fit_head(work(measured), y, prior_half=head.half), held_out, head.half)}
                if not many:  # the per-call cost's unit, and the operation count without the calls column
                    def at(rows: np.ndarray, unit: float, calls: bool = True) -> np.ndarray:
                        columns = work(rows) * np.append(np.ones(4), unit / (latency_parts.DISPATCH_MS * 1000))
                        return columns if calls else np.column_stack([columns[:, :2], columns[:, 2] + columns[:, 3],
                                                                      columns[:, 4]])

                    for unit, calls in ((3, True), (30, True), (3, False), (10, False), (30, False)):
                        label = f"{pooled}, operations at {unit} µs a call" + ("" if calls else ", no calls column")
                        variants[label] = ((lambda unit=unit, calls=calls: transfer.fit_head(
                            at(measured, unit, calls), y, prior_half=head.half)), at(held_out, unit, calls), head.half)
                if many and one:
                    variants["over one thread as before 2026-12-05 (a factor per work part before 2026-12-05)"] = (
                        lambda: over_work_parts(measured_legacy, y_one, y, head.half), held_out_legacy, head.half)
                    variants[f"as shipped: over one thread ({transfer.THREADS_FIT})"] = (
                        lambda: transfer.fit_over_one_thread(measured, y_one, y, prior_half=head.half), held_out,
                        head.half)
                    probe = result.get("pointwise_probe")
                    if probe:  # 2026-12-05 to 12-07: the pointwise part's prior where the run's probe put it
                        probed = (*transfer.THREAD_SHAPE[:-1], min(max(float(probe["relative"]), -1.0), 3.0))
                        variants["over one thread, the pointwise prior from the run's probe (until 2026-12-07)"] = (
                            lambda: transfer.fit_over_one_thread(measured, y_one, y, prior_half=head.half,
                                                                 shape=probed), held_out, head.half)
                    def composed(prior: float) -> dict:  # the interval from the whole figure's leave-one-out errors
                        fit = transfer.fit_over_one_thread(measured, y_one, y, prior_half=head.half)
                        errors = over_one_thread_loo(measured, y_one, y, fit["prior"], fit["thread_prior"],
                                                     np.array(transfer.THREAD_SHAPE))
                        return fit | {"half": transfer.pooled_half(transfer.robust_half(errors), len(y), prior)}

                    variants["over one thread, interval from the composed leave-one-out errors"] = (
                        lambda: composed(head.half), held_out, head.half)
                    # ... pooled with both priors' spreads, added in quadrature
                    variants["over one thread, composed leave-one-out errors pooled with both priors"] = (
                        lambda: composed(math.hypot(head.half, transfer.THREAD_RATIO_HALF)), held_out, head.half)
                    variants["over one thread, the factors' interval unpooled (until 2026-12-07)"] = (
                        lambda: (lambda fit: fit | {"half": max(fit["loo_half"], fit["one_thread_half"])})(
                            transfer.fit_over_one_thread(measured, y_one, y, prior_half=head.half, ratio_half=None)),
                        held_out, head.half)
                    variants["over one thread, the two intervals added in quadrature"] = (
                        lambda: (lambda fit: fit | {"half": math.hypot(fit["factors_half"], fit["one_thread_half"])})(
                            transfer.fit_over_one_thread(measured, y_one, y, prior_half=head.half)),
                        held_out, head.half)
                    if len(pairs) > 1 and path in pairs:  # the shipped prior has seen this day: here it has not
                        other_days = transfer.thread_ratio_half([v for p, v in pairs.items() if p != path])
                        variants["over one thread, factor interval pooled with the other days' spread"] = (
                            lambda: transfer.fit_over_one_thread(measured, y_one, y, prior_half=head.half,
                                                                 ratio_half=other_days), held_out, head.half)
                    others = [v for other, v in pairs.items() if other != path]
                    if others:  # THREAD_SHAPE was set on every day's timings, this one's too: here it is not
                        shape = transfer.thread_shape(*[np.concatenate(c) for c in zip(*others)])
                        variants["over one thread, thread shape from the other days' timings"] = (
                            lambda: transfer.fit_over_one_thread(measured, y_one, y, prior_half=head.half, shape=shape),
                            held_out, head.half)
                row = {}
                for label, (fit_it, predict_from, prior) in variants.items():
                    fit = fit_it()
                    centre = transfer.predict_log(fit, predict_from) if predict_from is held_out else \
                        transfer._predict(np.array(fit["scales"]), predict_from)
                    error = np.abs(np.exp(centre) - truth) / truth
                    row[label] = {"mape": round(float(error.mean() * 100), 1),
                                  "spearman": round(spearman(np.exp(centre), truth), 3),
                                  "median_error": round(float(np.median(error) * 100), 1),
                                  "coverage90": round(float((np.abs(np.log(truth) - centre) <= fit["half"]).mean() * 100)),
                                  "half_width_pct": round(float((np.exp(fit["half"]) - 1) * 100))}
                key = f"{path.stem} K={len(chosen)}"
                out[key] = row
                if k == 20:
                    print(key)
                    for label, figures in row.items():
                        print(f"  {label:<72} MAPE {figures['mape']:5.1f}  median {figures['median_error']:5.1f}  "
                              f"coverage {figures['coverage90']:3d} %  ±{figures['half_width_pct']} %")
    target = RESULTS / f"{name}.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
