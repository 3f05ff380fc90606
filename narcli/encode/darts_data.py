"""The DARTS 10-class retrieval benchmark (30,000 architectures) as encoder items, cached."""

from __future__ import annotations

import hashlib

from narcli.encode.dataset import Item, map_in_processes
from narcli.encode.feature_cache import cached_features
from narcli.encode.features import EncodedGraph
from narcli.nas.darts_space import sample_dataset


def darts_items(per_class: int = 3000, seed: int = 0, progress: bool = False, jobs: int = 2) -> list[Item]:
    """Sampled genotypes, labelled `darts-<class>`, with their encoded graphs."""
    data = sample_dataset(per_class=per_class, seed=seed)
    texts = [genotype.text() for genotype, _ in data]
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]  # changes whenever the sample does
    encoded = cached_features(f"darts-{digest}", lambda: map_in_processes(
        _encode_one, [genotype for genotype, _ in data], "building and featurising DARTS graphs", progress, jobs,
        chunksize=64))
    return [Item(text, f"darts-{k:05d}", f"darts-{label}", "convolutional", graph)
            for k, ((_, label), text, graph) in enumerate(zip(data, texts, encoded))]


def _encode_one(genotype) -> EncodedGraph:
    from narcli.encode.features import encode_graph
    from narcli.nas.darts_graph import darts_graph

    return encode_graph(darts_graph(genotype))
