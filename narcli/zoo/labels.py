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


def label(source: str, key: str, op_counts: Mapping[str, int]) -> tuple[str, str, bool]:
    """(family, coarse, reviewed): from the table when it has `key`, else from the structure."""
    found = family_table().get((source, key))
    if found:
        return found[0], found[1], True
    return key, coarse_from_structure(op_counts), False
