"""How far one edit that authors make moves an architecture's embedding.

    python benchmarks/bench_edits.py [--models 60] [--weights PATH] [--out NAME]

For zoo architectures of the random split's test part (the encoder never trained on them), each
edit of `narcli/encode/augment.py` (CIFAR stem, no stem max-pool, another activation, another
head, another input resolution) is applied alone, and the cosine between the original's and the
edited graph's embeddings is reported: mean, 5th percentile and minimum per edit. Writes
benchmarks/results/<out>.json (default edits.json).
"""

from __future__ import annotations

import argparse
import json
import random
import zlib
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=60)
    parser.add_argument("--weights", type=Path, default=None)
    parser.add_argument("--out", default="edits")
    args = parser.parse_args()

    from narcli.encode.augment import EDITS
    from narcli.encode.dataset import card_split, zoo_items
    from narcli.encode.embedder import Embedder
    from narcli.graph.arch_graph import ArchGraph
    from narcli.graph.idioms import normalise_idioms
    from narcli.zoo.store import Zoo

    items = zoo_items()
    zoo = Zoo()
    embedder = Embedder(args.weights)
    _, test = card_split(items, embedder.card, zoo)
    image = [items[i] for i in test if items[i].coarse in ("convolutional", "hybrid", "transformer")]
    chosen = random.Random(0).sample(image, min(args.models, len(image)))
    out: dict[str, dict] = {}
    for name, edit in EDITS.items():
        originals, edited = [], []
        for k, item in enumerate(chosen):
            graph = normalise_idioms(ArchGraph.from_json(zlib.decompress(zoo.graph_blob(item.graph_hash)).decode()))
            changed = edit(graph, random.Random(k))
            if changed is not None:
                originals.append(graph)
                edited.append(changed)
        if not originals:
            continue
        a = np.stack([e.vector for e in embedder.embed(originals)])
        b = np.stack([e.vector for e in embedder.embed(edited)])
        cosines = (a * b).sum(1)
        out[name] = {"models": len(originals), "mean": round(float(cosines.mean()), 4),
                     "p5": round(float(np.quantile(cosines, 0.05)), 4), "min": round(float(cosines.min()), 4)}
        print(f"{name:<16} {len(originals):>4} models  cosine mean {out[name]['mean']:.3f}  "
              f"p5 {out[name]['p5']:.3f}  min {out[name]['min']:.3f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps({"edits": out, "encoder": embedder.encoder_id,
                                                          "machine": machine()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
