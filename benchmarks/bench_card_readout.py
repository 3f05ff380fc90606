"""Re-score the shipped encoder on its own random split after its read-out changed.

    python benchmarks/bench_card_readout.py [--write-card] [--store-test-models DB] [--learned GCN,GAT]

The read-out (the weights of the learned part and the sketches, `benchmarks/tune_readout.py`) only
changes how a trained model's vector is read, so the shipped model is scored again on the split it
was trained on (the card's stored test models, `encode.dataset.card_split`; never trained on) without retraining: op-type
histogram, WL subtree hashing, NAR as shipped, NAR's learned part alone, relevance = family,
@20/50/100, in the protocol of `nar eval retrieval` (every other architecture is a candidate).
Each method is scored twice: in cosine order, and with the search's second stage (`encode.family_rank`,
the weight and nearest kept in front `nar similar` uses), which any embedding can have, so the baselines get it too.
`--learned GCN,GAT` also trains those baselines on the card's training part with the card's recipe
(`encode.retrieval_eval.LEARNED`: the same epochs, edited variants and read-out, no motifs or WL
branch; resumable from $NAR_HOME/checkpoints), so every method is scored in one run, each with the
query's decoder read as NAR's is. `--write-card` puts these figures in the model card (`narcli/data/encoder.json`) under "metrics",
keeping the previous ones under "metrics_before_readout". Writes benchmarks/results/card-readout.json
(or --out NAME).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-card", action="store_true")
    parser.add_argument("--store-test-models", type=Path, default=None, metavar="DB",
                        help="first write into the card the model ids of its test part, drawn on DB, the zoo "
                             "database it was trained on (for cards from before training kept them)")
    parser.add_argument("--learned", default="", help="learned baselines to train and score too (GCN,GAT)")
    parser.add_argument("--out", default="card-readout", help="results file name, under benchmarks/results")
    args = parser.parse_args()

    from narcli.encode.dataset import card_split, zoo_items
    from narcli.encode.evaluation import op_histogram_embeddings, retrieval_metrics, wl_embeddings
    from narcli.encode.training import embed_items
    from narcli.encode.weights import bundled_weights_path, load_encoder

    path = bundled_weights_path()
    if args.store_test_models:
        store_test_models(path.with_suffix(".json"), args.store_test_models)
    model, card = load_encoder(path)
    items = zoo_items(progress=True)
    train, test = card_split(items, card)  # the card's own test models, carried to today's zoo
    graphs = [item.encoded for item in items]
    family = [item.family for item in items]
    coarse = [item.coarse for item in items]
    ks = (20, 50, 100)
    methods = {"op-type histogram": op_histogram_embeddings(graphs), "WL subtree hashing": wl_embeddings(graphs),
               "NAR": embed_items(model, graphs), "NAR, learned part only (no WL sketch)":
               embed_items(model, graphs, learned_only=True)}
    for name in filter(None, args.learned.split(",")):
        methods[name] = learned_baseline(name, items, train, card)
    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT, KEEP_NEAREST, TIE_BAND

    # as `nar similar` reads a query's blocks and decoder (`family_rank.renamed_away`, `search.family.query_names`)
    reads, decoders = query_reads(items, test, train)
    metrics = {}
    for name, vectors in methods.items():
        metrics[name] = {"family": retrieval_metrics(vectors, family, test, ks),
                         "coarse": retrieval_metrics(vectors, coarse, test, ks)}
        for suffix, blocks in (("", renamings(vectors, family, test, reads, decoders)),
                               (", decoder unread", [read["refined"] for read in reads])):
            metrics[f"{name} + family re-rank{suffix}"] = {
                "family": retrieval_metrics(vectors, family, test, ks, rerank=FAMILY_RERANK_WEIGHT, blocks=blocks),
                "coarse": retrieval_metrics(vectors, coarse, test, ks, rerank=FAMILY_RERANK_WEIGHT, vote_labels=family,
                                            blocks=blocks)}
    readout = {k: card["config"].get(k) for k in ("wl_mix", "sketch_labels", "robust_mix", "decoder_mix")}
    for name, row in metrics.items():
        f = row["family"]
        print(f"{name:<58} MRR@20 {f['MRR@20']:.3f}  MAP@20 {f['MAP@20']:.3f}  NDCG@20 {f['NDCG@20']:.3f}")
    out = {"split": f"random, seed {card['config']['seed']}: {len(train)} train, {len(test)} test",
           "split_from": "the card's test_models" if card.get("test_models") else "the card's seed on today's labels",
           "readout": readout, "rerank_weight": FAMILY_RERANK_WEIGHT,
           "rerank_keep": KEEP_NEAREST, "rerank_tie_band": TIE_BAND, "methods": metrics, "machine": machine()}
    (ROOT / "benchmarks" / "results" / f"{args.out}.json").write_text(json.dumps(out, indent=2) + "\n")
    if args.write_card:
        card_path = path.with_suffix(".json")
        data = json.loads(card_path.read_text())
        data.setdefault("metrics_before_readout", data["metrics"])
        data["metrics"] = {**{k: v for k, v in data["metrics"].items() if k not in metrics}, **metrics}
        data["readout"] = {**readout, "chosen_by": "benchmarks/tune_readout.py (validation queries of the "
                                                   "training part only)"}
        card_path.write_text(json.dumps(data, indent=1) + "\n")


def learned_baseline(name: str, items: list, train: list[int], card: dict):
    """Embeddings of every item by baseline `name` (GCN, GAT) trained on `train` with the card's recipe."""
    import time
    from dataclasses import fields, replace

    from narcli.encode.dataset import augmented_items
    from narcli.encode.retrieval_eval import LEARNED, checkpoint_path
    from narcli.encode.training import TrainConfig, embed_items, train_encoder

    if name not in LEARNED or name == "NAR":
        raise SystemExit(f"--learned: {name!r} is not a learned baseline ({', '.join(k for k in LEARNED if k != 'NAR')})")
    known = {f.name for f in fields(TrainConfig)}
    recipe = TrainConfig(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in card["config"].items() if k in known})
    config = replace(recipe, **LEARNED[name], device="cpu")
    train_items, train_index = items, train
    if config.augment > 0:
        extra = augmented_items(items, train, config.augment, config.seed, progress=True)
        train_items, train_index = items + extra, train + list(range(len(items), len(items) + len(extra)))
    began = time.perf_counter()
    trained = train_encoder(train_items, train_index, config,
                            checkpoint=checkpoint_path("card-readout", config, train_items, train_index),
                            on_epoch=lambda e: print(f"  {name} epoch {e['epoch']} {e['stage']} loss {e['loss']}",
                                                     flush=True))
    print(f"{name} trained in {time.perf_counter() - began:.0f} s", flush=True)
    return embed_items(trained.model, [item.encoded for item in items])


