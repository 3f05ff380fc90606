"""The zoo's distinct architectures, featurised and labelled, with the train/test splits.

One item per distinct graph hash. Its family and coarse class come from the best-ranked source
that has it (timm before torchvision before transformers), so aliases never disagree.
Featurising the bundled zoo takes a few minutes, so the result is cached under `$NAR_HOME`
(`encode.feature_cache`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from narcli.encode.feature_cache import cached_features
from narcli.encode.features import EncodedGraph


@dataclass
class Item:
    graph_hash: str
    name: str  # a model id that has this graph
    family: str
    coarse: str
    encoded: EncodedGraph


def zoo_items(zoo=None, progress: bool = False, jobs: int = 2) -> list[Item]:
    """Every distinct architecture of the zoo (cached per zoo content)."""
    from narcli.zoo.store import Zoo

    zoo = zoo or Zoo()
    labelled = zoo_labels(zoo)
    digest = hashlib.sha256("\n".join(sorted(f"{h} {v}" for h, v in labelled.items())).encode()).hexdigest()[:16]
    encoded = cached_features(f"zoo-{digest}", lambda: _featurise(zoo, list(labelled), progress, jobs))
    return [Item(h, *labelled[h], encoded[h]) for h in labelled if h in encoded]


def zoo_labels(zoo) -> dict[str, tuple[str, str, str]]:
    """Graph hash -> (model id, family, coarse class) of the model searches name it after
    (`Zoo.models_by_hash`: best-ranked source, then the most common family), in item order."""
    labelled: dict[str, tuple[str, str, str]] = {}
    for model in sorted(zoo.models(), key=zoo.naming_key):
        if model.graph_hash and model.graph_hash not in labelled:
            labelled[model.graph_hash] = (model.id, model.family, model.coarse)
    return labelled


def map_in_processes(fn: Callable[[Any], Any], inputs: list, label: str, progress: bool, jobs: int,
                     chunksize: int = 8) -> list:
    """`[fn(x) for x in inputs]` in `jobs` worker processes, with a progress bar when asked."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from rich.progress import Progress

    from narcli.trace.isolation import guard_child

    out = []
    # guarded workers die with this process: a killed `nar index build` leaves none computing on
    with ProcessPoolExecutor(max_workers=max(1, jobs), initializer=guard_child, initargs=(os.getpid(),)) as pool, \
            Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task(label, total=len(inputs))
        for result in pool.map(fn, inputs, chunksize=chunksize):
            out.append(result)
            bar.advance(task)
    return out


def augmented_items(items: list[Item], train: list[int], count: int, seed: int, zoo=None, progress: bool = False,
                    jobs: int = 2) -> list[Item]:
    """`count` edited variants (`encode.augment`) of each training architecture, with its labels;
    for training only, never for evaluation. Cached like the zoo's features."""
    from narcli.zoo.store import Zoo

    zoo = zoo or Zoo()
    chosen = [items[i] for i in train]
    from narcli.encode.augment import AUGMENT_VERSION

    # the edits' version is part of the key: changed edits must not reuse variants made before
    digest = hashlib.sha256(json.dumps([sorted(i.graph_hash for i in chosen), count, seed, AUGMENT_VERSION])
                            .encode()).hexdigest()[:16]

    def build() -> list[list[EncodedGraph]]:
        tasks = [(zoo.graph_blob(item.graph_hash), count, _variant_seed(item.graph_hash, seed)) for item in chosen]
        return map_in_processes(_encode_variants, tasks, "featurising edited variants", progress, jobs)

    encoded = cached_features(f"zoo-augmented-{digest}", build)
    return [Item(f"{item.graph_hash}~{j}", item.name, item.family, item.coarse, e)
            for item, variants in zip(chosen, encoded) for j, e in enumerate(variants)]


def original_hash(copy: Item) -> str:
    """The graph hash of the architecture an edited variant (`augmented_items`) was made from."""
    return copy.graph_hash.split("~", 1)[0]


def _variant_seed(graph_hash: str, seed: int) -> int:
    return int(hashlib.sha256(f"{graph_hash}:{seed}".encode()).hexdigest()[:8], 16)


