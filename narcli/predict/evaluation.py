"""`nar eval predictor`: figures of the predictor on labelled data, with boosted-tree baselines
trained in the same run.

Three modes:
- bundled (no `train_size`): the shipped predictor on every row; intervals' coverage and the share
  called out of range are reported too. The baseline is cross-fitted on the same rows (two halves,
  each predicted by a model trained on the other), so it learns from as much data as the bundle did.
- `train_size` N: a fresh network trained on N rows (whole architectures for timm) and tested on the
  rest, beside the baseline trained on the same N (the held-out protocol: cells never trained on).
- `protocol="nar-former"` with N (NAS-Bench-201 only): NAR-Former's own protocol (its §4.3 and
  reference code): the first N rows in file order, trained on the `-val` accuracies, Kendall tau on
  every row, training rows included, against the `-test` accuracies. Reported beside it: tau on the
  rows not trained on, and the ceiling of the protocol, tau between the `-val` and `-test` columns
  themselves (what a predictor that knew every cell's `-val` accuracy would score).

Baselines (scikit-learn's HistGradientBoostingRegressor): NAS-Bench-201 on the cell's one-hot
operations plus params/MACs/activations; timm on params/MACs/activations.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import NarError
from narcli.predict.bundle import load_bundle
from narcli.predict.datasets import Dataset, nb201_one_hot, split_groups
from narcli.predict.metrics import column_metrics
from narcli.predict.training import NetConfig, predict_scaled, train_net


def baseline_features(dataset: Dataset) -> np.ndarray:
    figures = np.stack([item.figures[:3] for item in dataset.items])  # params, MACs, activations
    if dataset.name == "nb201":
        return np.concatenate([nb201_one_hot(dataset.names), figures], 1)
    return figures


def _boosted(features: np.ndarray, learnt: np.ndarray, train: np.ndarray, test: np.ndarray, seed: int) -> np.ndarray:
    try:
        from sklearn.ensemble import HistGradientBoostingRegressor
    except ImportError:
        return np.full((len(test), learnt.shape[1]), np.nan)
    out = np.full((len(test), learnt.shape[1]), np.nan)
    for j in range(learnt.shape[1]):
        known = train[np.isfinite(learnt[train, j])]
        if len(known) >= 10:
            model = HistGradientBoostingRegressor(random_state=seed).fit(features[known], learnt[known, j])
            out[:, j] = model.predict(features[test])
    return out


def _raw_of(targets: list, learnt: np.ndarray) -> np.ndarray:
    return np.stack([t.inverse(learnt[:, j]) for j, t in enumerate(targets)], 1)


PROTOCOLS = ("held-out", "nar-former")


SELECTION_ROWS = 200  # NAR-Former chooses its checkpoint on the 200 labelled cells after the first N


def nar_former_labels(dataset: Dataset) -> tuple[np.ndarray, dict[str, str]]:
    """The training label per accuracy column: its `-val` column where the data has one, else (no
    200-epoch `-val` for CIFAR-100 and ImageNet16-120) the `-test` column itself, named in the result."""
    from narcli.predict.datasets import NB201_VALIDATION

    accuracy = [j for j, t in enumerate(dataset.targets) if t.kind == "accuracy"]
    labels, names = np.full((len(dataset.names), len(accuracy)), np.nan), {}
    for k, j in enumerate(accuracy):
        column = dataset.targets[j].column
        valid = dataset.validation[:, k] if dataset.validation is not None and k < len(NB201_VALIDATION) else None
        if valid is not None and np.isfinite(valid).any():
            labels[:, k], names[column] = valid, NB201_VALIDATION[k]
        else:
            labels[:, k], names[column] = dataset.values[:, j], column
    return labels, names


def evaluate_nar_former(dataset: Dataset, train_size: int, seed: int = 0, config: NetConfig | None = None,
                        op_count: int = 0, on_epoch: Callable[[dict], None] | None = None,
                        selection_rows: int = SELECTION_ROWS) -> dict[str, Any]:
    """NAR-Former's protocol: the first `train_size` rows, trained on the `-val` accuracies, the
    checkpoint chosen by tau on the next `selection_rows` rows' `-val` accuracies, Kendall tau on every
    row (training rows included) against `-test`."""
    from narcli.errors import UsageError
    from narcli.predict.metrics import kendall_tau
    from narcli.predict.training import Selection

    if dataset.name != "nb201":
        raise UsageError("--protocol nar-former is NAS-Bench-201's (give --nb201)")
    if not 2 <= train_size <= len(dataset.names):
        raise UsageError(f"--train-size must be between 2 and {len(dataset.names):,} here, not {train_size}")
    labels, label_names = nar_former_labels(dataset)
    if not any(name.endswith("-val") for name in label_names.values()):
        raise NarError("accuracy.csv has no -val column with values: NAR-Former trains on cifar10-val")
    accuracy = [j for j, t in enumerate(dataset.targets) if t.kind == "accuracy"]
    targets = [dataset.targets[j] for j in accuracy]
    truth = dataset.values[:, accuracy]
    ceiling = {t.column: round(kendall_tau(labels[:, j], truth[:, j]), 4) for j, t in enumerate(targets)
               if label_names[t.column] != t.column and np.isfinite(labels[:, j]).all()}
    labels = np.stack([t.forward(labels[:, j]) for j, t in enumerate(targets)], 1)  # the learnt space
    train, everything = np.arange(train_size), np.arange(len(dataset.names))
    chosen_on = np.arange(train_size, min(len(dataset.names), train_size + max(selection_rows, 0)))
    config = config or NetConfig(seed=seed)
    selection = None
    if len(chosen_on) >= 10:  # tau reads ranks only, so the labels need no standardising
        selection = Selection([dataset.items[i] for i in chosen_on], labels[chosen_on, 0], column=0)
    net = train_net([dataset.items[i] for i in train], labels[train], config, op_count, on_epoch, selection=selection)
    predicted = _raw_of(targets, predict_scaled(net, dataset.items)[0])
    base = _raw_of(targets, _boosted(baseline_features(dataset), labels, train, everything, seed))
    unseen = everything[train_size:]
    picked = next((e for e in net.log if "selected_epoch" in e), None)
    result: dict[str, Any] = {
        "data": dataset.name, "rows": len(dataset.names), "seed": seed, "mode": "nar-former",
        "train_rows": train_size, "test_rows": len(everything), "config": config.to_dict(),
        "selection": {"rows": int(len(chosen_on)) if selection else 0, "on": label_names[targets[0].column],
                      "epoch": picked["selected_epoch"] if picked else None,
                      "tau": picked["selection_tau"] if picked else None},
        "columns": column_metrics(targets, predicted, truth), "baseline": column_metrics(targets, base, truth),
        "unseen": column_metrics(targets, predicted[unseen], truth[unseen]) if len(unseen) > 1 else {},
        "ceiling": ceiling, "kinds": {t.column: t.kind for t in targets},
        "labels": {t.column: t.column for t in targets}, "trained_on": label_names}
    return result


def evaluate(dataset: Dataset, bundle: Path | None = None, train_size: int | None = None, seed: int = 0,
             config: NetConfig | None = None, op_count: int = 0,
             on_epoch: Callable[[dict], None] | None = None, protocol: str = "held-out") -> dict[str, Any]:
    if protocol == "nar-former":
        if train_size is None:
            from narcli.errors import UsageError

            raise UsageError("--protocol nar-former trains a fresh network: give --train-size (e.g. 5%)")
        return evaluate_nar_former(dataset, train_size, seed, config, op_count, on_epoch)
    learnt = dataset.transformed()
    features = baseline_features(dataset)
    result: dict[str, Any] = {"data": dataset.name, "rows": len(dataset.names), "seed": seed}
    if train_size is None:
        head = next((h for h in load_bundle(bundle).heads if h.name == dataset.name), None)
        if head is None:
            raise NarError(f"the predictor has no {dataset.name} head; train one with `nar train predictor`")
        if [t.column for t in head.targets] != [t.column for t in dataset.targets]:
            missing = sorted({t.column for t in head.targets} - {t.column for t in dataset.targets})
            raise NarError(f"the data lacks the head's columns {', '.join(missing[:4])}" if missing else
                           "the data has columns the predictor was not trained on")
        predicted, latents = predict_scaled(head.net, dataset.items)
        test = np.arange(len(dataset.names))
        halves = split_groups(dataset.groups, 0.5, seed)
        base = np.full_like(learnt, np.nan)
        base[halves[1]] = _boosted(features, learnt, halves[0], halves[1], seed)
        base[halves[0]] = _boosted(features, learnt, halves[1], halves[0], seed)
        inside = np.abs(learnt - predicted) <= head.conformal[None]
        known = np.isfinite(learnt)
        result.update(mode="bundled", coverage_level=head.level,
                      coverage=round(float(inside[known].mean() * 100), 2) if known.any() else None,
                      out_of_range=int((head.distance(latents) > head.reach).sum()))
    else:
        if not 2 <= train_size < len(dataset.names) - 1:
            from narcli.errors import UsageError

            raise UsageError(f"--train-size must be between 2 and {len(dataset.names) - 2:,} here, not {train_size}")
        if dataset.name == "timm":  # whole architectures on one side
            train, test = split_groups(dataset.groups, 1 - train_size / len(dataset.names), seed)
        else:
            order = np.random.default_rng(seed).permutation(len(dataset.names))
            train, test = order[:train_size], order[train_size:]
        config = config or NetConfig(seed=seed)
        net = train_net([dataset.items[i] for i in train], learnt[train], config, op_count, on_epoch)
        predicted, _ = predict_scaled(net, [dataset.items[i] for i in test])
        base = _boosted(features, learnt, train, test, seed)
        result.update(mode="train-size", train_rows=int(len(train)), config=config.to_dict())
    truth = dataset.values[test]
    result["columns"] = column_metrics(dataset.targets, _raw_of(dataset.targets, predicted), truth)
    result["baseline"] = column_metrics(dataset.targets, _raw_of(dataset.targets, base), truth)
    result["test_rows"] = int(len(test))
    result["kinds"] = {t.column: t.kind for t in dataset.targets}
    result["labels"] = {t.column: t.column if t.kind == "accuracy" else f"{t.device} {t.kind}" +
                        (f" b{t.batch}" if t.batch and t.batch > 1 else "") for t in dataset.targets}
    return result


def summarise(result: dict[str, Any], groups: dict[str, Callable[[str], bool]] | None = None) -> dict[str, Any]:
    """Means over columns: tau for accuracies, MAPE and within-10 % for timings (per named group)."""
    out: dict[str, Any] = {}
    groups = groups or {"all": lambda c: True}
    for name, keep in groups.items():
        for side in ("columns", "baseline"):
            rows = {c: m for c, m in result[side].items() if keep(c)}
            acc = [m["tau"] for c, m in rows.items() if result["kinds"][c] == "accuracy"]
            lat = [m for c, m in rows.items() if result["kinds"][c] != "accuracy"]
            out[f"{name}/{side}"] = {
                "tau": round(float(np.mean(acc)), 4) if acc else None,
                "mape": round(float(np.mean([m["mape"] for m in lat])), 3) if lat else None,
                "within10": round(float(np.mean([m["within10"] for m in lat])), 2) if lat else None}
    return out



def rows_for(train_size: str | int | None, rows: int) -> int | None:
    """--train-size as given: a row count ("781") or a share of the rows ("5%", half rounded up)."""
    from narcli.errors import UsageError

    if train_size is None or isinstance(train_size, int):
        return train_size
    text = str(train_size).strip().replace(",", "").replace("_", "")
    try:
        if text.endswith("%"):
            share = float(text[:-1])
            if not 0 < share <= 100:
                raise ValueError
            return int(np.floor(share / 100 * rows + 0.5))
        return int(text)
    except ValueError:
        raise UsageError(f"--train-size takes a row count (781) or a share (5%), not {train_size!r}") from None


def evaluate_folders(nb201: Path | None, timm: Path | None, weights: Path | None = None,
                     train_size: str | int | None = None, seed: int = 0, config: NetConfig | None = None,
                     graphs_db: Path | None = None, jobs: int = 2,
                     report: Callable[[str], None] = lambda line: None,
                     on_epoch: Callable[[str, dict], None] | None = None,
                     protocol: str = "held-out") -> list[dict[str, Any]]:
    """`nar eval predictor`: one result per folder given."""
    from narcli.encode.features import OP_INDEX
    from narcli.errors import UsageError
    from narcli.predict.sources import check_folders, load_datasets

    if protocol not in PROTOCOLS:
        raise UsageError(f"--protocol is one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    if protocol == "nar-former" and (timm is not None or nb201 is None):
        raise UsageError("--protocol nar-former is NAS-Bench-201's: give --nb201 DIR only")
    if protocol == "nar-former" and train_size is None:
        raise UsageError("--protocol nar-former trains a fresh network: give --train-size (e.g. 5%)")
    rows_for(train_size, 100)  # a malformed size is refused before any data loads
    check_folders(nb201, timm)
    if train_size is None:
        load_bundle(weights)  # missing weights: say so before loading any data
    out = []
    for dataset in load_datasets(nb201, timm, graphs_db, jobs, report):
        size = rows_for(train_size, len(dataset.names))
        report(f"evaluating on {dataset.name}" + (f" (training on {size:,} rows, {protocol} protocol)" if size else ""))
        out.append(evaluate(dataset, weights, size, seed, config, len(OP_INDEX),
                            (lambda e, n=dataset.name: on_epoch(n, e)) if on_epoch else None, protocol))
    return out
