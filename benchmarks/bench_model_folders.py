"""Model folders: does a Hugging Face / timm `config.json` folder scan and find its own zoo architecture?

    python benchmarks/bench_model_folders.py [--hf 30] [--timm 20] [--seed 0]

Samples zoo models: transformers model types (half as the base model, `config.json` without
`architectures`; half as a task head, with `architectures` naming the class) and timm models (the
config timm itself writes for the Hub, `save_config_for_hf`). Each folder holds only config.json.
`nar similar FOLDER` (library call, nothing cached) must put the model's own zoo architecture first
at cosine >= 0.99 (ties at the top cosine count: two zoo architectures can embed identically).
Writes benchmarks/results/model-folders.json. Targets (issue 22): 30 transformers types, 20 timm models.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TIE = 1e-4


def hf_folders(zoo, count: int, rng: random.Random, root: Path) -> list[tuple[str, Path]]:
    import transformers
    from transformers import AutoConfig

    from narcli.zoo.plugins import get_sources

    [source] = get_sources(["transformers"])
    entries = {e.name: e for e in source.list_models()}
    ok = {m.name for m in zoo.models(source="transformers")}
    types = sorted({name.split("/")[0] for name in ok if name in entries})
    out = []
    for i, model_type in enumerate(rng.sample(types, count)):
        heads = sorted(n for n in ok if n.startswith(model_type + "/") and n in entries)
        name = rng.choice(heads) if i % 2 and heads else model_type
        if name not in ok:
            name = heads[0] if heads else model_type
        config = AutoConfig.for_model(model_type)
        if name != model_type:
            config.architectures = [entries[name].extra["class"]]
            getattr(transformers, entries[name].extra["class"])  # the class exists
        folder = root / f"hf-{name.replace('/', '--')}"
        config.save_pretrained(folder)
        out.append((f"hf/{name}", folder))
    return out


def timm_folders(zoo, count: int, rng: random.Random, root: Path) -> list[tuple[str, Path]]:
    import timm
    import torch
    from timm.models._hub import save_config_for_hf

    seen, models = set(), []
    for m in zoo.models(source="timm"):
        if m.graph_hash not in seen:
            seen.add(m.graph_hash)
            models.append(m)
    out = []
    for m in rng.sample(models, count):
        with torch.device("meta"):
            model = timm.create_model(m.name, pretrained=False)
        folder = root / f"timm-{m.name}"
        folder.mkdir()
        save_config_for_hf(model, folder / "config.json")
        out.append((m.id, folder))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hf", type=int, default=30)
    parser.add_argument("--timm", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["NAR_HOME"] = str(Path(tmp) / "home")  # nothing the user scanned joins the search
        from narcli.scan.scanner import ScanOptions
        from narcli.search.similar import find_similar
        from narcli.trace.compat import ensure_torchvision_importable
        from narcli.zoo.store import Zoo

        ensure_torchvision_importable()
        zoo = Zoo()
        rng = random.Random(args.seed)
        folders = hf_folders(zoo, args.hf, rng, Path(tmp)) + timm_folders(zoo, args.timm, rng, Path(tmp))
        rows = []
        for i, (expected, folder) in enumerate(folders):
            start = time.perf_counter()
            try:
                [result] = find_similar(str(folder), 5, options=ScanOptions(use_cache=False, timeout=300))
            except Exception as exc:  # noqa: BLE001 - a failure is a row of the table
                rows.append({"expected": expected, "error": f"{type(exc).__name__}: {exc}"[:300]})
                print(f"{i + 1:2d}/{len(folders)} {expected:50s} ERROR {rows[-1]['error']}", flush=True)
                continue
            seconds = time.perf_counter() - start
            top = result.neighbours[0]
            same = expected in result.identical
            at_top = [n for n in result.neighbours if n.cosine >= top.cosine - TIE]
            own = next((n for n in result.neighbours if expected in [n.name, *n.aliases]), None)
            hit = (same or any(expected in [n.name, *n.aliases] for n in at_top)) and top.cosine >= 0.99
            strict = expected in [top.name, *top.aliases] or same
            rows.append({"expected": expected, "first": top.name, "cosine": round(top.cosine, 4),
                         "own_cosine": round(own.cosine, 4) if own else (1.0 if same else None),
                         "same_graph": same, "hit": hit, "strict": strict, "seconds": round(seconds, 2)})
            print(f"{i + 1:2d}/{len(folders)} {expected:50s} first {top.name:45s} {top.cosine:.3f} "
                  f"{'ok' if hit else 'MISS'}{' (same graph)' if same else ''}", flush=True)

    def rate(prefix: str, key: str) -> float:
        part = [r for r in rows if r["expected"].startswith(prefix)]
        return sum(bool(r.get(key)) for r in part) / max(len(part), 1)

    result = {"machine": machine(), "seed": args.seed, "hf": args.hf, "timm": args.timm,
              "hf_hit": rate("hf/", "hit"), "timm_hit": rate("timm/", "hit"),
              "hf_strict": rate("hf/", "strict"), "timm_strict": rate("timm/", "strict"),
              "hf_same_graph": rate("hf/", "same_graph"), "timm_same_graph": rate("timm/", "same_graph"),
              "errors": [r for r in rows if "error" in r], "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "model-folders.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"\ntransformers folders: own architecture first at cosine >= 0.99: {result['hf_hit']:.3f} "
          f"(strictly first {result['hf_strict']:.3f}, same graph {result['hf_same_graph']:.3f}); "
          f"timm: {result['timm_hit']:.3f} (strict {result['timm_strict']:.3f}, same graph "
          f"{result['timm_same_graph']:.3f}); errors {len(result['errors'])}")
    for r in rows:
        if not r.get("hit"):
            print("  miss", json.dumps(r))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
