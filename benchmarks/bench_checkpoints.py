"""Checkpoint identification: does a bare checkpoint's header name its zoo architecture?

    python benchmarks/bench_checkpoints.py [--count 200] [--seed 0]

Samples zoo architectures from every source (small and large alike), builds each model afresh on
the meta device through its source, and writes what `torch.save(model.state_dict())` would hold
as a safetensors header (tied weights twice, `num_batches_tracked` included; the data is a hole in
a sparse file, so no weights are allocated). Each is identified twice:
- plain: the state dict as it is;
- wrapped: a `module.` prefix, an EMA copy of every tensor under `model_ema.`, and the last layer
  resized to 7 outputs (a new classifier).
A hit is the exact architecture first, or a zoo model with the very same tensors listed beside it
(models that differ only in parameter-free ops cannot be told apart by their weights; reported).
Also times the identification of a 7B Llama checkpoint (two shards) in a fresh process.
Writes benchmarks/results/checkpoints.json. Targets (issue 22): plain >= 98 %, wrapped >= 95 %,
7B identification <= 1 s, no torch import for safetensors.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import imports_torch, machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
QUOTAS = {"timm": 90, "transformers": 80, "torchvision": 30}


def write_header(path: Path, shapes: list[tuple[str, tuple[int, ...]]]) -> Path:
    from narcli.trace.checkpoint import write_safetensors_header

    return write_safetensors_header(path, shapes)


def wrapped(shapes: list[tuple[str, tuple[int, ...]]]) -> list[tuple[str, tuple[int, ...]]]:
    """`module.` prefix, an EMA copy, and the last 2-D weight (and its bias) resized to 7 outputs."""
    last = max((i for i, (n, s) in enumerate(shapes) if len(s) == 2 and n.endswith("weight")), default=None)
    out = list(shapes)
    if last is not None:
        name, shape = out[last]
        out[last] = (name, (7, *shape[1:]))
        bias = name[: -len("weight")] + "bias"
        out = [(n, (7,) if n == bias else s) for n, s in out]
    return [(f"module.{n}", s) for n, s in out] + [(f"model_ema.{n}", s) for n, s in out]


def sample(zoo, count: int, seed: int) -> list:
    """Architectures (one model per graph hash) with a signature, per source half below and half
    above the source's median size."""
    from narcli.zoo.signatures import load_sketches

    have = set(load_sketches(zoo).ids)
    rng = random.Random(seed)
    chosen = []
    for source, quota in QUOTAS.items():
        quota = round(quota * count / sum(QUOTAS.values()))
        seen, models = set(), []
        for m in zoo.models(source=source):
            if m.id in have and m.graph_hash not in seen:
                seen.add(m.graph_hash)
                models.append(m)
        models.sort(key=lambda m: m.params or 0)
        half = len(models) // 2
        small, large = models[:half], models[half:]
        chosen += rng.sample(small, min(quota // 2, len(small))) + rng.sample(large, min(quota - quota // 2, len(large)))
    return chosen


def llama_7b(folder: Path) -> int:
    """Two safetensors shards of a Llama-2-7B-sized checkpoint (LlamaConfig's defaults); tensor count."""
    from narcli.trace.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(LlamaConfig())
    shapes = [(n, tuple(t.shape)) for n, t in model.state_dict().items()]
    half = len(shapes) // 2
    write_header(folder / "model-00001-of-00002.safetensors", shapes[:half])
    write_header(folder / "model-00002-of-00002.safetensors", shapes[half:])
    return len(shapes)


TIMED = """
import time, sys, json
start = time.perf_counter()
from pathlib import Path
from narcli.search.identify import identify_checkpoint
found = identify_checkpoint(Path(sys.argv[1]))
print(json.dumps({"seconds": time.perf_counter() - start, "best": found.best.id, "exact": found.best.exact,
                  "same_as": found.best.same_as, "torch": "torch" in sys.modules}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="checkpoints")
    args = parser.parse_args()

    from narcli.search.identify import identify_checkpoint
    from narcli.trace.compat import ensure_torchvision_importable
    from narcli.zoo.plugins import get_sources
    from narcli.zoo.store import Zoo

    ensure_torchvision_importable()
    zoo = Zoo()
    chosen = sample(zoo, args.count, args.seed)
    sources = {s.name: s for s in get_sources(list(QUOTAS))}
    entries = {name: {e.name: e for e in s.list_models()} for name, s in sources.items()}
    rows, misses = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, model in enumerate(chosen):
            source = sources[model.source]
            built = source.build(entries[model.source][model.name])
            module = built.weights if built.weights is not None else built.module
            shapes = [(n, tuple(t.shape)) for n, t in module.state_dict().items()]
            row = {"id": model.id, "params": model.params, "tensors": len(shapes)}
            for variant, tensors in (("plain", shapes), ("wrapped", wrapped(shapes))):
                path = write_header(Path(tmp) / f"{i}-{variant}.safetensors", tensors)
                found = identify_checkpoint(path, 3, zoo)
                best = found.best
                row[variant] = {"best": best.id, "share": round(best.share, 4), "exact": best.exact,
                                "hit": model.id == best.id or model.id in best.same_as,
                                "strict": model.id == best.id, "seconds": found.seconds}
                if not row[variant]["hit"]:
                    misses.append((variant, model.id, best.id, round(best.share, 3)))
                path.unlink()
            rows.append(row)
            print(f"{i + 1:3d}/{len(chosen)} {model.id:55s} plain {row['plain']['best']:40s} "
                  f"{'ok' if row['plain']['hit'] else 'MISS'}  wrapped {'ok' if row['wrapped']['hit'] else 'MISS'}",
                  flush=True)
        folder = Path(tmp) / "llama-7b"
        folder.mkdir()
        tensors_7b = llama_7b(folder)
        timed = [json.loads(subprocess.run([sys.executable, "-c", TIMED, str(folder)], capture_output=True,
                                           text=True, check=True).stdout) for _ in range(3)]
        start = time.perf_counter()
        scan = subprocess.run([str(Path(sys.executable).with_name("nar")), "scan", str(folder)], capture_output=True,
                              text=True)
        scan_wall = time.perf_counter() - start
        no_torch = not imports_torch(["scan", str(folder)], dict(__import__("os").environ))

    def rate(variant: str, key: str = "hit") -> float:
        return sum(r[variant][key] for r in rows) / len(rows)

    by_source: dict[str, dict[str, float]] = {}
    for source in QUOTAS:
        part = [r for r in rows if zoo.resolve(r["id"]).source == source]
        if part:
            by_source[source] = {"n": len(part), "plain": sum(r["plain"]["hit"] for r in part) / len(part),
                                 "wrapped": sum(r["wrapped"]["hit"] for r in part) / len(part)}
    result = {
        "machine": machine(), "count": len(rows), "seed": args.seed,
        "plain_top1": rate("plain"), "wrapped_top1": rate("wrapped"),
        "plain_strict_id": rate("plain", "strict"), "wrapped_strict_id": rate("wrapped", "strict"),
        "plain_exact": rate("plain", "exact"),
        "by_source": by_source, "misses": misses,
        "params_range": [min(r["params"] for r in rows), max(r["params"] for r in rows)],
        "identify_seconds_median": sorted(r["plain"]["seconds"] for r in rows)[len(rows) // 2],
        "llama_7b": {"tensors": tensors_7b, "fresh_process_seconds": [round(t["seconds"], 3) for t in timed],
                     "best": timed[0]["best"], "exact": timed[0]["exact"], "torch_imported": timed[0]["torch"],
                     "nar_scan_wall_seconds": round(scan_wall, 3), "nar_scan_ok": scan.returncode == 0,
                     "nar_scan_imports_torch": not no_torch},
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"{args.out}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"\nplain: top-1 {result['plain_top1']:.3f} (same id {result['plain_strict_id']:.3f}, exact "
          f"{result['plain_exact']:.3f}); wrapped (module. + EMA copy + new head): top-1 {result['wrapped_top1']:.3f}")
    for source, figures in by_source.items():
        print(f"  {source:12s} n={figures['n']:3d}  plain {figures['plain']:.3f}  wrapped {figures['wrapped']:.3f}")
    for miss in misses:
        print("  miss", *miss)
    s = result["llama_7b"]
    print(f"7B Llama ({s['tensors']} tensors, 2 shards): identified as {s['best']} in "
          f"{min(s['fresh_process_seconds']):.3f} s (fresh process, imports included); `nar scan` wall "
          f"{s['nar_scan_wall_seconds']:.2f} s; torch imported: {s['torch_imported'] or s['nar_scan_imports_torch']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
