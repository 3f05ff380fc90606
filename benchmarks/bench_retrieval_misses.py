"""Which random-split queries the shipped search does not answer first with their own family, and
what it answers instead.

    python benchmarks/bench_retrieval_misses.py [--out NAME]

The shipped encoder was trained on the random split its card stores (`test_models`); its test
queries are searched over the whole zoo with the bundled index's vectors, in the order `nar
similar` shows (the family re-rank, with each query's blocks and decoder read as `nar similar`
reads a scanned file's: `bench_card_readout.query_reads`). For every query whose first row is of another family: the
rank of the first row of its own family (none within 20), the first row's family and cosine. The
summary counts the misses whose first row is a near twin (cosine >= 0.95, >= 0.99): a sibling family
built from the same blocks, which a finer comparison of embeddings cannot tell apart. Nothing is
trained; torch is not needed. Writes benchmarks/results/retrieval-misses.json (or --out NAME).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from bench_card_readout import query_reads, renamings
from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def main() -> None:
    from narcli import DATA_DIR
    from narcli.encode.dataset import card_split, zoo_items
    from narcli.encode.evaluation import retrieval_metrics
    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT, KEEP_NEAREST, RERANK_CANDIDATES, rerank_rows
    from narcli.search.index import VectorIndex

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="retrieval-misses", help="results file name, under benchmarks/results")
    args = parser.parse_args()
    card = json.loads((DATA_DIR / "encoder.json").read_text())
    items = zoo_items(progress=True)
    index = VectorIndex(DATA_DIR / "zoo-index.json")
    positions = [index.position(item.graph_hash) for item in items]
    keep = [i for i, p in enumerate(positions) if p is not None]  # a graph added after the index: left out
    items = [items[i] for i in keep]
    vectors = index.vectors([positions[i] for i in keep]).astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    train, test = card_split(items, card)
    labels = np.array([item.family for item in items])
    reads, decoders = query_reads(items, test, train)
    blocks = renamings(vectors, list(labels), test, reads, decoders)
    metrics = retrieval_metrics(vectors, list(labels), test, (20,), rerank=FAMILY_RERANK_WEIGHT, blocks=blocks)
    sims = vectors[test] @ vectors.T
    sims[np.arange(len(test)), test] = -np.inf
    order = np.argsort(-sims, axis=1, kind="stable")[:, :RERANK_CANDIDATES]
    order = rerank_rows(order, np.take_along_axis(sims, order, axis=1), labels, FAMILY_RERANK_WEIGHT,
                        keep=KEEP_NEAREST, blocks=blocks)[:, :20]
    misses = []
    for row, query in enumerate(test):
        if (labels == labels[query]).sum() < 2:  # a family of one: nothing to find
            continue
        hits = np.flatnonzero(labels[order[row]] == labels[query])
        if hits.size and hits[0] == 0:
            continue
        first = int(order[row][0])
        misses.append({"query": items[query].name, "family": str(labels[query]),
                       "family_size": int((labels == labels[query]).sum()),
                       "own_family_rank": int(hits[0]) + 1 if hits.size else None,
                       "first": items[first].name, "first_family": str(labels[first]),
                       "first_cosine": round(float(sims[row, first]), 4),
                       "renamed": blocks[row] or None, **decoder_distances(reads[row]["decoder"], {**decoders[1], **decoders[0]},
                                                                           (labels[query], labels[first]))})
    twins = {f">= {c}": sum(m["first_cosine"] >= c for m in misses) for c in (0.95, 0.99)}
    summary = {"queries": metrics["queries"], "MRR@20": metrics["MRR@20"], "MAP@20": metrics["MAP@20"],
               "misses": len(misses), "own_family_not_in_20": sum(m["own_family_rank"] is None for m in misses),
               "first_row_cosine": twins}
    for m in sorted(misses, key=lambda m: -m["first_cosine"]):
        print(f"{str(m['own_family_rank'] or '-'):>3}  {m['query'][:44]:44s} {m['family'][:18]:18s} "
              f"-> {m['first'][:40]:40s} {m['first_family'][:18]:18s} {m['first_cosine']:.3f}")
    print(json.dumps(summary))
    out = RESULTS / f"{args.out}.json"
    out.write_text(json.dumps({"summary": summary, "misses": misses, "machine": machine()}, indent=2) + "\n")
    print(f"wrote {out}")


def decoder_distances(signature: dict, decoders: dict, families: tuple[str, str]) -> dict:
    """How far the query's decoder is from the nearest known decoder of its own family and of the
    first row's (`graph.decoder.signature_distance`), where both are decoder families."""
    from narcli.graph.decoder import signature_distance

    if not signature or not all(decoders.get(f) for f in families):
        return {}
    own, first = (min(signature_distance(signature, p) for p in decoders[f]) for f in families)
    return {"decoder": signature, "own_decoder_distance": round(own, 3), "first_decoder_distance": round(first, 3)}


if __name__ == "__main__":
    main()
