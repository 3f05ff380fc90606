"""Whether searching a CIFAR-style stem also as ImageNet code writes it (`nar similar`'s second
spelling, `search.query.embed_with_stem`) finds families better, on validation queries only.

    python benchmarks/bench_stem_spelling.py [--queries 150]

Queries come from the shipped encoder card's training part (never its test part, never the
real-client or breadth sets), each searched against the whole zoo index with its own graph withheld:

- CIFAR-stem rewrites: a training architecture whose stem the CIFAR edits apply to
  (`augment.cifar_stem`, then `augment.no_stem_pool`), as someone re-writing it for 32×32 images would;
- natively small stems: a training architecture whose first convolution already reads the input at
  3×3, stride 1, with no max-pool near it (VGGs, U-Nets, super-resolution nets), where a second
  spelling could only do harm.

For each: the nearest architecture's family with the query's own spelling alone, and with both
spellings (each graph at the better of its cosines), through the search's own code
(`query.embed_with_stem`, `similar.nearest_either_stem`), and which families changed. Writes
benchmarks/results/stem-spelling.json.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=150)
    args = parser.parse_args()
    from narcli.encode.augment import cifar_stem, imagenet_stem, no_stem_pool
    from narcli.encode.dataset import Item, card_split, zoo_labels
    from narcli.encode.embedder import Embedder
    from narcli.encode.weights import bundled_weights_path
    from narcli.search.neighbours import zoo_index
    from narcli.search.query import Query, embed_with_stem
    from narcli.search.similar import nearest_either_stem, query_vectors
    from narcli.zoo.store import Zoo

    card = json.loads(bundled_weights_path().with_suffix(".json").read_text())
    index, embedder, rng = zoo_index(), Embedder(), random.Random(0)
    sets: dict[str, list] = {"CIFAR-stem rewrites": [], "natively small stems": []}
    with Zoo() as zoo:
        labelled = zoo_labels(zoo)
        items = [Item(h, *labelled[h], None) for h in labelled]
        train, _ = card_split(items, card, zoo)
        family_of = {h: family for h, (_, family, _) in labelled.items()}
        for i in train:
            graph = zoo.graph(zoo.resolve(items[i].name))
            rewritten = cifar_stem(graph, rng)
            if rewritten is not None:
                sets["CIFAR-stem rewrites"].append((items[i], no_stem_pool(rewritten, rng) or rewritten))
            elif imagenet_stem(graph) is not None:
                sets["natively small stems"].append((items[i], graph))
    out = {"machine": machine(), "encoder_seed": card["config"]["seed"], "sets": {}}
    for name, pairs in sets.items():
        random.Random(1).shuffle(pairs)
        pairs = pairs[:args.queries]
        plain = both = respelled = 0
        changed: Counter[str] = Counter()
        for item, graph in pairs:
            [embedding] = embed_with_stem(embedder, [graph])  # what `nar similar` searches with
            query = Query(item.name, "file", item.graph_hash, embedding.vector, embedding.prediction, [])
            found = [[h for h, _ in nearest if h != item.graph_hash]
                     for nearest in (index.query(query.vector, 30), nearest_either_stem(index, query, 30))]
            right = [family_of.get(f[0]) == item.family for f in found]
            plain, both = plain + right[0], both + right[1]
            respelled += len(query_vectors(query)) > 1
            if right[0] != right[1]:
                changed[f"{item.family} {'found' if right[1] else 'lost'}"] += 1
        out["sets"][name] = {"queries": len(pairs), "second_spelling": respelled,
                             "nearest_family_own_spelling": round(plain / max(len(pairs), 1), 3),
                             "nearest_family_both_spellings": round(both / max(len(pairs), 1), 3),
                             "changed": dict(changed.most_common())}
        print(name, json.dumps(out["sets"][name]))
    path = ROOT / "benchmarks" / "results" / "stem-spelling.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
