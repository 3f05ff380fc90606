"""Audit of the zoo's sizes: each ok zoo model's stored MACs and parameters against an independent count.

    python benchmarks/bench_sizes.py [--sources timm,hf] [--sample N] [--jobs 1] [--timeout 300]

Each model is built again by its source plugin on the `meta` device, at the input the zoo
records, in an isolated worker (nar's pool: a timeout per model, a crash is one row), and counted
by tests/independent_count.py: parameters as `sum(p.numel() for p in module.parameters())`, MACs
by torch's FLOP counter (`FlopCounterMode`, halved), attention products from q, k and v's shapes.
Where the counter cannot see or run the work, the row says how it was counted instead:
- mixture-of-experts layers (routing reads values meta tensors lack): by hand, tokens · k · one
  expert's weights (`expert_macs`);
- a forward that fails on meta: again on CPU with real tensors when the weights fit (`counted_on`);
- the counter's module tracker failing on custom autograd code: the same formulas without it;
- a forward that cannot run at all: `HAND_COUNTS` below, with the reason.

Rows go to benchmarks/results/sizes.jsonl as they finish (the run resumes: a model with a row is
skipped; `--fresh` starts over), and the summary per source to benchmarks/results/sizes.json:
models within 1 % on MACs, within 5 %, the worst ratios, and parameter disagreements.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
ROWS = RESULTS / "sizes.jsonl"
SUMMARY = RESULTS / "sizes.json"


_ENTRIES: dict[str, dict] = {}


def count_sizes(source_name: str, entry_name: str, inputs: list) -> dict:
    """Build one zoo model on meta and count its parameters and MACs independently (in a worker)."""
    from narcli.trace.compat import ensure_torchvision_importable
    from narcli.zoo.plugins import zoo_sources
    from tests.independent_count import count_module

    ensure_torchvision_importable()
    source = zoo_sources()[source_name]
    if source_name not in _ENTRIES:  # a worker counts many models: list each source once
        _ENTRIES[source_name] = {e.name: e for e in source.list_models()}
    built = source.build(_ENTRIES[source_name][entry_name])
    module, inputs, note = built.module.eval(), list(built.inputs), {}
    params = sum(p.numel() for p in module.parameters())
    shapes = [list(t.shape) for t in built.inputs]
    try:
        count = count_module(module, inputs)
    except Exception as exc:  # noqa: BLE001 - the forward cannot run on meta: run it for real if it fits
        note = {"meta_error": f"{type(exc).__name__}: {exc}"[:200]}
        if params > CPU_LIMIT:  # the counter cannot run: a hand count (HAND_COUNTS) or nothing
            return {"params": int(params), "inputs": shapes, "not_counted": note["meta_error"]}
        note["counted_on"] = "cpu"
        module, inputs = _on_cpu(module, inputs)
        count = count_module(module, inputs)
    return {"params": int(count.params), "macs": int(count.macs), "attention_macs": int(count.attention_macs),
            "attention_added": int(count.attention_added), "value_reads": int(count.value_reads),
            "expert_macs": int(count.expert_macs), "inputs": shapes,
            "top_ops": count.top_ops, **note}


# A model whose forward cannot run on meta (it reads values in ways meta tensors cannot answer) is
# counted on CPU with real tensors when its weights fit in memory: weights as `nar bench` fills them,
# random float inputs, integer inputs of ones (valid token ids, masks that keep every position).
CPU_LIMIT = 1_500_000_000  # parameters (6 GB in float32)


def _on_cpu(module, inputs: list) -> tuple:
    import torch

    from narcli.bench.child import fill_weights

    real = [torch.randn(t.shape, dtype=t.dtype) if t.is_floating_point() else torch.ones(t.shape, dtype=t.dtype)
            for t in inputs]
    return fill_weights(module), real


# Models whose forward cannot run under the counter, and how they are counted instead.
HAND_COUNTS = {
    "hf/llama4": ("hf/llama4/causal-lm", "transformers 5.24's multimodal Llama 4 fails after its forward, "
                  "building an output with `image_outputs` that a text-only run lacks; given token ids only, "
                  "it runs exactly the language model and head of hf/llama4/causal-lm, whose count this is"),
}


def cause(row: dict) -> str:
    """A first guess at why stored and counted MACs differ, from what the row holds."""
    if not (row["stored_macs"] and row["macs"]):
        return "no count"
    if row.get("stored_inputs") is not None and row["stored_inputs"] != row["inputs"]:
        return "stored row traced at another input"
    if row.get("attention_macs") and abs(row["stored_macs"] + row["attention_macs"] - row["macs"]) \
            <= 0.01 * row["macs"]:
        return "attention products missing"
    if row.get("shared_shapes"):
        return "graph shared with a model of another input size"
    return "stored below the count" if row["stored_macs"] < row["macs"] else "stored above the count"


def joined(counts: list[dict]) -> list[dict]:
    """Each counted row beside the zoo's current stored figures (so a re-traced zoo needs no recount)."""
    from narcli.zoo.store import Zoo

    models = {m.id: m for m in Zoo().models()}
    inputs_by_hash: dict[str, set] = defaultdict(set)
    for m in models.values():
        inputs_by_hash[m.graph_hash].add(json.dumps([i["shape"] for i in m.inputs]))
    rows = []
    counted = {c["id"]: c for c in counts}
    for count in counts:
        if "macs" not in count and count["id"] in HAND_COUNTS:
            reference, why = HAND_COUNTS[count["id"]]
            if "macs" in counted.get(reference, {}):
                count = dict(count, macs=counted[reference]["macs"], hand_count=why)
        m = models.get(count["id"])
        if m is None or m.status != "ok":
            continue
        row = dict(count, stored_params=m.params, stored_macs=m.macs,
                   stored_inputs=[i["shape"] for i in m.inputs],
                   shared_shapes=len(inputs_by_hash[m.graph_hash]) > 1)
        if "macs" in row:
            row["mac_ratio"] = round(m.macs / row["macs"], 4) if row["macs"] else None
            row["cause"] = cause(row) if row["mac_ratio"] is None or abs(row["mac_ratio"] - 1) > 0.01 else ""
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", default="", help="Comma-separated sources (default: every installed one).")
    parser.add_argument("--sample", type=int, default=0, help="At most this many models per source (0: all).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--fresh", action="store_true", help="Forget earlier rows and start over.")
    parser.add_argument("--retry-errors", action="store_true", help="Count again the models whose count failed.")
    parser.add_argument("--ids", default="", help="Comma-separated zoo ids to count again (after a fix).")
    args = parser.parse_args()

    from narcli.trace.engines import run_tasks
    from narcli.zoo.plugins import zoo_sources
    from narcli.zoo.store import Zoo

    RESULTS.mkdir(exist_ok=True)
    if args.fresh and ROWS.exists():
        ROWS.unlink()
    kept = [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()] if ROWS.exists() else []
    again = set(args.ids.split(",")) if args.ids else set()
    if args.retry_errors or again:
        kept = [r for r in kept if not (args.retry_errors and "error" in r) and r["id"] not in again]
        ROWS.write_text("".join(json.dumps(r) + "\n" for r in kept))
    done = {r["id"] for r in kept}
    installed = {name for name, s in zoo_sources().items() if s.missing() is None}
    wanted = set(args.sources.split(",")) if args.sources else None
    zoo = Zoo()
    models = [m for m in zoo.models() if m.status == "ok" and (wanted is None or m.source in wanted)]
    rng = random.Random(args.seed)
    by_source: dict[str, list] = defaultdict(list)
    for m in models:
        by_source[m.source].append(m)
    chosen = []
    for source, members in sorted(by_source.items()):
        if source not in installed:
            print(f"{source}: plugin or library not installed; not audited", file=sys.stderr)
            continue
        members = sorted(members, key=lambda m: m.id)
        if args.sample and len(members) > args.sample:
            members = sorted(rng.sample(members, args.sample), key=lambda m: m.id)
        chosen += [m for m in members if m.id not in done]
    print(f"{len(chosen)} models to count ({len(done)} done before)")
    meta = {m.id: m for m in chosen}
    started = time.perf_counter()

    def on_result(result) -> None:
        m = meta[result.key]
        row = {"id": m.id, "source": m.source, "seconds": round(result.seconds, 2)}
        if result.ok:
            row.update(result.value)
        else:
            row.update({"error": f"{result.reason}: {result.message}"[:300]})
        with ROWS.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        ratio = round(m.macs / row["macs"], 4) if row.get("macs") else row.get("error", "")
        print(f"  {m.id:60} {ratio}", flush=True)

    tasks = ((m.id, (m.source, m.name, None)) for m in chosen)
    run_tasks(count_sizes, tasks, on_result, jobs=args.jobs, timeout=args.timeout)
    summarise(time.perf_counter() - started)


