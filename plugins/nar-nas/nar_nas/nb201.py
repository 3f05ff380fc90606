"""The NAS-Bench-201 network (METHODS.md §3) for an architecture string, built as the benchmark's
reference code runs it: `none` edges multiply by zero and skip edges pass their input on, so cells
that differ only in a `none` or skip edge are different graphs (the latency datasets timed these
computations); only cells that sum the same terms in another order share one."""

from __future__ import annotations

import csv
import itertools

OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
EDGES = 6  # node j takes every node i < j, for 4 nodes
CELLS_PER_STAGE = 5
NETWORK_VERSION = "reference-2"  # recorded in the zoo; caches of other versions are rebuilt


def parse(arch: str) -> list[list[tuple[str, int]]]:
    """`|op~0|+|op~0|op~1|+|...|` -> for nodes 1..3, their (op, source node) inputs."""
    nodes = []
    for part in arch.strip().split("+"):
        inputs = []
        for item in part.strip("|").split("|"):
            op, _, source = item.partition("~")
            if op not in OPS or not source.isdigit():
                raise ValueError(f"not a NAS-Bench-201 architecture string: {arch!r}")
            inputs.append((op, int(source)))
        nodes.append(inputs)
    if [[source for _, source in n] for n in nodes] != [[0], [0, 1], [0, 1, 2]]:
        raise ValueError(f"not a NAS-Bench-201 architecture string: {arch!r}")
    return nodes


def arch_string(ops: tuple[str, ...]) -> str:
    """The string for six edge ops in the order (0->1, 0->2, 1->2, 0->3, 1->3, 2->3)."""
    a, b, c, d, e, f = ops
    return f"|{a}~0|+|{b}~0|{c}~1|+|{d}~0|{e}~1|{f}~2|"


def all_archs() -> list[str]:
    return [arch_string(ops) for ops in itertools.product(OPS, repeat=EDGES)]


def archs_from_csv(path: str) -> list[str]:
    with open(path, newline="") as f:
        return list(dict.fromkeys(row["arch_str"] for row in csv.DictReader(f)))


def network(arch: str, classes: int = 10):
    from torch import nn

    nodes = parse(arch)

    def relu_conv_bn(c_in: int, c_out: int, kernel: int, stride: int = 1) -> nn.Module:
        return nn.Sequential(nn.ReLU(), nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=False),
                             nn.BatchNorm2d(c_out))

    class Zero(nn.Module):
        """`none`: the reference code multiplies by zero, so the edge is computed (and timed)."""

        def forward(self, x):
            return x.mul(0.0)

    def make_op(op: str, c: int) -> nn.Module:
        if op == "none":
            return Zero()
        if op == "skip_connect":
            return nn.Identity()
        if op == "avg_pool_3x3":
            return nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        return relu_conv_bn(c, c, 1 if op == "nor_conv_1x1" else 3)

    class Cell(nn.Module):
        """NAS-Bench-201's `InferCell`: node j = sum(op(node i) for every i < j), every edge kept."""

        def __init__(self, c: int):
            super().__init__()
            self.edges = nn.ModuleDict({f"{i}_{j}": make_op(op, c)
                                        for j, inputs in enumerate(nodes, start=1) for op, i in inputs})

        def forward(self, x):
            states = [x]
            for j in range(1, 4):
                # Python's sum starts from 0, as the reference forward does
                states.append(sum(self.edges[f"{i}_{j}"](states[i]) for i in range(j)))
            return states[3]

    class Reduction(nn.Module):
        def __init__(self, c_in: int, c_out: int):
            super().__init__()
            self.a = relu_conv_bn(c_in, c_out, 3, 2)
            self.b = relu_conv_bn(c_out, c_out, 3)
            self.shortcut = nn.Sequential(nn.AvgPool2d(2, 2), nn.Conv2d(c_in, c_out, 1, bias=False))

        def forward(self, x):
            return self.b(self.a(x)) + self.shortcut(x)

    layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)]
    c = 16
    for stage in range(3):
        if stage:
            layers.append(Reduction(c, 2 * c))
            c *= 2
        layers += [Cell(c) for _ in range(CELLS_PER_STAGE)]
    layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)
