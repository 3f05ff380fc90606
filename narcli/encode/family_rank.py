"""A search's second stage: the nearest candidates re-ordered by their family's share of the vote.

The first stage ranks the zoo by cosine alone, so a ResNet's nearest twenty can interleave ResNets
with RegNets and ResNeXts a hair closer than the query's other relatives. The ten nearest vote on
the family (the vote `nar similar` predicts the family with); the `KEEP_NEAREST` nearest stay in
front, and every other candidate then scores its cosine plus `weight` x its family's share of that
vote, so the likely family's members come next, in cosine order, then the next family's. Pure numpy:
searches use it without torch, evaluation scores the same order the commands show.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Sequence

import numpy as np

VOTERS = 10  # nearest neighbours that vote
# cosine gap that weighs a voter e times less: the largest of 0.005, 0.01, 0.02 and 0.04 whose vote
# names the family within 0.005 of the best on validation queries (known, rewritten, other library),
# for the encoder trained with hard-negative families (`benchmarks/tune_readout.py --vote-only`,
# benchmarks/results/readout-vote-temperature.json; 0.02, the leave-one-out best on the training
# part for the encoder before, was 0.0075 below the best)
VOTE_TEMPERATURE = 0.01
# candidates the second stage re-orders: the nearest this many by cosine (a family's members further
# away stay where they are)
RERANK_CANDIDATES = 100
# weight of the family's vote share against the cosine, and the nearest candidates left in front in
# cosine order, chosen together on validation queries of the training part only
# (`benchmarks/tune_readout.py`, benchmarks/results/readout.json): the gentlest stage within 0.005 of
# the best mean of MRR@20 and MAP@20. Weight 0 is cosine order; from 0.5 up the rest is family by
# family. Keeping the two nearest in front costs little MAP and gives back the first hits a wrong
# vote buries (MRR@20 +0.010 on each kind of validation query against weight 0.3 with none kept).
FAMILY_RERANK_WEIGHT = 0.5
KEEP_NEAREST = 2
# candidates whose cosine is within this of the nearest's are as near as it: they are ordered among
# themselves by the family score before the rest of the front (None: the front in cosine order alone).
# Chosen on validation queries of the training part only (`benchmarks/tune_readout.py --tie-only`,
# benchmarks/results/readout-tie-band.json): the gentlest band within 0.001 of the best mean of MRR@20
# and MAP@20 (0.8712 against 0.8699 with none; 0.01 scored 0.8720)
TIE_BAND: float | None = 0.001


def vote(labels: Sequence[str], cosines: Sequence[float], temperature: float = VOTE_TEMPERATURE) -> dict[str, float]:
    """Share of each label among the voters, each weighted by exp((cos - best) / temperature)."""
    if not len(labels):
        return {}
    best = max(cosines)
    weights: Counter[str] = Counter()
    for label, cosine in zip(labels, cosines):
        weights[label] += math.exp((cosine - best) / temperature)
    total = sum(weights.values())
    return {label: w / total for label, w in weights.items()}


def renamed(families: list[tuple[str, float]], names: dict[str, str] | None) -> list[tuple[str, float]]:
    """`families` with each label in `names` replaced by its new name, shares of a name summed: a
    ResNet-voted query with grouped bottlenecks is a ResNeXt, as the zoo's own models are named."""
    if not names:
        return families
    scores: Counter[str] = Counter()
    for label, p in families:
        scores[names.get(label, label)] += p
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def vote_shares(labels: Sequence[str], cosines: Sequence[float], blocks: dict[str, str] | None = None,
                temperature: float = VOTE_TEMPERATURE) -> dict[str, float]:
    """Each family's share of the vote (`vote`), named as the query's blocks name it (`renamed`)."""
    return dict(renamed(list(vote(labels, cosines, temperature).items()), blocks))


def check_weight(weight: float) -> None:
    if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0):
        raise ValueError(f"the family re-rank weight must be a number >= 0, got {weight!r}")


def check_tie_band(tie_band: float | None) -> None:
    if tie_band is not None and not (isinstance(tie_band, (int, float)) and math.isfinite(tie_band) and tie_band >= 0):
        raise ValueError(f"the tie band must be a number >= 0 or None, got {tie_band!r}")


