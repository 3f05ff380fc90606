"""nar: neural architecture retrieval from the command line.

The package is one subpackage per pipeline stage; ARCHITECTURE.md at the repository root is the map.
"""

from pathlib import Path

__version__ = "0.1.0"

# Bumped whenever the canonical graph changes meaning, so stale cache entries are not reused.
IR_VERSION = 13  # 4: property reads (`x.data`, `x.T`) and indexing with None (`w[:, None]`) as export records them;
#                5: a layer owns the parameters of a weight computed from them (weight standardisation, weight norm)
#                6: attention written one module per head, concatenated, is one multi-head attention
#                7: a constant factor on q before a fused attention is the attention's scale
#                8: causal trims and fused layers split into parts (`graph/gate_idioms.py`); idioms to a fixed point
#                9: softmax heads on convolutions, ReLU capped by clamp, a convolution over its whole map
#               10: `cdist` is a matrix product (against a codebook parameter, a linear layer)
#               11: a loop of parameter-free steps keeps one step (`graph/loop_idioms.py`)
#               12: so does a recurrence of 8 steps or more (each step reads the one before); a folded
#                   loop's cycle is cut where it is read from outside, not where the trace order fell
#               13: a loop whose steps call layers folds too when it runs once per position of an input's
#                   axis (a decoder's attention and cell at every token)

# The bundled zoo, family table, encoder weights and zoo index (package data).
DATA_DIR = Path(__file__).parent / "data"


def __getattr__(name: str) -> object:
    # plugins write `from narcli import hookimpl`; imported lazily to keep `nar` start-up light
    if name == "hookimpl":
        from narcli.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'narcli' has no attribute {name!r}")
