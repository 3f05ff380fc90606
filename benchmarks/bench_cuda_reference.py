"""The CUDA reference latency set, measured on a lent GPU machine where nar is not installed.

    python benchmarks/bench_cuda_reference.py --write-picks picks.json [--sources smp,monai]  # here: what to measure
    NAR_HOME=DIR python benchmarks/bench_cuda_reference.py --picks picks.json --budget 500   # on the GPU

`nar bench --zoo --device cuda` does this on a machine where nar and its plugins are installed. The
lent machines have the libraries (timm, transformers, torchvision, torchaudio, torch-geometric) but
not nar, its entry points or the bundled zoo (too large to send), so this script takes the pick
list written here (the same round-robin order as `nar bench --zoo`), registers the plugins found
under plugins/ by hand, and measures each model with the same worker function and protocol
(`reference.measure_zoo_model(..., device="cuda")`), storing rows in $NAR_HOME/bench.db exactly as
`nar bench --zoo` does. Resumable: what is stored is skipped. Copy bench.db back and run
`NAR_HOME=DIR nar bench --zoo --device cuda --export FOLDER` (a set of the same device key already
in FOLDER is added to, one session per store).

    python benchmarks/bench_cuda_reference.py --compare-store bench.db [--against FOLDER]

compares a store that timed models of the set again (another lease) with the set as it was before
that store was exported into it: the labels' noise.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("classics", "timm", "torchvision", "transformers", "torchaudio", "pyg")


def write_picks(path: Path, sources: tuple[str, ...] = SOURCES) -> None:
    from narcli.bench.reference import candidates

    picks = [dataclasses.asdict(p) for p in candidates() if p.source in sources]
    path.write_text(json.dumps(picks))
    print(f"wrote {len(picks)} picks to {path}")


def register_plugins() -> list[str]:
    from narcli.zoo.plugins import register

    found = []
    for folder in sorted((ROOT / "plugins").glob("nar-*")):
        sys.path.insert(0, str(folder))
        module_name = folder.name.replace("-", "_")
        try:
            register(importlib.import_module(module_name), name=module_name)
            found.append(module_name)
        except Exception as exc:  # noqa: BLE001 - a library missing on that machine
            print(f"plugin {module_name} not loaded: {type(exc).__name__}: {str(exc)[:100]}")
    return found


def measure(picks_path: Path, budget: float, per_model: int, device: str = "cuda") -> None:
    import os

    os.environ["NAR_NO_PLUGINS"] = "1"
    sys.path.insert(0, str(ROOT))
    from narcli.bench import store
    from narcli.bench.device import device_info, machine_fingerprint
    from narcli.bench.reference import measure_zoo_model, reference_value
    from narcli.zoo.plugins import zoo_sources

    print("plugins:", register_plugins())
    installed = set(zoo_sources())
    info = device_info(device, None if device == "cuda" else 1)
    fingerprint = machine_fingerprint() | {"gpu": info.name}
    picks = [p for p in json.loads(picks_path.read_text()) if p["source"] in installed]
    done = store.known(info.key, 1)
    todo = [p for p in picks if p["graph_hash"] not in done]
    print(f"{len(picks)} picks on {info.describe()}, {len(picks) - len(todo)} stored, {len(todo)} to measure", flush=True)

    def alarm(*_):
        raise TimeoutError(f"over {per_model} s")

    signal.signal(signal.SIGALRM, alarm)
    began, measured = time.perf_counter(), 0
    for pick in todo:
        if time.perf_counter() - began > budget:
            break
        signal.alarm(per_model)
        try:
            value = measure_zoo_model(pick["source"], pick["id"], 0 if device == "cuda" else 1, None, device)
        except Exception as exc:  # noqa: BLE001 - one model's failure is recorded, the run goes on
            signal.alarm(0)
            store.save_failure(pick["graph_hash"], 1, info.key, pick["id"], type(exc).__name__, str(exc))
            print(f"failed {pick['id']}: {type(exc).__name__} {str(exc)[:80]}", flush=True)
            continue
        signal.alarm(0)
        row = reference_value(value, pick["id"], pick["graph_hash"], pick["params"], pick["macs"], info, fingerprint)
        store.save(pick["graph_hash"], 1, info.key, pick["id"], row)
        measured += 1
        print(f"{measured} {pick['id']}: {value['median_ms']:.3g} ms", flush=True)
    print(f"measured {measured} in {time.perf_counter() - began:.0f} s; "
          f"{len(store.known(info.key, 1, include_failed=False))} stored in all")


def compare(store_db: Path, against: Path) -> None:
    """The repeatability of the labels: a store's timings (another lease of the same kind of GPU)
    against the same graphs in a reference set — the set as it was before this store was exported
    into it (after, it holds the store's own timings); writes benchmarks/results/reference_noise_cuda.json."""
    import math
    import sqlite3
    import statistics

    sys.path.insert(0, str(ROOT))
    from common import change_figures, machine

    from narcli.predict.latency import read_reference

    rows, card = read_reference(against)
    stored = {r["graph_hash"]: r for r in rows}
    if not store_db.is_file():
        raise SystemExit(f"no store at {store_db}")
    with sqlite3.connect(f"file:{store_db}?mode=ro", uri=True) as connection:
        again = {h: (name, ms) for h, name, ms in connection.execute(
            "select graph_hash, name, median_ms from measurements where device = ? and batch = 1",
            (card["device"]["key"],))}
    common = [h for h in again if h in stored and stored[h]["median_ms"] > 0]
    if not common:
        raise SystemExit(f"{store_db} timed none of the {len(stored)} graphs of {against} (device {card['device']['key']})")
    ratios = [again[h][1] / stored[h]["median_ms"] for h in common]
    out = {"models": len(common), "device": card["device"], "stored_created": card.get("created"),
           **change_figures(ratios), "sd_log_ratio": round(statistics.pstdev([math.log(r) for r in ratios]), 3),
           "rows": [{"model": again[h][0], "stored_ms": stored[h]["median_ms"], "again_ms": round(again[h][1], 5)}
                    for h in common], "machine": machine()}
    print(f"{out['models']} models timed again on another lease: median |change| {out['median_abs_change_pct']} %, "
          f"within 10 % {out['within10_pct']} %, median ratio {out['median_ratio']}, sd of log ratio {out['sd_log_ratio']}")
    path = ROOT / "benchmarks" / "results" / "reference_noise_cuda.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-picks", type=Path)
    parser.add_argument("--sources", default=",".join(SOURCES),
                        help="with --write-picks: the zoo sources to pick from, comma-separated")
    parser.add_argument("--picks", type=Path)
    parser.add_argument("--budget", type=float, default=480)
    parser.add_argument("--per-model", type=int, default=60)
    parser.add_argument("--device", default="cuda", help="cuda (cpu: to try the script where there is no GPU)")
    parser.add_argument("--compare-store", type=Path, help="a bench.db re-timing models of --against (repeatability)")
    parser.add_argument("--against", type=Path, default=ROOT / "narcli" / "data" / "cuda")
    args = parser.parse_args()
    if args.compare_store:
        compare(args.compare_store, args.against)
    elif args.write_picks:
        write_picks(args.write_picks, tuple(s.strip() for s in args.sources.split(",") if s.strip()))
    elif args.picks:
        measure(args.picks, args.budget, args.per_model, args.device)
    else:
        parser.error("give --write-picks FILE or --picks FILE")


if __name__ == "__main__":
    main()
