"""Which reference rows train the latency head, which check it, and how often each is seen: splits
by family (never by row), folds by family for the interval, and oversampling of small sources."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

TEST_SHARE, CALIBRATION_SHARE = 0.25, 0.12
FOLDS = 5  # folds by family for the interval's out-of-fold errors


def family_of(sample: Any) -> str:
    return sample.row["family"] or sample.row["model"]


def source_of(sample: Any) -> str:
    return sample.row.get("source") or sample.row["model"].split("/")[0]


def oversampled(samples: list[Any], rows: list[int], power: float) -> list[int]:
    """`rows`, each repeated round((largest source's rows / its source's rows) ** power) times: a
    source of a few dozen small hand-written models is not drowned by a library of a thousand
    (`Config.source_balance`; off by default). Repeating rows did better than weighing them by the
    same factor on the classics held out by family (`bench_latency_classics.py`)."""
    source_rows: dict[str, int] = defaultdict(int)
    for i in rows:
        source_rows[source_of(samples[i])] += 1
    largest = max(source_rows.values(), default=1)
    return [i for i in rows for _ in range(max(1, round((largest / source_rows[source_of(samples[i])]) ** power)))]


def family_split(samples: list[Any], seed: int = 0) -> tuple[list[int], list[int], list[int]]:
    """(train, calibration, test) row indices; every family wholly in one of them."""
    by_family: dict[str, list[int]] = defaultdict(list)
    for i, sample in enumerate(samples):
        by_family[family_of(sample)].append(i)
    families = sorted(by_family)
    random.Random(seed).shuffle(families)
    total, test, calibration, train = len(samples), [], [], []
    for family in families:
        if len(test) < TEST_SHARE * total:
            test += by_family[family]
        elif len(calibration) < CALIBRATION_SHARE * total:
            calibration += by_family[family]
        else:
            train += by_family[family]
    return train, calibration, test


def family_folds(samples: list[Any], rows: list[int], folds: int = FOLDS, seed: int = 0) -> list[list[int]]:
    """`rows` dealt into `folds` parts of about as many rows each, every family wholly in one."""
    by_family: dict[str, list[int]] = defaultdict(list)
    for i in rows:
        by_family[family_of(samples[i])].append(i)
    families = sorted(by_family)
    random.Random(seed).shuffle(families)
    parts: list[list[int]] = [[] for _ in range(folds)]
    for family in families:
        min(parts, key=len).extend(by_family[family])  # the part with fewest rows takes the next family
    return [part for part in parts if part]
