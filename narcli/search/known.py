"""Is a model a known architecture? The rules `nar check` (the pre-commit hook) applies.

Three ways to be known, strongest first:
1. **same graph**: the canonical graph's content hash equals a zoo model's. The hash leaves out
   output shapes, so the same network at another input size (a ResNet-18 fed 32-px CIFAR images)
   is the same architecture, whatever its embedding says.
2. **adapted**: the same layers as a zoo architecture except a few at its two ends — a stem made
   for small images (a 3x3 first convolution, no max-pool), another number of input channels, a
   pooling or classifier head for another number of classes. Copying a network and fitting it to
   one's data does not make a new design.
3. **embedding**: cosine at or above the threshold (0.99 by default) to a zoo architecture.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

# Layer attributes that make two layers the same layer (shapes and names do not).
LAYER_ATTRS = ("in_channels", "out_channels", "in_features", "out_features", "kernel", "stride", "dilation",
               "groups", "features")
ADAPTED_MAX_CHANGES = 3  # layers that may differ on either side
ADAPTED_MAX_TOTAL = 4  # and on both sides together (a swapped stem convolution is two)
ADAPTED_MIN_NODES = 12  # below this a "few changed layers" is most of the network: only the hash counts
END_SHARE = 0.2  # the stem and the head: this share of the nodes at each end, from END_MIN to END_MAX
END_MIN, END_MAX = 3, 12  # (a VGG's head is pool + three linear layers + activations: 8 nodes)


RESPELLED = "its 3×3 stride-1 stem spelled as ImageNet code writes it"  # how a verdict names the second spelling


@dataclass
class Known:
    """Why a model counts as a known architecture."""

    rule: str  # same-graph | adapted | embedding
    zoo_id: str
    family: str
    cosine: float
    changed: list[str]  # for `adapted`: the layers that differ, `-` the zoo model's, `+` the model's
    respelled: bool = False  # for `embedding`: the cosine of its CIFAR-style stem spelled as ImageNet code does

    def describe(self) -> str:
        if self.rule == "same-graph":
            return f"the same architecture as {self.zoo_id} (same canonical graph)"
        if self.rule == "adapted":
            what = " ".join(self.changed) if self.changed else "only its number of outputs"
            return f"{self.zoo_id} with its stem or head adapted ({what})"
        respelled = f" with {RESPELLED}" if self.respelled else ""
        return f"cosine {self.cosine:.3f} to {self.zoo_id}{respelled}"

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "zoo_id": self.zoo_id, "family": self.family, "cosine": round(self.cosine, 4),
                "changed": self.changed, "respelled": self.respelled}


def _final_layers(graph: Any) -> set[int]:
    """Nodes with weights after which no node has weights: the classifier (or other output) layers."""
    successors: dict[int, list[int]] = {}
    for a, b in graph.edges:
        successors.setdefault(a, []).append(b)
    weighted_after = [False] * len(graph.nodes)
    for i in range(len(graph.nodes) - 1, -1, -1):  # nodes are in topological order
        weighted_after[i] = any(graph.nodes[j].params or weighted_after[j] for j in successors.get(i, ()))
    return {i for i, node in enumerate(graph.nodes) if node.params and not weighted_after[i]}


def layer_tokens(graph: Any) -> list[str]:
    """Each node as its operation and layer attributes; a final layer's output width (the number of
    classes) is left out, as a fine-tuned copy changes it."""
    final = _final_layers(graph)
    out = []
    for i, node in enumerate(graph.nodes):
        attrs = [(k, node.attrs[k]) for k in LAYER_ATTRS if k in node.attrs
                 and not (i in final and k in ("out_features", "out_channels"))]
        out.append(node.op + "".join(f" {k}={v}" for k, v in attrs))
    return out


def short_layer(token: str) -> str:
    """`conv2d in_channels=3 out_channels=64 kernel=[3, 3] stride=[1, 1] ...` -> `conv2d(3→64, 3x3, /1)`."""
    op, *pairs = token.split(" ", 1)
    attrs = dict(part.split("=", 1) for part in " ".join(pairs).replace(", ", ",").split(" ") if "=" in part)
    inner = []
    width = (attrs.get("in_channels") or attrs.get("in_features"), attrs.get("out_channels") or attrs.get("out_features"))
    if width[0] and width[1]:
        inner.append(f"{width[0]}→{width[1]}")
    elif width[0]:
        inner.append(f"{width[0]}→")
    if "kernel" in attrs:
        inner.append("x".join(attrs["kernel"].strip("[]").split(",")))
    if "stride" in attrs and set(attrs["stride"].strip("[]").split(",")) != {"1"}:
        inner.append("/" + attrs["stride"].strip("[]").split(",")[0])
    return f"{op}({', '.join(inner)})" if inner else op


def _at_ends(tokens: list[str], changed: Counter) -> bool:
    """Whether every changed token occurs within the stem or the head of `tokens`."""
    n = len(tokens)
    end = min(END_MAX, max(END_MIN, math.ceil(END_SHARE * n)))
    ends = set(tokens[:end]) | set(tokens[n - end:])
    return all(token in ends for token in changed)


def adapted_changes(graph: Any, known: Any) -> list[str] | None:
    """The layers `graph` changes from `known` when they differ only at the stem and head (at most
    ADAPTED_MAX_CHANGES each way, edges within the same count); None when they differ more."""
    if min(len(graph.nodes), len(known.nodes)) < ADAPTED_MIN_NODES:
        return None
    mine, theirs = layer_tokens(graph), layer_tokens(known)
    added, removed = Counter(mine) - Counter(theirs), Counter(theirs) - Counter(mine)
    if max(sum(added.values()), sum(removed.values())) > ADAPTED_MAX_CHANGES or \
            sum(added.values()) + sum(removed.values()) > ADAPTED_MAX_TOTAL:
        return None
    if abs(len(graph.edges) - len(known.edges)) > ADAPTED_MAX_CHANGES:
        return None
    if not (_at_ends(mine, added) and _at_ends(theirs, removed)):
        return None
    return [f"-{short_layer(t)}" for t in sorted(removed.elements())] + \
        [f"+{short_layer(t)}" for t in sorted(added.elements())]
