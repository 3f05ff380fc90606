"""Family and coarse-class labels: the reviewed table `data/families.csv`, else the graph's structure.

The table maps what a source reports about a model's construction (timm's generator function or
module, a transformers `model_type`, a torchvision builder module) to a fine family name and one
of the coarse classes. Labels never come from the model's name.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from narcli import DATA_DIR

COARSE = ("convolutional", "transformer", "hybrid", "mlp", "recurrent", "state-space", "other", "graph")
# the coarse classes of an encoder whose model card does not list them (trained before "graph")
COARSE_BEFORE_GRAPH = COARSE[:7]
RECURRENT_OPS = ("lstm", "gru", "rnn")
TABLE = DATA_DIR / "families.csv"

# Below this many convolutions, a network with attention is a transformer with a conv stem or
# patch embedding, not a hybrid.
HYBRID_MIN_CONVS = 4


@lru_cache(maxsize=1)
def family_table(path: Path = TABLE) -> dict[tuple[str, str], tuple[str, str]]:
    """(source, key) -> (family, coarse) from the reviewed table."""
    table = {}
    if path.exists():
        with open(path, newline="") as f:
            for row in csv.DictReader(line for line in f if not line.startswith("#")):
                table[(row["source"], row["key"])] = (row["family"], row["coarse"])
    return table


def _convolutions(op_counts: Mapping[str, int]) -> int:
    from narcli.graph.vocab import OPS

    return sum(n for op, n in op_counts.items() if OPS.get(op) == "convolution")


def coarse_from_structure(op_counts: Mapping[str, int]) -> str:
    """A coarse class from the kinds of operations a graph uses (for families not in the table)."""
    convs = _convolutions(op_counts)
    if op_counts.get("scatter", 0) and not convs and not op_counts.get("attention", 0):
        return "graph"  # message passing: gather along edges, scatter-add into nodes
    if any(op_counts.get(op, 0) for op in RECURRENT_OPS):
        return "recurrent"
    if op_counts.get("attention", 0):
        return "hybrid" if convs >= HYBRID_MIN_CONVS else "transformer"
    if convs >= 2:  # LeNet-5 has two
        return "convolutional"
    if op_counts.get("linear", 0) or op_counts.get("matmul", 0):
        return "mlp"
    return "other"


def possible_coarse(op_counts: Mapping[str, int]) -> set[str]:
    """The coarse classes a graph with these operations can belong to: no convolution, never
    convolutional or hybrid; no attention or matrix product, never transformer; a recurrence without
    attention is recurrent; no scatter, no graph network. The encoder's guess and its neighbours'
    vote are kept to these, so an MLP or an LSTM is never "convolutional"."""
    convs = _convolutions(op_counts)
    attention = op_counts.get("attention", 0)
    products = sum(op_counts.get(op, 0) for op in ("attention", "matmul", "bmm", "einsum"))
    recurrent = sum(op_counts.get(op, 0) for op in RECURRENT_OPS)
    if recurrent and not attention and not op_counts.get("scatter", 0):
        return {"recurrent"}
    allowed = set(COARSE)
    if not convs:
        allowed -= {"convolutional", "hybrid"}
    if not products:
        allowed -= {"transformer", "hybrid"}
    if not recurrent:
        allowed.discard("recurrent")
    if not op_counts.get("scatter", 0):
        allowed.discard("graph")
    return allowed


def label(source: str, key: str, op_counts: Mapping[str, int], graph: Any = None) -> tuple[str, str, bool]:
    """(family, coarse, reviewed): from the table when it has `key`, else from the structure; with
    the traced `graph`, a ResNet family is refined by what its blocks hold (`refine_family`)."""
    found = family_table().get((source, key))
    if found:
        return (refine_family(found[0], graph) if graph is not None else found[0]), found[1], True
    return key, coarse_from_structure(op_counts), False


# Sources file one design under another's builder: timm's SE-ResNets and ResNet-RS sit in its resnet
# module (its legacy SE-ResNets and MONAI's under senet), torchvision's ResNeXts in its resnet module
# (timm's under resnext). The blocks say which design it is, so every source gets the same name.
REFINED = ("resnet", "resnext")


def refine_family(family: str, graph: Any) -> str:
    """A ResNet with squeeze-and-excitation gates is an SENet (SE-ResNeXt too, as the SENet paper
    and timm's legacy models file it); one with grouped bottleneck convolutions a ResNeXt."""
    if family not in REFINED:
        return family
    if has_squeeze_excitation(graph):
        return "senet"
    grouped = any(n.op == "conv2d" and 1 < (n.attrs or {}).get("groups", 1) < (n.attrs or {}).get("in_channels", 0)
                  for n in graph.nodes)
    return "resnext" if grouped else family


def block_names(graph: Any) -> dict[str, str]:
    """How `graph`'s blocks rename a ResNet family ({"resnet": "resnext"} for grouped bottlenecks;
    empty for plain blocks or another design): a query is named the way the zoo names its models."""
    return {f: to for f in REFINED if (to := refine_family(f, graph)) != f}


GATES = ("sigmoid", "hard_sigmoid")


def has_squeeze_excitation(graph: Any) -> bool:
    """A gate that scales a feature map by a sigmoid of two projections of its global pool, with an
    activation between them (ECA's single 1-D convolution is another design)."""
    parents, children = graph.parents(), graph.children()
    nodes = graph.nodes

    def only_parent(i: int) -> int | None:
        return parents[i][0] if len(parents[i]) == 1 else None

    for i, node in enumerate(nodes):
        if node.op not in GATES or not any(nodes[c].op == "mul" for c in children[i]):
            continue
        chain, at = [], i
        for _ in range(4):
            at = only_parent(at)
            if at is None:
                break
            chain.append(nodes[at].op)
        if len(chain) == 4 and chain[0] == "linear" and chain[2] == "linear" and chain[1] not in ("linear", *GATES) \
                and chain[3] in ("global_avg_pool", "mean"):
            return True
    return False
