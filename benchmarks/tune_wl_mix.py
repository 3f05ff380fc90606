"""Choose the WL sketch of NAR's retrieval embedding (labels, weight) on validation queries of two kinds.

    python benchmarks/tune_wl_mix.py [--epochs 40] [--device cpu] [--full-graph none|gat|gcn] [--out FILE]

Only the zoo's random training part is used (never its test part). It is split again: 10 % of its
families are held out whole (queries from families the model never saw, like the OOD split), and
the rest is split 90/10 by family (queries from known families, like the random split). NAR and
the GAT baseline train once on what is left; both query sets search the whole training part.

The retrieval embedding is cosine = wl_mix x learned + (1 - wl_mix) x WL sketch, the sketch's WL
starting from operation labels ("ops") or operation + feature-width labels ("ops+width"). Both
only change how the trained vector is read, so one model scores every choice. For each the script
prints its @20 metrics on both query sets and its smallest lead over every baseline (op histogram,
WL hashing, GAT) on every metric of either set; the choice with the widest smallest lead (ties: the
higher mean of the six metrics) is marked: the one that best meets "NAR >= every baseline on every
metric" for both kinds of query. Writes benchmarks/results/wl-mix.json (or --out).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
MIXES = (0.5, 0.7, 0.8, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 1.0)
AT = ("MRR@20", "MAP@20", "NDCG@20")
QUERIES = ("known families", "unseen families")


def validation_split(pool: list, seed: int) -> tuple[list[int], list[int], list[int]]:
    """(fit, known-family queries, unseen-family queries), as indices into `pool`."""
    from narcli.encode.dataset import split_ood, split_random

    rest, unseen = split_ood(pool, seed=seed, family_fraction=0.1)
    fit, known = split_random([pool[i] for i in rest], seed=seed)
    return [rest[i] for i in fit], [rest[i] for i in known], unseen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--full-graph", default=None, help="NAR's full-graph branch: none, gat or gcn "
                        "(default: the shipped recipe)")
    parser.add_argument("--out", type=Path, default=RESULTS / "wl-mix.json")
    args = parser.parse_args()

    from narcli.encode.dataset import split_random, zoo_items
    from narcli.encode.evaluation import (
        op_histogram_embeddings,
        retrieval_metrics,
        wl_embeddings,
    )
    from narcli.encode.features import SKETCH_LABELS
    from narcli.encode.retrieval_eval import LEARNED, checkpoint_path
    from narcli.encode.training import TrainConfig, embed_items, train_encoder

    items = zoo_items(progress=True)
    train, _ = split_random(items, seed=args.seed)  # the test part is left out from here on
    pool = [items[i] for i in train]
    fit, known, unseen = validation_split(pool, args.seed + 1)
    graphs = [item.encoded for item in pool]
    family = [item.family for item in pool]

    def score(embeddings: np.ndarray) -> dict[str, dict[str, float]]:
        out = {}
        for kind, queries in zip(QUERIES, (known, unseen)):
            metrics = retrieval_metrics(np.asarray(embeddings), family, queries, (20,))
            out[kind] = {m: round(metrics[m], 4) for m in AT}
        return out

    baselines = {"op-type histogram": score(op_histogram_embeddings(graphs)), "WL subtree hashing": score(wl_embeddings(graphs))}
    config = TrainConfig(seed=args.seed, epochs=args.epochs, device=args.device)
    if args.full_graph is not None:
        config = replace(config, full_graph=args.full_graph)
    trained = {}
    for name in ("GAT", "NAR"):
        method = replace(config, **LEARNED[name])
        print(f"training {name} on {len(fit)} architectures", flush=True)
        trained[name] = train_encoder(pool, fit, method, checkpoint=checkpoint_path("zoo-val", method, pool, fit))
    baselines["GAT"] = score(embed_items(trained["GAT"].model, graphs))
    model = trained["NAR"].model
    choices = {}  # (labels, wl_mix) -> scores; at wl_mix 1.0 the labels do not matter
    for labels in SKETCH_LABELS:
        model.sketch_labels = labels
        for mix in MIXES:
            if mix < 1.0 or labels == SKETCH_LABELS[0]:
                model.wl_mix = mix
                choices[labels, mix] = score(embed_items(model, graphs, learned_only=mix >= 1.0))

    def flat(row: dict) -> list[float]:
        return [row[kind][m] for kind in QUERIES for m in AT]

    leads = {c: min(a - b for base in baselines.values() for a, b in zip(flat(row), flat(base)))
             for c, row in choices.items()}
    best = max(choices, key=lambda c: (round(leads[c], 4), np.mean(flat(choices[c]))))
    print(f"{len(known)} known-family and {len(unseen)} unseen-family validation queries against "
          f"{len(pool)} training architectures; @20 MRR / MAP / NDCG")
    print(f"{'':<30}{'known families':>27}{'unseen families':>27}")
    rows = [(name, row, None) for name, row in baselines.items()]
    rows += [(f"NAR {labels} wl_mix {mix}", row, (labels, mix)) for (labels, mix), row in choices.items()]
    for name, row, choice in rows:
        tail = "" if choice is None else f"  lead {leads[choice]:+.3f}" + (" <- widest smallest lead" if choice == best else "")
        print(f"{name:<30}" + "".join(f"{v:>9.3f}" for v in flat(row)) + tail)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = {"fit": len(fit), "known_family_queries": len(known), "unseen_family_queries": len(unseen),
           "epochs": args.epochs, "full_graph": config.full_graph, "baselines": baselines,
           "choices": [{"sketch_labels": labels, "wl_mix": mix, **row, "smallest_lead": round(leads[labels, mix], 4)}
                       for (labels, mix), row in choices.items()],
           "widest_smallest_lead": {"sketch_labels": best[0], "wl_mix": best[1]},
           "machine": machine()}
    args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
