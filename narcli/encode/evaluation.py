"""Retrieval metrics (METHODS.md §2) and the two baselines that need no learning.

Query = a test architecture; candidates = every other architecture, train and test; binary
relevance = same label. Queries with no relevant candidate are left out (every metric is 0 for them
whatever the method does).
"""

from __future__ import annotations

import numpy as np

from narcli.encode.features import OP_NAMES, EncodedGraph


def retrieval_metrics(embeddings: np.ndarray, labels: list[str], queries: list[int],
                      ks: tuple[int, ...] = (20, 50, 100), pool_mask: np.ndarray | None = None,
                      withheld: list[int] | None = None, rerank: float = 0.0,
                      vote_labels: list[str] | None = None, keep: int | None = None,
                      blocks: list[dict[str, str] | None] | None = None,
                      query_embeddings: np.ndarray | None = None,
                      vote_temperature: float | None = None, tie_band: float | str | None = "shipped") -> dict[str, float]:
    """MRR@k, MAP@k, NDCG@k for cosine retrieval over L2-normalised `embeddings`; `pool_mask`:
    only those rows are candidates (default: every row but the query); `withheld[j]`: one more row
    that is no candidate for `queries[j]` (the design an edited copy was made from); `rerank`: the
    weight of the second stage (`family_rank`, as the commands search; 0: cosine order), voting
    on `vote_labels` (default `labels`; the query's own label is never among its voters), the nearest
    `keep` left in front (default: the shipped `KEEP_NEAREST`); `blocks[j]`: how the blocks of
    `queries[j]` rename a family (`family_rank.renamed_away`; default none, as a zoo graph's label
    already names its blocks); `query_embeddings[q]`: the vector row q searches with, when a query
    reads its parts with other weights than the rows it is compared with (benchmarks/tune_readout.py's
    composite read-out); `vote_temperature`: the second stage's vote temperature (default: the
    shipped `VOTE_TEMPERATURE`); `tie_band`: the second stage's (`family_rank.family_order`; default
    "shipped": `TIE_BAND`)."""
    from narcli.encode.family_rank import (KEEP_NEAREST, RERANK_CANDIDATES, TIE_BAND, VOTE_TEMPERATURE, check_keep,
                                           check_tie_band, check_weight, rerank_rows)

    check_weight(rerank)
    keep = KEEP_NEAREST if keep is None else keep
    check_keep(keep)
    tie_band = TIE_BAND if tie_band == "shipped" else tie_band
    check_tie_band(tie_band)
    if blocks is not None and len(blocks) != len(queries):
        raise ValueError(f"{len(blocks)} block renamings for {len(queries)} queries")
    labels_arr = np.array(labels)
    voting = labels_arr if vote_labels is None else np.array(vote_labels)
    candidate = np.ones(len(labels_arr), bool) if pool_mask is None else np.asarray(pool_mask, bool)
    top = max(ks)
    sums = {f"{m}@{k}": 0.0 for k in ks for m in ("MRR", "MAP", "NDCG")}
    counted = 0
    for start in range(0, len(queries), 256):
        chunk = queries[start:start + 256]
        sims = (embeddings if query_embeddings is None else query_embeddings)[chunk] @ embeddings.T
        sims[np.arange(len(chunk)), chunk] = -np.inf  # the query itself is not a candidate
        sims[:, ~candidate] = -np.inf
        if withheld is not None:
            sims[np.arange(len(chunk)), withheld[start:start + 256]] = -np.inf
        order = np.argsort(-sims, axis=1, kind="stable")[:, :max(top, RERANK_CANDIDATES) if rerank else top]
        if rerank:
            order = rerank_rows(order, np.take_along_axis(sims, order, axis=1), voting, rerank,
                                keep=keep, blocks=None if blocks is None else blocks[start:start + 256],
                                temperature=VOTE_TEMPERATURE if vote_temperature is None else vote_temperature,
                                tie_band=tie_band)[:, :top]
        for row, q in enumerate(chunk):
            relevant_total = int(((labels_arr == labels_arr[q]) & candidate).sum()) - int(candidate[q])
            if withheld is not None:
                relevant_total -= int(candidate[withheld[start + row]] and withheld[start + row] != q)
            if relevant_total == 0:
                continue
            counted += 1
            rel = (labels_arr[order[row]] == labels_arr[q]).astype(np.float64)
            for k in ks:
                sums[f"MRR@{k}"] += _mrr(rel[:k])
                sums[f"MAP@{k}"] += _ap(rel[:k], relevant_total)
                sums[f"NDCG@{k}"] += _ndcg(rel[:k], relevant_total)
    out = {name: round(float(total) / counted, 4) if counted else 0.0 for name, total in sums.items()}
    out["queries"] = counted
    return out


def _mrr(rel: np.ndarray) -> float:
    hits = np.flatnonzero(rel)
    return 1.0 / (hits[0] + 1) if hits.size else 0.0


def _ap(rel: np.ndarray, relevant_total: int) -> float:
    if not rel.any():
        return 0.0
    precision = np.cumsum(rel) / np.arange(1, len(rel) + 1)
    return float((precision * rel).sum() / min(relevant_total, len(rel)))


def _ndcg(rel: np.ndarray, relevant_total: int) -> float:
    discounts = 1.0 / np.log2(np.arange(2, len(rel) + 2))
    ideal = discounts[:min(relevant_total, len(rel))].sum()
    return float((rel * discounts).sum() / ideal) if ideal else 0.0


# -- baselines without learning ----------------------------------------------------------------
def op_histogram_embeddings(graphs: list[EncodedGraph]) -> np.ndarray:
    """Normalised counts of each operation type."""
    out = np.zeros((len(graphs), len(OP_NAMES)), dtype=np.float32)
    for row, g in enumerate(graphs):
        np.add.at(out[row], g.ops, 1.0)
    return _normalise(np.log1p(out))


def wl_embeddings(graphs: list[EncodedGraph]) -> np.ndarray:
    """Weisfeiler-Lehman subtree feature hashing (`features.wl_features`), log counts, unit length."""
    from narcli.encode.features import wl_dense

    return np.stack([wl_dense(g) for g in graphs]) if graphs else np.zeros((0, 1), np.float32)


def _normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def format_table(rows: list[tuple[str, dict]], ks: tuple[int, ...]) -> str:
    """A markdown table: method | MRR@k | MAP@k | NDCG@k for each k."""
    cols = [f"{m}@{k}" for k in ks for m in ("MRR", "MAP", "NDCG")]
    lines = ["| method | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for name, metrics in rows:
        lines.append(f"| {name} | " + " | ".join(f"{metrics[c]:.3f}" for c in cols) + " |")
    return "\n".join(lines)

