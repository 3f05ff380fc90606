"""The CUDA reference latency set, measured on a lent GPU machine where nar is not installed.

    python benchmarks/bench_cuda_reference.py --write-picks picks.json      # here: what to measure
    NAR_HOME=DIR python benchmarks/bench_cuda_reference.py --picks picks.json --budget 500   # on the GPU

`nar bench --zoo --device cuda` does this on a machine where nar and its plugins are installed. The
lent machines have the libraries (timm, transformers, torchvision, torchaudio, torch-geometric) but
not nar, its entry points or the bundled zoo (too large to send), so this script takes the pick
list written here (the same round-robin order as `nar bench --zoo`), registers the plugins found
under plugins/ by hand, and measures each model with the same worker function and protocol
(`reference.measure_zoo_model(..., device="cuda")`), storing rows in $NAR_HOME/bench.db exactly as
`nar bench --zoo` does. Resumable: what is stored is skipped. Copy bench.db back and run
`NAR_HOME=DIR nar bench --zoo --device cuda --export FOLDER`.
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


def write_picks(path: Path) -> None:
    from narcli.bench.reference import candidates

    picks = [dataclasses.asdict(p) for p in candidates() if p.source in SOURCES]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-picks", type=Path)
    parser.add_argument("--picks", type=Path)
    parser.add_argument("--budget", type=float, default=480)
    parser.add_argument("--per-model", type=int, default=60)
    parser.add_argument("--device", default="cuda", help="cuda (cpu: to try the script where there is no GPU)")
    args = parser.parse_args()
    if args.write_picks:
        write_picks(args.write_picks)
    elif args.picks:
        measure(args.picks, args.budget, args.per_model, args.device)
    else:
        parser.error("give --write-picks FILE or --picks FILE")


if __name__ == "__main__":
    main()
