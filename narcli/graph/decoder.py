"""The decoder of a dense-prediction model, summed up: what its part from an upsampling on does.

A segmentation model is an encoder (most of its graph, often a classifier's backbone) and a decoder
that brings the features back to the input's resolution. Whole-graph embeddings are dominated by the
encoder, so a U-Net++ over a ResNet-34 sits nearest a U-Net over a ResNet-34. The decoder tells them
apart: a U-Net joins each level with one skip (concatenations of two inputs), a U-Net++ joins nested
levels (concatenations of three, four, five), an FPN and a LinkNet add instead, a DeepLabV3 has one
wide concatenation (its spatial pyramid), a MAnet gates with sigmoids.

The signature counts kinds of operations, not exact types, so that one library's bilinear
`interpolate` and another's transposed convolution both read as an upsampling, and a norm is a norm.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from narcli.graph.vocab import OPS

UPSAMPLING = frozenset(("upsample_nearest", "upsample_linear", "pixel_shuffle", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "unknown:interpolate", "unknown:upsample"))
WIDEST_JOIN = 5  # concatenations of five or more inputs count as one kind
# the nearest family's decoders must be this much nearer than any other family's to rename the
# vote: about one kind of operation e times as frequent. Chosen on benchmarks/bench_cross_library.py
# (a U-Net++ from smp is 2.3 nearer MONAI's U-Net++ than any U-Net; smp's SegFormer only 0.6
# nearer DeepLabV3 than transformers' SegFormer, whose decoder head is written with linear layers)
RENAME_MARGIN = 1.0
KINDS = ("up", "cat2", "cat3", "cat4", "cat5", "add", "mul", "conv", "gate", "pool", "linear", "norm")


def _kind(op: str, inputs: int) -> str | None:
    if op in UPSAMPLING:
        return "up"
    if op == "concat":
        return f"cat{min(max(inputs, 2), WIDEST_JOIN)}"
    if op in ("add", "sum", "stack"):
        return "add"
    if op == "mul":
        return "mul"
    if op in ("sigmoid", "hard_sigmoid", "softmax"):
        return "gate"
    category = OPS.get(op)
    return {"convolution": "conv", "pooling": "pool", "linear": "linear", "normalization": "norm"}.get(category or "")


def decoder_signature(graph: Any) -> dict[str, int]:
    """Counts of each kind of operation (KINDS) at or after an upsampling; {} for a graph that never
    upsamples (a classifier, a language model)."""
    parents = graph.parents()
    after = [False] * len(graph.nodes)
    counts: Counter[str] = Counter()
    for i, node in enumerate(graph.nodes):  # nodes are in topological order
        after[i] = node.op in UPSAMPLING or any(after[p] for p in parents[i])
        if after[i] and (kind := _kind(node.op, len(parents[i]))) is not None:
            counts[kind] += 1
    return dict(sorted(counts.items()))


def signature_distance(a: dict[str, int], b: dict[str, int]) -> float:
    """How far two decoders are: summed differences of log counts (a fifth more convolutions in a
    wider decoder weighs little; a kind of join one has and the other lacks weighs much)."""
    return sum(abs(math.log1p(a.get(k, 0)) - math.log1p(b.get(k, 0))) for k in KINDS)


def decoder_names(signature: dict[str, int] | None, prototypes: dict[str, list[dict[str, int]]] | None) -> dict[str, str]:
    """How the query's decoder renames the decoder families the zoo's vote may give: when one
    family's known decoders (`prototypes`: family -> its members' signatures) are nearer the
    query's than every other family's by RENAME_MARGIN or more, every other family is renamed to it
    ({"unet": "unet++", "fpn": "unet++", ...}). Empty for a query that never upsamples, or where no
    family's decoder is clearly the nearest (a close call keeps the vote)."""
    if not signature or not prototypes:
        return {}
    nearest = sorted((min(signature_distance(signature, p) for p in known), family)
                     for family, known in prototypes.items() if known)
    if not nearest or (len(nearest) > 1 and nearest[1][0] < nearest[0][0] + RENAME_MARGIN):
        return {}
    best = nearest[0][1]
    return {family: best for _, family in nearest[1:]}


def known_decoders(meta: Any, key: str = "decoders") -> dict[str, list[dict[str, int]]]:
    """The decoders an index stores (`decoders` in its meta; `other_decoders`: those of families no
    source builds over a backbone), or {} where they are missing or not of that form (an index from
    before decoders, or one edited by hand): nothing is renamed by them then."""
    decoders = meta.get(key) if isinstance(meta, dict) else None
    if not isinstance(decoders, dict):
        return {}

    def valid(signature: Any) -> bool:
        return isinstance(signature, dict) and all(isinstance(k, str) and type(v) is int and v >= 0
                                                   for k, v in signature.items())
    return {family: known for family, known in decoders.items()
            if isinstance(family, str) and isinstance(known, list) and known and all(map(valid, known))}
