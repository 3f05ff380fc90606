"""Family prediction on the zoo test split: the encoder's head, the neighbours' vote, and both.

    python benchmarks/bench_family.py [--weights narcli/data/encoder.safetensors]

Uses the split the weights were trained on (their card's seed): the test architectures are the
queries, the training architectures are what they are compared with, exactly as `nar similar` does
(head and vote mixed, see narcli/search/family.py). Prints top-1 family and coarse-class accuracy and writes
benchmarks/results/family.json. Target (issue: nar similar): top-1 family accuracy >= 0.90.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, default=None)
    args = parser.parse_args()

    from narcli.encode.dataset import card_split, zoo_items
    from narcli.encode.embedder import Embedder
    from narcli.search.family import VOTERS, combine, vote

    embedder = Embedder(args.weights)
    items = zoo_items(progress=True)
    train, test = card_split(items, embedder.card)
    vectors, predictions = embedder.embed_encoded([item.encoded for item in items])
    train_vectors = vectors[train]
    counts = {"head": [0, 0], "vote": [0, 0], "head + vote": [0, 0]}
    for q in test:
        cosines = train_vectors @ vectors[q]
        order = np.argsort(-cosines)[:VOTERS]
        voters = [items[train[i]] for i in order]
        near = [float(cosines[i]) for i in order]
        family_vote = vote([v.family for v in voters], near)
        coarse_vote = vote([v.coarse for v in voters], near)
        head = predictions[q]
        guesses = {"head": (head["family"][0][0], head["coarse"][0][0]),
                   "vote": (max(family_vote, key=family_vote.get), max(coarse_vote, key=coarse_vote.get)),
                   "head + vote": (combine(head["family"], family_vote)[0][0], combine(head["coarse"], coarse_vote)[0][0])}
        for method, (family, coarse) in guesses.items():
            counts[method][0] += family == items[q].family
            counts[method][1] += coarse == items[q].coarse
    results = {name: {"family_top1": round(f / len(test), 4), "coarse_top1": round(c / len(test), 4)}
               for name, (f, c) in counts.items()}
    print(f"{len(test)} test queries against {len(train)} training architectures")
    print(f"{'method':<14}{'family top-1':>14}{'coarse top-1':>14}")
    for name, row in results.items():
        print(f"{name:<14}{row['family_top1']:>14.3f}{row['coarse_top1']:>14.3f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"queries": len(test), "train": len(train), "weights": str(embedder.weights), "encoder": embedder.encoder_id,
           "results": results, "machine": machine()}
    (RESULTS / "family.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
