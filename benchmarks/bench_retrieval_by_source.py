"""Zoo retrieval by the source of the query: MAP@20 of the shipped embeddings on the model card's split.

    python benchmarks/bench_retrieval_by_source.py [--db narcli/data/zoo.db] [--without SOURCE]

Each held-out architecture of the card's random split (seed from the card) queries the training
architectures with the zoo's stored embeddings (what `nar similar` searches); relevant = same
family. Prints MAP@20 overall and by the source that lists the query (the best-ranked one when
several list the graph). Composite queries (a decoder over a named backbone: smp, MONAI's
FlexibleUNet; `narcli.zoo.composite`) also get a graded NDCG@20: a neighbour with the same decoder
and backbone gains 3, the same decoder 2, the same backbone 1. `--without smp` also leaves that source out of the queries and the
searched pool, to see what the rest scores without it. Writes benchmarks/results/retrieval-by-source.json.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
AT = 20


def average_precision(ranked_relevant: np.ndarray, relevant_total: int) -> float:
    if relevant_total == 0:
        return 0.0
    hits = np.cumsum(ranked_relevant) / np.arange(1, len(ranked_relevant) + 1)
    return float((hits * ranked_relevant).sum() / min(relevant_total, AT))


def graded_ndcg(gains_ranked: np.ndarray, gains_all: np.ndarray) -> float:
    """NDCG@AT with graded gains: (2^g - 1) / log2(rank + 1), over the best order of every candidate."""
    discount = 1 / np.log2(np.arange(2, AT + 2))
    ideal = float(((2 ** np.sort(gains_all)[::-1][:AT] - 1) * discount[:min(AT, len(gains_all))]).sum())
    return float(((2 ** gains_ranked[:AT] - 1) * discount[:len(gains_ranked[:AT])]).sum()) / ideal if ideal else 0.0


def by_source(db: Path, without: str | None) -> dict[str, dict]:
    from narcli.encode.dataset import Item, card_split, zoo_labels
    from narcli.encode.weights import bundled_weights_path
    from narcli.search import neighbours
    from narcli.zoo.composite import backbone_of
    from narcli.zoo.store import Zoo

    card = json.loads(bundled_weights_path().with_suffix(".json").read_text())
    hashes, vectors, _ = neighbours._zoo_vectors(db)
    position = {h: i for i, h in enumerate(hashes)}
    with Zoo([db]) as zoo:
        labelled = zoo_labels(zoo)
        ranked = {m.graph_hash: m.source for m in sorted(zoo.models(), key=lambda m: zoo.rank(m.source), reverse=True)}
        items = [Item(h, *labelled[h], None) for h in labelled if h in position]
        train, test = card_split(items, card, zoo)
    if without:
        train = [i for i in train if ranked[items[i].graph_hash] != without]
        test = [i for i in test if ranked[items[i].graph_hash] != without]
    matrix = vectors[[position[item.graph_hash] for item in items]]
    families = np.array([item.family for item in items])
    backbones = np.array([backbone_of(item.name) for item in items])
    pool, pool_families, pool_backbones = matrix[train], families[train], backbones[train]
    scores: dict[str, list[float]] = defaultdict(list)
    composite: dict[str, list[float]] = defaultdict(list)
    for q in test:
        order = np.argsort(-(pool @ matrix[q]))[:AT]
        ap = average_precision((pool_families[order] == families[q]).astype(float), int((pool_families == families[q]).sum()))
        scores[ranked[items[q].graph_hash]].append(ap)
        scores["all"].append(ap)
        if backbones[q]:
            gains = 2.0 * (pool_families == families[q]) + (pool_backbones == backbones[q])
            composite[f"MAP@{AT}"].append(ap)
            composite[f"graded NDCG@{AT}"].append(graded_ndcg(gains[order], gains))
    out = {source: {"queries": len(v), f"MAP@{AT}": round(float(np.mean(v)), 3)}
           for source, v in sorted(scores.items(), key=lambda kv: -len(kv[1]))}
    if composite:
        out["composite designs"] = {"queries": len(composite[f"MAP@{AT}"]),
                                    **{k: round(float(np.mean(v)), 3) for k, v in composite.items()}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=ROOT / "narcli" / "data" / "zoo.db")
    parser.add_argument("--without", default="smp")
    args = parser.parse_args()
    out = {"all sources": by_source(args.db, None)}
    if args.without:
        out[f"without {args.without}"] = by_source(args.db, args.without)
    for title, rows in out.items():
        print(title)
        for source, row in rows.items():
            graded = f"  graded NDCG@{AT} {row[f'graded NDCG@{AT}']:.3f}" if f"graded NDCG@{AT}" in row else ""
            print(f"  {source:<17} {row['queries']:>4} queries  MAP@{AT} {row[f'MAP@{AT}']:.3f}{graded}")
    path = ROOT / "benchmarks" / "results" / "retrieval-by-source.json"
    path.write_text(json.dumps({"results": out, "machine": machine()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