def check_keep(keep: int) -> None:
    if isinstance(keep, bool) or not isinstance(keep, numbers.Integral) or keep < 0:
        raise ValueError(f"the candidates kept in cosine order must be a whole number >= 0, got {keep!r}")


def family_order(cosines: Sequence[float], labels: Sequence[str], shares: dict[str, float],
                 weight: float = FAMILY_RERANK_WEIGHT, keep: int = KEEP_NEAREST,
                 blocks: dict[str, str] | None = None, tie_band: float | None = TIE_BAND) -> list[int]:
    """Positions of the candidates by cosine + `weight` x their label's share (`vote`), best first;
    ties keep the given order. Weight 0 is plain cosine order; so are no shares, but for the front.
    The first `keep` candidates (given in cosine order) stay in front of the re-ordered rest, in
    cosine order, but for one of a family the query's own blocks or decoder rename
    (`renamed_away`; weight above 0 only), which is re-ordered with the rest. With a `tie_band`
    (weight above 0 only), every candidate within it of the first in front is as near as that one:
    those come first, ordered by the same score (a cosine tie is broken by the family vote)."""
    check_weight(weight)
    check_keep(keep)
    check_tie_band(tie_band)
    if len(cosines) != len(labels):
        raise ValueError(f"{len(cosines)} cosines for {len(labels)} labels")
    keep = min(int(keep), len(cosines))
    front = [i for i in range(keep) if not (weight and renamed_away(labels[i], blocks))]
    score = np.asarray(cosines, dtype=np.float64) + weight * np.array([shares.get(label, 0.0) for label in labels])
    tied: list[int] = []
    if weight and tie_band is not None and front:
        near = cosines[front[0]] - tie_band
        tied = [i for i in range(len(cosines)) if cosines[i] >= near and not renamed_away(labels[i], blocks)]
        tied = [tied[j] for j in np.argsort(-score[tied], kind="stable")]
    placed = set(tied)
    front = tied + [i for i in front if i not in placed]
    placed.update(front)
    rest = np.array([i for i in range(len(cosines)) if i not in placed], dtype=np.int64)
    return front + [int(rest[i]) for i in np.argsort(-score[rest], kind="stable")]


def renamed_away(label: str, blocks: dict[str, str] | None) -> bool:
    """Whether the query's own graph renames `label` to another family. `blocks` is the query's
    renaming (`search.family.query_names`: {"resnet": "resnext"} for grouped bottlenecks, every
    other decoder family to the one whose decoders its decoder matches). The zoo names a ResNet by
    its blocks, so a plain ResNet is the worse match for a ResNeXt's graph however near its cosine:
    it keeps no place in front, and its share of the vote has gone to the family it was renamed to."""
    return bool(blocks) and label in blocks and label not in blocks.values()


def rerank_rows(order: np.ndarray, similarities: np.ndarray, labels: np.ndarray,
                weight: float = FAMILY_RERANK_WEIGHT, voters: int = VOTERS, keep: int = KEEP_NEAREST,
                blocks: Sequence[dict[str, str] | None] | None = None,
                temperature: float = VOTE_TEMPERATURE, tie_band: float | None = TIE_BAND) -> np.ndarray:
    """`order`: each query's candidates by falling cosine (rows of indices into `labels`);
    `similarities`: the matching cosines; `blocks[row]`: that query's renaming by its blocks
    (`renamed_away`); `temperature`: the vote's (`vote`); `tie_band`: `family_order`'s. The same rows
    in the second stage's order (`family_order`)."""
    check_keep(keep)
    check_tie_band(tie_band)
    if weight == 0 or order.shape[1] == 0:
        return order
    out = np.empty_like(order)
    for row in range(order.shape[0]):
        candidates, cosines = order[row], similarities[row]
        finite = np.isfinite(cosines)
        top = candidates[finite][:voters]
        names = blocks[row] if blocks is not None else None
        shares = vote_shares(labels[top].tolist(), cosines[finite][:voters].tolist(), names, temperature)
        # keep no more than the reachable candidates (callers put the unreachable last)
        ranked = family_order(np.where(finite, cosines, -1e9), labels[candidates].tolist(), shares, weight,
                              min(keep, int(finite.sum())), names, tie_band)
        out[row] = candidates[ranked]
    return out
