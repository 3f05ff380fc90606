"""The DARTS 10-class retrieval benchmark (30,000 architectures) as encoder items, cached."""

from __future__ import annotations

from narcli.dataset import Item, cached_features
from narcli.features import EncodedGraph


def darts_items(per_class: int = 3000, seed: int = 0, progress: bool = False, jobs: int = 2) -> list[Item]:
    """Sampled genotypes, labelled `darts-<class>`, with their encoded graphs."""
    from narcli.nas.darts_space import sample_dataset

    import hashlib

    data = sample_dataset(per_class=per_class, seed=seed)
    texts = [genotype.text() for genotype, _ in data]
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]  # changes whenever the sample does
    encoded = cached_features(f"darts-{digest}", lambda: _encode_all(data, progress, jobs))
    return [Item(text, f"darts-{k:05d}", f"darts-{label}", "convolutional", graph)
            for k, ((_, label), text, graph) in enumerate(zip(data, texts, encoded))]


def _encode_all(data: list, progress: bool, jobs: int) -> list[EncodedGraph]:
    from concurrent.futures import ProcessPoolExecutor

    from rich.progress import Progress

    genotypes = [genotype for genotype, _ in data]
    out: list[EncodedGraph] = []
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool, Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("building and featurising DARTS graphs", total=len(genotypes))
        for encoded in pool.map(_encode_one, genotypes, chunksize=64):
            out.append(encoded)
            bar.advance(task)
    return out


def _encode_one(genotype) -> EncodedGraph:
    from narcli.features import encode_graph
    from narcli.nas.darts_graph import darts_graph

    return encode_graph(darts_graph(genotype))