def query_reads(items: list, queries: list[int], known: list[int]) -> tuple[list[dict], tuple[dict, dict]]:
    """What each query's graph says of it, as the embedder records it for a scanned file (a zoo
    model's own label votes first instead): how its blocks rename a ResNet family
    (`zoo.labels.block_names`) and its decoder signature; with the decoders of the `known` rows
    (the training part) to compare them with: the decoder families' and every other family's
    (`zoo.composite.split_decoder_prototypes`)."""
    from narcli.search.query import graph_reads
    from narcli.zoo.composite import split_decoder_prototypes
    from narcli.zoo.store import Zoo

    hashes = {items[row].graph_hash for row in known}
    with Zoo() as zoo:
        decoders = split_decoder_prototypes(zoo, keep=lambda model: model.graph_hash in hashes)
        reads = [graph_reads(zoo.graph(zoo.resolve(items[q].name))) for q in queries]
    return reads, decoders


def renamings(vectors, labels: list[str], queries: list[int], reads: list[dict], decoders: tuple[dict, dict]) -> list[dict[str, str]]:
    """Each query's renamings as `nar similar` applies them (`search.family.query_names`): the
    decoder's only where the vote of its nearest VOTERS (by this method's cosine, itself left out)
    leads with a decoder family."""
    import numpy as np

    from narcli.search.family import VOTERS, combine, query_names
    from narcli.encode.family_rank import vote

    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    out = []
    for q, read in zip(queries, reads):
        cosines = unit @ unit[q]
        cosines[q] = -np.inf
        top = np.argsort(-cosines)[:VOTERS]
        voted = combine(None, vote([labels[i] for i in top], [float(cosines[i]) for i in top]))
        out.append(query_names(read, decoders[0], voted, decoders[1]))
    return out


def store_test_models(card_path: Path, db: Path) -> None:
    """Write into a card trained before cards kept their split (`test_models`) the model ids of its
    test part, drawn the way training drew it: the card's seed on the zoo database it was trained on."""
    from types import SimpleNamespace

    from narcli.encode.dataset import split_random
    from narcli.zoo.store import Zoo

    data = json.loads(card_path.read_text())
    with Zoo([db]) as old:
        # labelled as training labelled the zoo then: each graph by its best-ranked source's first model id
        labelled: dict[str, tuple[str, str, str]] = {}
        for model in sorted(old.models(), key=lambda m: (old.rank(m.source), m.id)):
            labelled.setdefault(model.graph_hash, (model.id, model.family, model.coarse))
        labelled = list(labelled.items())
        _, test = split_random([SimpleNamespace(family=family) for _, (_, family, _) in labelled],
                               data["config"]["seed"])
        hashes = {labelled[i][0] for i in test}
        data["test_models"] = sorted(m.id for m in old.models() if m.graph_hash in hashes)
    if data.get("families") and sorted({family for _, (_, family, _) in labelled}) != sorted(data["families"]):
        raise SystemExit(f"{db} is not the zoo this card was trained on: its families differ")
    card_path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{card_path}: {len(hashes)} test graphs, {len(data['test_models'])} test models, from {db}")


if __name__ == "__main__":
    main()