def summarise(seconds: float) -> None:
    rows = joined([json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()])
    sources: dict[str, dict] = {}
    for source in sorted({r["source"] for r in rows}):
        mine = [r for r in rows if r["source"] == source]
        counted = [r for r in mine if r.get("mac_ratio")]
        sources[source] = {
            "models": len(mine), "counted": len(counted), "not_counted": len(mine) - len(counted),
            "macs_within_1pct": sum(abs(r["mac_ratio"] - 1) <= 0.01 for r in counted),
            "macs_within_5pct": sum(abs(r["mac_ratio"] - 1) <= 0.05 for r in counted),
            "params_equal": sum(r.get("params") == r["stored_params"] for r in counted),
            "worst": [[r["id"], r["mac_ratio"], r["cause"]] for r in
                      sorted(counted, key=lambda r: -abs(r["mac_ratio"] - 1))[:10] if abs(r["mac_ratio"] - 1) > 0.01],
            "errors": [[r["id"], r.get("error") or r.get("not_counted")] for r in mine if "macs" not in r],
            "counted_by_hand": [[r["id"], r["hand_count"]] for r in mine if r.get("hand_count")],
            "counted_on_cpu": [[r["id"], r["meta_error"]] for r in mine if r.get("counted_on") == "cpu"],
            "moe_hand_counted": sum(bool(r.get("expert_macs")) for r in mine)}
        s = sources[source]
        print(f"{source:14} {s['counted']:5} counted  {s['macs_within_1pct']:5} within 1 %  "
              f"{s['macs_within_5pct']:5} within 5 %  params equal {s['params_equal']}  not counted {s['not_counted']}")
    causes = defaultdict(int)
    for r in rows:
        if r.get("cause"):
            causes[r["cause"]] += 1
    out = {"rows": len(rows), "seconds_this_run": round(seconds, 1), "by_source": sources, "causes": dict(causes)}
    SUMMARY.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {SUMMARY}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # tests.independent_count
    sys.path.insert(0, str(ROOT / "benchmarks"))
    main()
