"""Other libraries' versions of a design: does the zoo find the family of code another library wrote?

    python benchmarks/bench_cross_library.py [--db narcli/data/zoo.db] [--out cross-library]

The zoo holds real re-implementations: ResNets from timm, torchvision, transformers and MONAI,
U-Nets from smp, MONAI and the textbook classics, ViTs from timm and transformers. Each architecture
of a family that another source also lists is searched against the architectures none of its own
sources lists (`narcli.search.family.independent_nearest`, the set the novelty cosine is also
calibrated on), with the zoo's stored embeddings (what `nar similar` searches). That is the closest
the zoo comes to "code people write" without a hand-collected set, so it is a figure one may tune
on, unlike `benchmarks/real_clients` and `benchmarks/breadth`.

Reported: the nearest architecture's family right, per query and family-balanced (every family
weighs the same: ViT alone has 161 such rows); the same at the design level (`zoo.lineage`: SigLIP
and DINOv2 are ViTs); the family among the 5 nearest; the family the nearest ten vote for as
`nar similar` counts the vote (the query's blocks and decoder renaming it, `search.family.query_names`,
with only the other sources' decoders known; no novelty cut, and without the encoder's classifier
head, which `nar similar` mixes in at weight 0.1), and the same vote with the decoder unread; the rows the encoder never trained on (the card's test part) apart; and each family's
count with what its misses land on. The encoder trained
on most of these rows as members of their family, so the figure is optimistic; the card's test rows
are the fairer part. Writes benchmarks/results/<out>.json.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np
from common import machine

ROOT = Path(__file__).resolve().parent.parent
TOP = 5


def queries(db: Path) -> list[dict]:
    """One record per independent-version query: its family, the families of its TOP nearest
    architectures of other sources, the family their vote names as `nar similar` counts it (the
    query's blocks and decoder renaming the voters' families; no novelty cut), the nearest cosine,
    and whether the encoder trained on it."""
    from narcli.encode.dataset import Item, card_split, zoo_labels
    from narcli.encode.weights import bundled_weights_path
    from narcli.graph.decoder import decoder_signature
    from narcli.graph.idioms import normalise_idioms
    from narcli.search import neighbours
    from narcli.search.family import VOTERS, independent_groups, predict_family
    from narcli.zoo.composite import split_decoder_prototypes
    from narcli.zoo.labels import block_names
    from narcli.zoo.store import Zoo

    card = json.loads(bundled_weights_path().with_suffix(".json").read_text())
    hashes, vectors, _ = neighbours._zoo_vectors(db)
    position = {h: i for i, h in enumerate(hashes)}
    with Zoo([db]) as zoo:
        labelled = zoo_labels(zoo)
        items = [Item(h, *labelled[h], None) for h in labelled if h in position]
        _, never_trained = card_split(items, card, zoo)
        listed = zoo.sources_by_hash([item.graph_hash for item in items])
        graphs = GraphsOnce(zoo)
        sources = [listed.get(item.graph_hash, frozenset()) for item in items]
        matrix = vectors[[position[item.graph_hash] for item in items]]
        matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        families = [item.family for item in items]
        test = set(never_trained)
        out = []
        for rows, mask in independent_groups(families, sources):
            others = np.flatnonzero(mask)
            searchable = {items[i].graph_hash for i in others}
            # the decoders a search of these rows could be compared with: other libraries' only
            prototypes, other_prototypes = split_decoder_prototypes(graphs, keep=lambda m: m.graph_hash in searchable)
            scores = matrix[rows] @ matrix[others].T
            order = np.argsort(-scores, axis=1)[:, :max(VOTERS, TOP)]
            for k, row in enumerate(rows):
                graph = normalise_idioms(graphs.graph_of(items[row].graph_hash))  # as the embedder reads it
                query = {"refined": block_names(graph), "decoder": decoder_signature(graph)}
                nearest = others[order[k]]
                vote_on = [(families[i], "", float(c)) for i, c in zip(nearest[:VOTERS], scores[k, order[k, :VOTERS]])]
                predicted = predict_family(query, vote_on, threshold=-1.0, decoders=prototypes,
                                           other_decoders=other_prototypes)
                by_blocks = predict_family({"refined": query["refined"]}, vote_on, threshold=-1.0).family
                out.append({"model": items[row].name, "family": families[row], "sources": sorted(sources[row]),
                            "nearest": [families[i] for i in nearest[:TOP]], "voted": predicted.family,
                            "voted_by_blocks_only": by_blocks,
                            "renamed": predicted.names, "cosine": round(float(scores[k].max()), 4),
                            "never_trained": row in test})
    return out


class GraphsOnce:
    """The zoo's models and graphs, each graph read once (every group's prototypes read the same)."""

    def __init__(self, zoo):
        self.zoo, self.graphs = zoo, {}

    def models(self):
        return self.zoo.models()

    def graph(self, model):
        if model.graph_hash not in self.graphs:
            self.graphs[model.graph_hash] = self.zoo.graph(model)
        return self.graphs[model.graph_hash]

    def graph_of(self, graph_hash: str):
        if graph_hash not in self.graphs:
            self.graphs[graph_hash] = self.zoo.graph(self.zoo.models_by_hash([graph_hash])[graph_hash][0])
        return self.graphs[graph_hash]


def figures(records: list[dict]) -> dict:
    from narcli.zoo.lineage import design

    def balanced(right) -> float:
        sizes = Counter(r["family"] for r in records)
        return round(sum(1.0 / sizes[r["family"]] for r in records if right(r)) / len(sizes), 3) if sizes else 0.0

    def plain(right) -> float:
        return round(sum(map(right, records)) / len(records), 3) if records else 0.0

    checks = {"nearest family": lambda r: r["nearest"][0] == r["family"],
              "nearest design": lambda r: design(r["nearest"][0]) == design(r["family"]),
              f"family in top {TOP}": lambda r: r["family"] in r["nearest"],
              "family voted": lambda r: r["voted"] == r["family"],
              "family voted, decoder unread": lambda r: r["voted_by_blocks_only"] == r["family"]}
    return {"queries": len(records), "families": len({r["family"] for r in records}),
            **{name: {"per query": plain(check), "family-balanced": balanced(check)} for name, check in checks.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=ROOT / "narcli" / "data" / "zoo.db")
    parser.add_argument("--out", default="cross-library")
    args = parser.parse_args()
    from narcli.zoo.lineage import design

    records = queries(args.db)
    summary = {"all": figures(records), "never trained (card's test part)": figures([r for r in records if r["never_trained"]])}
    by_family = {}
    for family in sorted({r["family"] for r in records}, key=lambda f: (-sum(r["family"] == f for r in records), f)):
        rows = [r for r in records if r["family"] == family]
        by_family[family] = {"queries": len(rows), "nearest right": sum(r["nearest"][0] == family for r in rows),
                             "family voted right": sum(r["voted"] == family for r in rows),
                             "median cosine": round(float(np.median([r["cosine"] for r in rows])), 3),
                             "misses land on": dict(Counter(r["nearest"][0] for r in rows if r["nearest"][0] != family).most_common()),
                             "nearest design right": sum(design(r["nearest"][0]) == design(family) for r in rows)}
    for part, numbers in summary.items():
        print(f"{part}: {numbers['queries']} queries, {numbers['families']} families")
        for name in ("nearest family", "nearest design", f"family in top {TOP}", "family voted",
                     "family voted, decoder unread"):
            print(f"  {name:32} {numbers[name]['per query']:.3f} per query, {numbers[name]['family-balanced']:.3f} family-balanced")
    print("by family (nearest right / queries, nearest design right, median cosine, the commonest misses):")
    for family, row in by_family.items():
        misses = dict(list(row["misses land on"].items())[:3])
        print(f"  {family:20} {row['nearest right']:4}/{row['queries']:<4} design {row['nearest design right']:4}  "
              f"voted {row['family voted right']:4}  "
              f"{row['median cosine']:.3f}  {misses}")
    out = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    out.write_text(json.dumps({"summary": summary, "by_family": by_family, "machine": machine()}, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
