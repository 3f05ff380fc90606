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

COARSE = ("convolutional", "transformer", "hybrid", "mlp", "recurrent", "state-space", "other")
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


def coarse_from_structure(op_counts: Mapping[str, int]) -> str:
    """A coarse class from the kinds of operations a graph uses (for families not in the table)."""
    convs = sum(n for op, n in op_counts.items() if "conv" in op)
    if any(op_counts.get(op, 0) for op in ("lstm", "gru", "rnn")):
        return "recurrent"
    if op_counts.get("attention", 0):
        return "hybrid" if convs >= HYBRID_MIN_CONVS else "transformer"
    if convs > 2:
        return "convolutional"
    if op_counts.get("linear", 0) or op_counts.get("matmul", 0):
        return "mlp"
    return "other"


def label(source: str, key: str, op_counts: Mapping[str, int]) -> tuple[str, str, bool]:
    """(family, coarse, reviewed): from the table when it has `key`, else from the structure."""
    found = family_table().get((source, key))
    if found:
        return found[0], found[1], True
    return key, coarse_from_structure(op_counts), False
