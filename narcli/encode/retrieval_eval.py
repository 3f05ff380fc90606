"""`nar eval retrieval` and `nar train encoder`: train on a split of the zoo, compare with baselines."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from narcli.encode.training import TrainConfig

# method name -> how it differs from the NAR recipe (every learned method gets the same recipe)
LEARNED = {
    "GCN": {"use_motifs": False, "use_wl": False, "wl_mix": 1.0, "robust_mix": 0.0, "motif_epochs": 0, "kind": "gcn",
            "full_graph": "none"},
    "GAT": {"use_motifs": False, "use_wl": False, "wl_mix": 1.0, "robust_mix": 0.0, "motif_epochs": 0, "kind": "gat",
            "full_graph": "none"},
    "NAR": {},
}
ABLATIONS = {
    "NAR without motifs (GCN on the full graph)": {"use_motifs": False, "motif_epochs": 0, "full_graph": "none"},
    "NAR without motif pretraining": {"motif_epochs": 0},
    "NAR without the full-graph branch": {"full_graph": "none"},
    "NAR, CE only": {"cl_weight": 0.0, "ce_weight": 1.0},
    "NAR, CE + CL": {"ce_weight": 1.0},
}


DATASETS = ("zoo", "darts")


def checkpoint_path(tag: str, config: TrainConfig, items: list, train: list[int]) -> Path:
    """Where training with `config` on `items[train]` keeps its per-epoch checkpoint.

    An interrupted run resumes from it only with the same training settings, training data and
    features version: relabelling the zoo must not resume from a model trained on the old labels.
    Read-out settings (the WL weight) are left out, so another weight reuses the trained model.
    """
    from narcli.encode.features import FEATURES_VERSION
    from narcli.encode.training import training_key
    from narcli.scan.cache import nar_home

    data = hashlib.sha256(json.dumps([[items[i].graph_hash, items[i].family, items[i].coarse] for i in train])
                          .encode()).hexdigest()
    from narcli.encode.augment import AUGMENT_VERSION

    # edited variants are named "<hash>~<n>" whatever the edits were: their version keys them
    key = [training_key(config), data, FEATURES_VERSION] + ([AUGMENT_VERSION] if config.augment else [])
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return nar_home() / "checkpoints" / f"{tag}-{digest}.pt"


def evaluate_retrieval(split: str = "random", ks: tuple[int, ...] = (20, 50, 100), config: TrainConfig | None = None,
                       ablations: bool = False, seed: int = 0, data: str = "zoo",
                       report: Callable[[str], None] = lambda line: None,
                       methods: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Metrics of every method on one split of the zoo (or of the DARTS 10-class set); relevance by
    family, and by coarse class."""
    from narcli.encode.dataset import split_ood, split_random, zoo_items
    from narcli.encode.evaluation import (
        op_histogram_embeddings,
        retrieval_metrics,
        wl_embeddings,
    )
    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT
    from narcli.encode.training import embed_items, train_encoder

    if split not in ("random", "ood"):
        raise ValueError(f"unknown split {split!r}; use random or ood")
    if data not in DATASETS:
        raise ValueError(f"unknown data set {data!r}; use zoo or darts")
    config = config or TrainConfig(seed=seed)
    if data == "zoo":
        report("featurising the zoo (cached after the first run)")
        items = zoo_items(progress=True)
    else:
        from narcli.encode.darts_data import darts_items

        report("building the DARTS 10-class set (cached after the first run)")
        items = darts_items(progress=True)
    train, test = (split_random if split == "random" else split_ood)(items, seed=seed)
    graphs = [item.encoded for item in items]
    family = [item.family for item in items]
    coarse = [item.coarse for item in items]
    results: dict[str, Any] = {"data": data, "split": split, "seed": seed, "architectures": len(items), "train": len(train),
                               "test": len(test), "ks": list(ks), "methods": {}, "config": vars(config).copy()}
    if data == "zoo":  # kept in the model card: later relabelling cannot move trained-on graphs into test
        from narcli.encode.dataset import test_models

        results["test_models"] = test_models(items, test)

    def score(name: str, embeddings: Any, seconds: float) -> None:
        # each method in cosine order and with the search's second stage (which any embedding can have)
        for suffix, weight in (("", 0.0), (" + family re-rank", FAMILY_RERANK_WEIGHT)):
            row = results["methods"][name + suffix] = {
                "family": retrieval_metrics(embeddings, family, test, ks, rerank=weight), "seconds": round(seconds, 1)}
            if len(set(coarse)) > 1:  # every DARTS network is convolutional
                row["coarse"] = retrieval_metrics(embeddings, coarse, test, ks, rerank=weight, vote_labels=family)
            report(f"{name + suffix}: MAP@{ks[0]} {row['family'][f'MAP@{ks[0]}']:.3f}")

    began = time.perf_counter()
    score("op-type histogram", op_histogram_embeddings(graphs), time.perf_counter() - began)
    began = time.perf_counter()
    score("WL subtree hashing", wl_embeddings(graphs), time.perf_counter() - began)
    chosen = {name: changes for name, changes in LEARNED.items() if methods is None or name in methods}
    if ablations:
        chosen.update(ABLATIONS)
    train_items, train_index = items, train
    if config.augment > 0:
        from narcli.encode.dataset import augmented_items

        if data != "zoo":
            raise ValueError("augmentation edits zoo graphs; the DARTS set is trained without it")
        report(f"adding {config.augment} edited variants of each training architecture")
        extra = augmented_items(items, train, config.augment, seed, progress=True)
        train_items = items + extra
        train_index = train + list(range(len(items), len(train_items)))
        results["augmented"] = len(extra)
    for name, changes in chosen.items():
        began = time.perf_counter()
        report(f"training {name}")
        method_config = replace(config, **changes)
        trained = train_encoder(train_items, train_index, method_config,
                                checkpoint=checkpoint_path(f"{data}-{split}", method_config, train_items, train_index),
                                on_epoch=lambda e, n=name: report(f"  {n} epoch {e['epoch']} {e['stage']} loss {e['loss']}"))
        score(name, embed_items(trained.model, graphs), time.perf_counter() - began)
        if name == "NAR":
            results["nar_model"] = trained
            # the same model without the WL sketch in its embedding
            score("NAR, learned part only (no WL sketch)", embed_items(trained.model, graphs, learned_only=True), 0.0)
    return results


def train_and_save(path: Path, config: TrainConfig, report: Callable[[str], None] = lambda line: None,
                   methods: tuple[str, ...] | None = None) -> dict:
    """Train NAR (and the learned baselines in `methods`) on the random split's training part,
    evaluate on its test part, write NAR's weights."""
    from datetime import date

    from narcli.encode.weights import save_weights

    methods = tuple(dict.fromkeys([*(methods or LEARNED), "NAR"]))
    results = evaluate_retrieval("random", config=config, report=report, methods=methods)
    trained = results.pop("nar_model")
    card = {"date": date.today().isoformat(), "data": f"bundled zoo, {results['architectures']} distinct architectures",
            "split": f"random 90/10 stratified by family, seed {config.seed}: {results['train']} train, "
                     f"{results['test']} test", "metrics": results["methods"], "log": trained.log,
            "test_models": results["test_models"]}
    save_weights(trained, path, card)
    return results
