"""The DARTS cell space as data: genotypes, graph edits between them, and the 10-class set of
paper 000 (appendix A.4): 10 diverse centre genotypes, the rest sampled around each centre by small
edits, class = nearest centre. Pure Python, no torch."""

from __future__ import annotations

import random
from dataclasses import dataclass

OPS = ("skip_connect", "max_pool_3x3", "avg_pool_3x3", "sep_conv_3x3", "sep_conv_5x5", "dil_conv_3x3",
       "dil_conv_5x5")
STEPS = 4  # ADD nodes per cell

# one cell: for each ADD node, two (operation, input) pairs; input 0/1 = the two previous cells,
# input k >= 2 = ADD node k - 2 of this cell
Cell = tuple[tuple[tuple[str, int], tuple[str, int]], ...]


@dataclass(frozen=True)
class Genotype:
    normal: Cell
    reduce: Cell

    def edges(self) -> list[tuple[str, str, int, int]]:
        """(cell kind, op, input, node) for every connection: the unit that edits change."""
        return [(kind, op, source, node) for kind, cell in (("normal", self.normal), ("reduce", self.reduce))
                for node, pair in enumerate(cell) for op, source in pair]

    def text(self) -> str:
        def cell(c: Cell) -> str:
            return "|".join("+".join(f"{op}~{source}" for op, source in pair) for pair in c)
        return f"normal:{cell(self.normal)};reduce:{cell(self.reduce)}"


def parse(text: str) -> Genotype:
    """The genotype `Genotype.text()` wrote; ValueError naming what is wrong otherwise."""
    cells = {}
    try:
        for part in text.split(";"):
            kind, _, body = part.partition(":")
            cells[kind] = tuple(tuple((op, int(source)) for op, _, source in
                                      (item.partition("~") for item in pair.split("+")))
                                for pair in body.split("|"))
        genotype = Genotype(cells["normal"], cells["reduce"])
    except (KeyError, ValueError):
        raise ValueError(f"not a DARTS genotype: {text!r}") from None
    for cell in (genotype.normal, genotype.reduce):
        if len(cell) != STEPS or any(len(pair) != 2 or op not in OPS or not 0 <= source < node + 2
                                     for node, pair in enumerate(cell) for op, source in pair):
            raise ValueError(f"not a DARTS genotype: {text!r}")
    return genotype


def distance(a: Genotype, b: Genotype) -> int:
    """Connections of `a` that `b` lacks (same node, operation and input), 0..16: one edit is 1."""
    total = 0
    for cell_a, cell_b in ((a.normal, b.normal), (a.reduce, b.reduce)):
        for pair_a, pair_b in zip(cell_a, cell_b):
            rest = list(pair_b)
            for connection in pair_a:
                if connection in rest:
                    rest.remove(connection)
                else:
                    total += 1
    return total


def random_cell(rng: random.Random) -> Cell:
    return tuple(tuple((rng.choice(OPS), source) for source in sorted(rng.sample(range(node + 2), 2)))
                 for node in range(STEPS))


def random_genotype(rng: random.Random) -> Genotype:
    return Genotype(random_cell(rng), random_cell(rng))


def edit(genotype: Genotype, rng: random.Random) -> Genotype:
    """One small graph edit: change one connection's operation or the node it reads from."""
    kind = rng.choice(("normal", "reduce"))
    cell = [list(pair) for pair in getattr(genotype, kind)]
    node = rng.randrange(STEPS)
    slot = rng.randrange(2)
    op, source = cell[node][slot]
    if rng.random() < 0.5:
        op = rng.choice([o for o in OPS if o != op])
    else:
        other = cell[node][1 - slot][1]
        choices = [s for s in range(node + 2) if s not in (source, other)]
        if not choices:
            op = rng.choice([o for o in OPS if o != op])
        else:
            source = rng.choice(choices)
    cell[node][slot] = (op, source)
    cell[node].sort(key=lambda pair: pair[1])
    new_cell = tuple(tuple(pair) for pair in cell)
    return Genotype(new_cell, genotype.reduce) if kind == "normal" else Genotype(genotype.normal, new_cell)


def centres(count: int, rng: random.Random, min_distance: int = 12, tries: int = 20_000) -> list[Genotype]:
    """`count` random genotypes pairwise at least `min_distance` connections apart."""
    chosen: list[Genotype] = []
    for _ in range(tries):
        candidate = random_genotype(rng)
        if all(distance(candidate, c) >= min_distance for c in chosen):
            chosen.append(candidate)
            if len(chosen) == count:
                return chosen
    raise ValueError(f"found only {len(chosen)} centres {min_distance} edits apart")


def sample_dataset(per_class: int = 3000, classes: int = 10, max_edits: int = 4,
                   seed: int = 0) -> list[tuple[Genotype, int]]:
    """Distinct genotypes labelled by their nearest centre; each drawn 0..max_edits edits from one.

    A sample nearer another centre than its own takes that centre's label; ties keep its own.
    """
    rng = random.Random(seed)
    centre_list = centres(classes, rng)
    seen: set[Genotype] = set()
    out: list[tuple[Genotype, int]] = []
    counts = [0] * classes
    for index, centre in enumerate(centre_list):
        seen.add(centre)
        out.append((centre, index))
        counts[index] += 1
    while min(counts) < per_class:
        origin = rng.choice([k for k in range(classes) if counts[k] < per_class])
        genotype = centre_list[origin]
        for _ in range(rng.randint(1, max_edits)):
            genotype = edit(genotype, rng)
        if genotype in seen:
            continue
        distances = [distance(genotype, c) for c in centre_list]
        nearest = min(range(classes), key=lambda k: (distances[k], k != origin))
        if counts[nearest] >= per_class:
            continue
        seen.add(genotype)
        out.append((genotype, nearest))
        counts[nearest] += 1
    return out
