"""Retrieval over several seeds: how much of a gap between methods is seed noise.

    python benchmarks/bench_retrieval_seeds.py [--split random|ood] [--seeds 0,1,2,3,4] [--epochs 40]
                                               [--device cpu] [--jobs 1] [--out FILE]

Each seed draws its own split (random: 90/10 by family; ood: 20 % of families held out) and its own
initialisation, and trains every learned method with the same recipe (`nar eval retrieval --split
SPLIT --seed S` per seed); every method is scored in cosine order and with the search's second
stage. Prints each method's mean and standard deviation of the @20 metrics over the seeds, and on
how many seeds NAR as shipped (with the second stage) is at least as good as each baseline. Seeds
already finished with the same settings are read back from benchmarks/results/retrieval-seeds.json
(ood: retrieval-seeds-ood.json), so an interrupted run goes on where it stopped (and the training
inside a seed resumes from its per-epoch checkpoint).
"""

from __future__ import annotations

import argparse
import json
import statistics
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
OUTS = {"random": RESULTS / "retrieval-seeds.json", "ood": RESULTS / "retrieval-seeds-ood.json"}
AT = ("MRR@20", "MAP@20", "NDCG@20")
SHIPPED = "NAR + family re-rank"  # the search `nar similar` runs


def one_seed(split: str, seed: int, epochs: int, device: str, methods: tuple[str, ...], threads: int) -> dict:
    """Family-relevance @20 metrics of every method on the `split` drawn with `seed`."""
    import torch

    from narcli.encode.retrieval_eval import evaluate_retrieval
    from narcli.encode.training import TrainConfig

    torch.set_num_threads(threads)
    results = evaluate_retrieval(split, ks=(20,), config=TrainConfig(seed=seed, epochs=epochs, device=device),
                                 seed=seed, methods=methods)
    return {name: {m: row["family"][m] for m in AT} for name, row in results["methods"].items()}


def summarise(per_seed: dict[str, dict]) -> dict:
    """Mean and standard deviation per method and metric, and on how many seeds NAR as shipped is
    at least as good as each baseline (every other method but NAR's own variants)."""
    methods = next(iter(per_seed.values())).keys()
    shipped = SHIPPED if all(SHIPPED in seed for seed in per_seed.values()) else "NAR"  # before the second stage
    summary: dict = {"shipped": shipped, "mean": {}, "sd": {}, "nar_at_least": {}}
    for name in methods:
        values = {m: [seed[name][m] for seed in per_seed.values()] for m in AT}
        summary["mean"][name] = {m: round(statistics.fmean(v), 4) for m, v in values.items()}
        summary["sd"][name] = {m: round(statistics.stdev(v), 4) if len(v) > 1 else 0.0 for m, v in values.items()}
        if not name.startswith("NAR"):
            summary["nar_at_least"][name] = {m: int(sum(seed[shipped][m] >= seed[name][m]
                                                        for seed in per_seed.values())) for m in AT}
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=tuple(OUTS), default="random")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--methods", default="GCN,GAT,NAR")
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained at once, each in its own process")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--out", type=Path, default=None,
                        help="results file (default: benchmarks/results/retrieval-seeds[-ood].json)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    methods = tuple(m.strip() for m in args.methods.split(","))
    from dataclasses import asdict

    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT, KEEP_NEAREST, TIE_BAND
    from narcli.encode.training import TrainConfig

    # the whole recipe, read-out and second stage included: a seed measured under another one is
    # measured again
    recipe = {k: v for k, v in asdict(TrainConfig(epochs=args.epochs)).items() if k not in ("seed", "device")}
    settings = {"epochs": args.epochs, "methods": list(methods), "recipe": recipe,
                "second_stage": {"weight": FAMILY_RERANK_WEIGHT, "keep": KEEP_NEAREST,
                                 **({"tie_band": TIE_BAND} if TIE_BAND is not None else {})}}
    if args.split != "random":  # random-split files written before the option have no split
        settings["split"] = args.split
    settings = json.loads(json.dumps(settings))  # as read back: tuples become lists, or no seed would match
    out_path = args.out or OUTS[args.split]

    done: dict[str, dict] = {}
    if out_path.exists():
        previous = json.loads(out_path.read_text())
        if previous.get("settings") == settings:
            done = previous["per_seed"]
    todo = [s for s in seeds if str(s) not in done]

    def save() -> None:
        ordered = {str(s): done[str(s)] for s in seeds if str(s) in done}
        out = {"settings": settings, "device": args.device, "per_seed": ordered,
               "summary": summarise(ordered) if ordered else {}, "machine": machine()}
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(out, indent=2) + "\n")

    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=get_context("spawn")) as pool:
        futures = {seed: pool.submit(one_seed, args.split, seed, args.epochs, args.device, methods, args.threads) for seed in todo}
        for seed, future in futures.items():
            done[str(seed)] = future.result()
            print(f"seed {seed}: " + ", ".join(f"{n} {r['MRR@20']:.3f}/{r['MAP@20']:.3f}/{r['NDCG@20']:.3f}"
                                                for n, r in done[str(seed)].items()), flush=True)
            save()
    save()
    summary = summarise({str(s): done[str(s)] for s in seeds})
    print(f"\n{args.split} split, {len(seeds)} seeds, {args.epochs} epochs; mean ± sd of MRR@20 / MAP@20 / NDCG@20")
    for name, mean in summary["mean"].items():
        sd = summary["sd"][name]
        wins = summary["nar_at_least"].get(name)
        tail = "" if wins is None else f"   {summary['shipped']} ≥ it on " + "/".join(str(wins[m]) for m in AT) + " seeds"
        print(f"{name:<58}" + "  ".join(f"{mean[m]:.3f}±{sd[m]:.3f}" for m in AT) + tail)


if __name__ == "__main__":
    main()
