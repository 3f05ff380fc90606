"""The DARTS space of `narcli.nas` (METHODS.md §3) as zoo entries: one implementation, shared with
`nar eval retrieval --nas`."""

from __future__ import annotations

from narcli.nas.darts_space import OPS, Genotype, parse, sample_dataset  # noqa: F401 (re-exported)

CLASSES = 10
DEFAULT_COUNT = 30_000


def generate(count: int = DEFAULT_COUNT, seed: int = 0) -> list[tuple[Genotype, int]]:
    """`count` (genotype, class) pairs, balanced over the 10 classes."""
    per_class = -(-count // CLASSES)
    data = sample_dataset(per_class=per_class, classes=CLASSES, seed=seed)
    by_class = [[pair for pair in data if pair[1] == k] for k in range(CLASSES)]
    return [by_class[i % CLASSES][i // CLASSES] for i in range(count)]


def encode(genotype: Genotype) -> str:
    return genotype.text()


def decode(text: str) -> Genotype:
    return parse(text)


def network(genotype: Genotype, classes: int = 10):
    from narcli.nas.darts_net import DartsNetwork

    return DartsNetwork(genotype, classes=classes)
