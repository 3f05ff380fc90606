"""The predictor's figures: Kendall tau (tau-b, ties counted), Spearman's rho, MAE, MAPE and the share within 10 %."""

from __future__ import annotations

import numpy as np


def kendall_tau(a, b) -> float:
    """Kendall's tau-b of two sequences: scipy's O(n log n) when installed (the eval extra brings
    it), else O(n^2) in chunks."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    try:
        from scipy.stats import kendalltau
    except ImportError:
        return _kendall_tau_quadratic(a, b)
    value = kendalltau(a, b).statistic
    return float(value) if np.isfinite(value) else 0.0


def _kendall_tau_quadratic(a: np.ndarray, b: np.ndarray) -> float:
    n = len(a)
    concordant = discordant = ties_a = ties_b = 0.0
    for start in range(0, n, 2048):
        da = np.sign(a[start:start + 2048, None] - a[None, :])
        db = np.sign(b[start:start + 2048, None] - b[None, :])
        upper = np.arange(start, min(n, start + 2048))[:, None] < np.arange(n)[None, :]
        product = (da * db)[upper]
        concordant += float((product > 0).sum())
        discordant += float((product < 0).sum())
        ties_a += float(((da == 0) & (db != 0))[upper].sum())
        ties_b += float(((db == 0) & (da != 0))[upper].sum())
    denominator = np.sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b))
    return float((concordant - discordant) / denominator) if denominator else 0.0


def spearman(a, b) -> float:
    """Spearman's rho: the correlation of the two sequences' ranks (ties ranked in order)."""
    ra, rb = np.argsort(np.argsort(np.asarray(a))), np.argsort(np.argsort(np.asarray(b)))
    return float(np.corrcoef(ra, rb)[0, 1])


def mape(predicted, true) -> float:
    predicted, true = np.asarray(predicted, dtype=np.float64), np.asarray(true, dtype=np.float64)
    return float(np.mean(np.abs(predicted - true) / np.maximum(np.abs(true), 1e-9)) * 100)


def within(predicted, true, share: float = 0.10) -> float:
    predicted, true = np.asarray(predicted, dtype=np.float64), np.asarray(true, dtype=np.float64)
    return float(np.mean(np.abs(predicted - true) <= share * np.abs(true)) * 100)


def mae(predicted, true) -> float:
    predicted, true = np.asarray(predicted, dtype=np.float64), np.asarray(true, dtype=np.float64)
    return float(np.mean(np.abs(predicted - true)))


def column_metrics(targets, predicted: np.ndarray, true: np.ndarray) -> dict[str, dict[str, float]]:
    """Per target column, on rows where the truth is known: tau and MAE for accuracies; MAPE,
    within-10 % and tau for timings."""
    out: dict[str, dict[str, float]] = {}
    for j, target in enumerate(targets):
        known = np.isfinite(true[:, j]) & np.isfinite(predicted[:, j])
        if known.sum() < 2:
            continue
        p, t = predicted[known, j], true[known, j]
        entry = {"rows": int(known.sum()), "tau": round(kendall_tau(p, t), 4)}
        if target.kind == "accuracy":
            entry["mae"] = round(mae(p, t), 4)
        else:
            entry["mape"] = round(mape(p, t), 3)
            entry["within10"] = round(within(p, t), 2)
        out[target.column] = entry
    return out
