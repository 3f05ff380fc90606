"""Small models after `nar calibrate`: the calibration set as shipped, and with a few dispatch-bound
zoo models added to it.

    python benchmarks/bench_latency_tiny.py [--device demo-1t] [--add 4] [--held-out RESULT.json ...] [--out NAME]

`nar calibrate` and `nar eval calibration` choose zoo models of 0.05-20 GMACs
(`calibration_set.LOW_MACS`), so a calibration never times a model whose time is mostly operation
calls, and its dispatch column (`latency_parts.DISPATCH_MS` a call, scaled by the fit) is set by
models where it is a small share. This times, at `--device`'s threads with `nar bench --json` (and
at one thread too for a device over more: its head is fitted over one thread), ten zoo models
under that range that the reference machine measured (`TINY_ZOO`, four sources) and two small models
written for this check (`benchmarks/latency_tiny`: a tabular net with a hand-written layer norm and
GELU, a Gaussian policy with hand-written log-probabilities); a timing the machine calls busy is
left out. Then it fits `--device`'s head again from its stored models (`calibrate.fit_on_times`, as
a stored head is refitted), once as they are and once with the first `--add` of `TINY_ZOO` among
them, and scores both on the
other small models and on the held-out models of `nar eval calibration --json` results at the
device's threads (their stored timings; predicted from the bundled head's parts, where the evaluation uses
the head fitted without their families). Nothing is stored; the device head is not changed.
Writes benchmarks/results/<out>.json (default latency-tiny.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from common import machine, nar_command, run_json

ROOT = Path(__file__).resolve().parent.parent
OWN = ROOT / "benchmarks" / "latency_tiny"
OWN_INPUTS = {"tabnet.py": ["-i", "16,32"], "policy.py": ["-i", "1,17"]}
# the first ones join the calibration (`--add`): one per source and size, fixed before any was scored
TINY_ZOO = ("classics/dqn_mlp_lunar", "classics/vae_dense_mnist", "pyg/gin_base_graph", "classics/rnn_forecaster_small",
            "classics/actor_critic_lunar", "pyg/graphsage_small_node", "classics/tcn_forecast", "timm/test_vit",
            "classics/lenet5", "pyg/gcn_small_node")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="demo-1t", help="a device calibrated on this machine")
    parser.add_argument("--add", type=int, default=4)
    parser.add_argument("--held-out", nargs="*", default=[], type=Path)
    parser.add_argument("--out", default="latency-tiny")
    args = parser.parse_args()

    from narcli.bench.calibrate import devices_dir, fit_on_times
    from narcli.bench.calibration_set import Candidate, with_parts
    from narcli.bench.transfer import predict_log
    from narcli.predict.bundle import load_bundle
    from narcli.scan.scanner import ScanOptions
    from narcli.search.targets import resolve_graphs

    device = json.loads((devices_dir() / f"{args.device}.json").read_text())
    threads = device["device"].get("threads") or 1
    over_one = "one_thread_models" in device  # fitted over one thread: its models' one-thread times too
    nar = nar_command()
    measured: dict[str, float] = {}
    one_thread: dict[str, float] = {}
    own: dict[str, tuple[str, list[str]]] = {}
    for name, inputs in [(n, []) for n in TINY_ZOO] + [(str(OWN / f), i) for f, i in OWN_INPUTS.items()]:
        label = Path(name).name if inputs else name
        times = {}
        for count in sorted({threads, 1} if over_one else {threads}):
            row = run_json(nar + ["bench", name, *inputs, "--threads", str(count), "--json"])
            print(f"{label} at {count} thread(s): {row['median_ms']:.4f} ms{' (busy: left out)' if row['busy'] else ''}",
                  flush=True)
            if not row["busy"]:
                times[count] = row["median_ms"]
        if threads in times and (not over_one or 1 in times):
            measured[label] = times[threads]
            if over_one:
                one_thread[label] = times[1]
            if inputs:
                own[label] = (name, inputs[1].split(";"))

    head = load_bundle().latency

    def parts_of(name: str) -> np.ndarray:
        graph = resolve_graphs(own[name][0], ScanOptions(input_shapes=own[name][1]))[0].graph if name in own \
            else resolve_graphs(name)[0].graph
        return head.parts(graph, graph.macs, graph.params)

    def fit(times: dict[str, float], one: dict[str, float] | None) -> dict:  # as `calibrate.refitted` fits
        return fit_on_times(with_parts([Candidate(n, 0, 0, {}, np.zeros(0)) for n in times]), times, one)[0]

    base = {m["name"]: m["ms"] for m in device["models"]}
    base_one = {m["name"]: m["ms"] for m in device["one_thread_models"]} if over_one else None
    added = [n for n in TINY_ZOO[:args.add] if n in measured]
    scored = {"small models": {n: ms for n, ms in measured.items() if n not in added}}
    for path in args.held_out:
        result = json.loads(path.read_text())
        if (result.get("device") or {}).get("threads") != threads:
            raise SystemExit(f"{path} was not measured at {threads} thread(s)")
        scored[f"held out, {path.stem}"] = {r["name"]: r["ms"] for r in result["held_out"]}
    parts = {n: parts_of(n) for rows in scored.values() for n in rows}
    out = {"device": args.device, "threads": threads, "calibration_models": len(base), "added": added,
           "measured_ms": measured, "one_thread_ms": one_thread, "variants": {}, "machine": machine()}
    with_added = (base | {n: measured[n] for n in added}, None if base_one is None else base_one | {n: one_thread[n] for n in added})
    for label, (times, one) in (("as shipped", (base, base_one)), (f"with {len(added)} small zoo models", with_added)):
        fitted = fit(times, one)
        variant = {"scales": [round(float(s), 3) for s in np.exp(fitted["scales"])], "half_pct":
                   round(float(np.expm1(fitted["half"]) * 100), 1), "loo_mape": fitted.get("loo_mape"), "sets": {}}
        if "thread_scales" in fitted:  # over one thread: the one-thread head scales the work parts alone
            variant["thread_factors"] = [round(float(s), 3) for s in np.exp(fitted["thread_scales"])]
        print(f"{label}: scales {variant['scales']} (`transfer.FIT_COLUMNS`, or its work parts over one thread), "
              f"thread factors {variant.get('thread_factors', '-')}, ±{variant['half_pct']} %")
        for name, rows in scored.items():
            errors = {n: float(np.exp(predict_log(fitted, np.atleast_2d(parts[n]))[0]) / ms - 1) for n, ms in rows.items()}
            inside = int(sum(abs(np.log1p(e)) <= fitted["half"] for e in errors.values()))
            variant["sets"][name] = {"models": len(errors), "mape": round(100 * float(np.mean(np.abs(list(errors.values())))), 1),
                                     "median_error": round(100 * float(np.median(np.abs(list(errors.values())))), 1),
                                     "inside": inside, "errors_pct": {n: round(100 * e, 1) for n, e in errors.items()}}
            s = variant["sets"][name]
            print(f"  {name}: {s['models']} models, MAPE {s['mape']} %, median {s['median_error']} %, {inside} inside")
        out["variants"][label] = variant
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
