"""A DARTS-style cell space (METHODS.md §3), its network, and a 10-class set generated from a seed."""

from __future__ import annotations

import random

OPS = ("skip_connect", "max_pool_3x3", "avg_pool_3x3", "sep_conv_3x3", "sep_conv_5x5",
       "dil_conv_3x3", "dil_conv_5x5")
NODES = 4
CLASSES = 10
DEFAULT_COUNT = 30_000
MAX_EDITS = 3  # members of a class are 1..3 edits away from its centre
C = 16  # channels of the first cells
LAYERS = 5  # normal, reduction, normal, reduction, normal

# A genotype: for the normal and the reduction cell, 4 nodes x 2 inputs of (op, source), where
# source 0 and 1 are the two cell inputs and 2.. the earlier nodes.
Genotype = tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]


def random_cell(rng: random.Random) -> tuple[tuple[str, int], ...]:
    edges = []
    for node in range(NODES):
        for _ in range(2):
            edges.append((rng.choice(OPS), rng.randrange(node + 2)))
    return tuple(edges)


def random_genotype(rng: random.Random) -> Genotype:
    return random_cell(rng), random_cell(rng)


def _slots(genotype: Genotype) -> list[tuple[str, int]]:
    return list(genotype[0]) + list(genotype[1])


def distance(a: Genotype, b: Genotype) -> int:
    """How many of the 32 choices (16 ops, 16 sources) differ."""
    return sum((x[0] != y[0]) + (x[1] != y[1]) for x, y in zip(_slots(a), _slots(b)))


def edit(genotype: Genotype, edits: int, rng: random.Random) -> Genotype:
    slots = _slots(genotype)
    for _ in range(edits):
        k = rng.randrange(len(slots))
        op, source = slots[k]
        node = (k % (2 * NODES)) // 2
        if rng.random() < 0.5:
            op = rng.choice([o for o in OPS if o != op])
        elif node > 0:
            source = rng.choice([s for s in range(node + 2) if s != source])
        else:
            source = 1 - source
        slots[k] = (op, source)
    return tuple(slots[:2 * NODES]), tuple(slots[2 * NODES:])


def centres(seed: int, candidates: int = 2000) -> list[Genotype]:
    """10 diverse genotypes: farthest-point picks among random ones."""
    rng = random.Random(seed)
    pool = [random_genotype(rng) for _ in range(candidates)]
    chosen = [pool[0]]
    while len(chosen) < CLASSES:
        chosen.append(max(pool, key=lambda g: min(distance(g, c) for c in chosen)))
    return chosen


def generate(count: int = DEFAULT_COUNT, seed: int = 0) -> list[tuple[Genotype, int]]:
    """`count` (genotype, class) pairs: each class's centre, then edits of the centres in turn."""
    rng = random.Random(seed + 1)
    anchors = centres(seed)
    out = [(centre, k) for k, centre in enumerate(anchors)][:count]
    seen = {g for g, _ in out}
    while len(out) < count:
        k = len(out) % CLASSES
        genotype = edit(anchors[k], rng.randint(1, MAX_EDITS), rng)
        if genotype in seen:
            continue
        seen.add(genotype)
        nearest = min(range(CLASSES), key=lambda c: (distance(genotype, anchors[c]), c != k))
        out.append((genotype, nearest))
    return out


def encode(genotype: Genotype) -> str:
    return "/".join(",".join(f"{op}~{src}" for op, src in cell) for cell in genotype)


def decode(text: str) -> Genotype:
    cells = []
    for part in text.split("/"):
        edges = []
        for item in part.split(","):
            op, _, src = item.partition("~")
            if op not in OPS:
                raise ValueError(f"unknown DARTS op {op!r}")
            edges.append((op, int(src)))
        cells.append(tuple(edges))
    return cells[0], cells[1]


def network(genotype: Genotype, classes: int = 10):
    import torch
    from torch import nn

    def relu_conv_bn(c_in: int, c_out: int) -> nn.Module:
        return nn.Sequential(nn.ReLU(), nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out))

    class FactorizedReduce(nn.Module):
        def __init__(self, c_in: int, c_out: int):
            super().__init__()
            self.relu = nn.ReLU()
            self.a = nn.Conv2d(c_in, c_out // 2, 1, 2, bias=False)
            self.b = nn.Conv2d(c_in, c_out - c_out // 2, 1, 2, bias=False)
            self.bn = nn.BatchNorm2d(c_out)

        def forward(self, x):
            x = self.relu(x)
            return self.bn(torch.cat([self.a(x), self.b(x[:, :, 1:, 1:])], dim=1))

    def sep_conv(c: int, k: int, stride: int) -> nn.Module:
        def half(s: int) -> list[nn.Module]:
            return [nn.ReLU(), nn.Conv2d(c, c, k, s, k // 2, groups=c, bias=False),
                    nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)]
        return nn.Sequential(*half(stride), *half(1))

    def dil_conv(c: int, k: int, stride: int) -> nn.Module:
        return nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, k, stride, k - 1, dilation=2, groups=c, bias=False),
                             nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c))

    def make_op(op: str, c: int, stride: int) -> nn.Module:
        if op == "skip_connect":
            return nn.Identity() if stride == 1 else FactorizedReduce(c, c)
        if op == "max_pool_3x3":
            return nn.MaxPool2d(3, stride, 1)
        if op == "avg_pool_3x3":
            return nn.AvgPool2d(3, stride, 1, count_include_pad=False)
        kernel = int(op[-1])
        return sep_conv(c, kernel, stride) if op.startswith("sep") else dil_conv(c, kernel, stride)

    class Cell(nn.Module):
        def __init__(self, edges: tuple, c_pp: int, c_p: int, c: int, reduction: bool, reduction_prev: bool):
            super().__init__()
            self.pre0 = FactorizedReduce(c_pp, c) if reduction_prev else relu_conv_bn(c_pp, c)
            self.pre1 = relu_conv_bn(c_p, c)
            self.edges = edges
            self.ops = nn.ModuleList(make_op(op, c, 2 if reduction and src < 2 else 1) for op, src in edges)

        def forward(self, s0, s1):
            states = [self.pre0(s0), self.pre1(s1)]
            for node in range(NODES):
                (_, a), (_, b) = self.edges[2 * node], self.edges[2 * node + 1]
                states.append(self.ops[2 * node](states[a]) + self.ops[2 * node + 1](states[b]))
            return torch.cat(states[2:], dim=1)

    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            stem = 3 * C
            self.stem = nn.Sequential(nn.Conv2d(3, stem, 3, padding=1, bias=False), nn.BatchNorm2d(stem))
            c_pp, c_p, c = stem, stem, C
            self.cells = nn.ModuleList()
            reduction_prev = False
            for layer in range(LAYERS):
                reduction = layer % 2 == 1
                if reduction:
                    c *= 2
                cell = Cell(genotype[1] if reduction else genotype[0], c_pp, c_p, c, reduction, reduction_prev)
                self.cells.append(cell)
                reduction_prev = reduction
                c_pp, c_p = c_p, NODES * c
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Linear(c_p, classes)

        def forward(self, x):
            s0 = s1 = self.stem(x)
            for cell in self.cells:
                s0, s1 = s1, cell(s0, s1)
            return self.classifier(self.pool(s1).flatten(1))

    return Network()