def _encode_variants(task: tuple[bytes, int, int]) -> list[EncodedGraph]:
    import zlib

    from narcli.encode.augment import variants
    from narcli.encode.features import GraphTooLarge, encode_graph
    from narcli.graph.arch_graph import ArchGraph
    from narcli.graph.idioms import normalise_idioms

    blob, count, seed = task
    graph = normalise_idioms(ArchGraph.from_json(zlib.decompress(blob).decode()))
    out = []
    for variant in variants(graph, count, seed):
        try:
            out.append(encode_graph(variant))
        except GraphTooLarge:
            pass
    return out


def _featurise(zoo, hashes: list[str], progress: bool, jobs: int) -> dict[str, EncodedGraph]:
    blobs = [(h, zoo.graph_blob(h)) for h in hashes]
    encoded = map_in_processes(_encode_blob, blobs, "featurising the zoo", progress, jobs)
    return {h: e for h, e in zip(hashes, encoded) if e is not None}


def _encode_blob(item: tuple[str, bytes]) -> EncodedGraph | None:
    import zlib

    from narcli.encode.features import GraphTooLarge, encode_graph
    from narcli.graph.arch_graph import ArchGraph
    from narcli.graph.idioms import normalise_idioms

    try:  # zoo graphs traced before an idiom rule existed get it here
        return encode_graph(normalise_idioms(ArchGraph.from_json(zlib.decompress(item[1]).decode())))
    except GraphTooLarge:
        return None


def split_random(items: list[Item], seed: int = 0, test_fraction: float = 0.1) -> tuple[list[int], list[int]]:
    """90/10 split stratified by family: each family with 2+ members sends ~10 % to test
    (stochastic rounding, so small families contribute in proportion), never all of them."""
    rng = random.Random(seed)
    by_family: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        by_family[item.family].append(i)
    train, test = [], []
    for family in sorted(by_family):
        members = by_family[family]
        rng.shuffle(members)
        expected = test_fraction * len(members)
        count = int(expected) + (rng.random() < expected - int(expected))
        count = min(count, len(members) - 1) if len(members) >= 2 else 0
        test += members[:count]
        train += members[count:]
    return sorted(train), sorted(test)


def test_models(items: list[Item], test: list[int], zoo=None) -> list[str]:
    """Every zoo model id whose graph is in the test part: what a model card keeps of its split, so
    relabelling or re-tracing the zoo later cannot move a trained-on graph into the test part."""
    from narcli.zoo.store import Zoo

    zoo = zoo or Zoo()
    hashes = {items[i].graph_hash for i in test}
    return sorted(model.id for model in zoo.models() if model.graph_hash in hashes)


def card_split(items: list[Item], card: dict, zoo=None) -> tuple[list[int], list[int]]:
    """The encoder card's own split of `items` (today's zoo): its stored test models, carried by model
    id to today's graphs. A graph is test only when every model that has it today is one of them (a
    test graph that now equals a trained one, or that a newly added model shares, stays out).
    A card without stored test models falls back to its seed's split of today's labels."""
    stored = card.get("test_models")
    if not stored:
        return split_random(items, seed=card["config"]["seed"])
    from narcli.zoo.store import Zoo

    zoo = zoo or Zoo()
    tested = set(stored)
    models_of: dict[str, list[str]] = defaultdict(list)
    for model in zoo.models():
        if model.graph_hash:
            models_of[model.graph_hash].append(model.id)
    test_hashes = {h for h, ids in models_of.items() if all(i in tested for i in ids)}
    test = [i for i, item in enumerate(items) if item.graph_hash in test_hashes]
    train = [i for i, item in enumerate(items) if item.graph_hash not in test_hashes]
    return train, test


def split_ood(items: list[Item], seed: int = 0, family_fraction: float = 0.2) -> tuple[list[int], list[int]]:
    """Whole families held out: 20 % of the families with 2+ members (fixed seed) are test only."""
    rng = random.Random(seed)
    families = sorted({item.family for item in items})
    counts = defaultdict(int)
    for item in items:
        counts[item.family] += 1
    eligible = [f for f in families if counts[f] >= 2]
    held = set(rng.sample(eligible, round(family_fraction * len(eligible))))
    train = [i for i, item in enumerate(items) if item.family not in held]
    test = [i for i, item in enumerate(items) if item.family in held]
    return train, test
