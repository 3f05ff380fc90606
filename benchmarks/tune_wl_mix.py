"""Score the WL weight of NAR's retrieval embedding on a validation part of the training split.

    python benchmarks/tune_wl_mix.py [--epochs 40]

The zoo's random training part (never its test part) is split again, 90/10 by family: NAR and the
GAT baseline train on the first part, the second part queries the training part. The retrieval
embedding is cosine = wl_mix x learned + (1 - wl_mix) x WL sketch; wl_mix only changes how the
trained vector is read, so one model scores every weight. Each weight's smallest lead over every
baseline (op histogram, WL hashing, GAT) on every @20 validation metric is printed, and the best
MAP@20 among the weights that lead them all is marked. These queries come from known families
only, so the mark leans to the learned part; the README says which weight ships and why.
Writes benchmarks/results/wl-mix.json.
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
MIXES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
AT = ("MRR@20", "MAP@20", "NDCG@20")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from narcli.dataset import split_random, zoo_items
    from narcli.evaluation import (
        op_histogram_embeddings,
        retrieval_metrics,
        wl_embeddings,
    )
    from narcli.retrieval_eval import LEARNED, checkpoint_path
    from narcli.training import TrainConfig, embed_items, train_encoder

    items = zoo_items(progress=True)
    train, _ = split_random(items, seed=args.seed)  # the test part is left out from here on
    pool = [items[i] for i in train]
    fit, val = split_random(pool, seed=args.seed + 1)
    graphs = [item.encoded for item in pool]
    family = [item.family for item in pool]

    def score(embeddings: np.ndarray) -> dict[str, float]:
        metrics = retrieval_metrics(np.asarray(embeddings), family, val, (20,))
        return {m: round(metrics[m], 4) for m in AT}

    baselines = {"op-type histogram": score(op_histogram_embeddings(graphs)), "WL subtree hashing": score(wl_embeddings(graphs))}
    config = TrainConfig(seed=args.seed, epochs=args.epochs, wl_mix=0.6)
    trained = {}
    for name in ("GAT", "NAR"):
        method = replace(config, **LEARNED[name])
        print(f"training {name} on {len(fit)} architectures", flush=True)
        trained[name] = train_encoder(pool, fit, method, checkpoint=checkpoint_path("zoo-val", method, pool, fit))
    baselines["GAT"] = score(embed_items(trained["GAT"].model, graphs))
    model = trained["NAR"].model
    mixes = {}
    for mix in MIXES:
        model.wl_mix = mix
        mixes[mix] = score(embed_items(model, graphs, learned_only=mix >= 1.0))
    leads = {mix: min(row[m] - base[m] for base in baselines.values() for m in AT) for mix, row in mixes.items()}
    leading = [mix for mix in MIXES if leads[mix] >= 0]
    best = max(leading, key=lambda mix: mixes[mix]["MAP@20"]) if leading else None
    print(f"{len(val)} validation queries against {len(pool)} training architectures")
    for name, row in baselines.items():
        print(f"{name:<22}" + "".join(f"{row[m]:>9.3f}" for m in AT))
    for mix, row in mixes.items():
        mark = " <- best MAP@20 of those leading" if mix == best else ""
        print(f"{'NAR wl_mix ' + str(mix):<22}" + "".join(f"{row[m]:>9.3f}" for m in AT) + f"  lead {leads[mix]:+.3f}{mark}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"fit": len(fit), "validation": len(val), "epochs": args.epochs, "baselines": baselines,
           "mixes": {str(m): r for m, r in mixes.items()}, "smallest_lead": {str(m): round(v, 4) for m, v in leads.items()},
           "best_map_leading": best, "machine": machine()}
    (RESULTS / "wl-mix.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
