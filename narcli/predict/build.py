"""Training the bundled predictor: per data source one head, fitted on 90 % of its architectures;
the other 10 % (whole architectures) calibrate the intervals and the reach and give the card's
held-out figures. `nar train predictor` runs this; each head's training resumes from its checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from narcli.predict.bundle import Head, save_bundle
from narcli.predict.datasets import Dataset, split_groups
from narcli.predict.metrics import column_metrics
from narcli.predict.training import NetConfig, train_net, predict_scaled

LEVEL = 0.9
CALIBRATION_SHARE = 0.1
REFERENCE_ROWS = 3000  # training readouts kept for the reach test (size of the bundle)
TITLES = {"nb201": "NAS-Bench-201 networks (CIFAR cells)", "timm": "timm ImageNet classifiers"}
REQUIRES = {"nb201": {"image_channels": 3}, "timm": {"image_channels": 3, "top1_classes": 1000}}


def describe(dataset: Dataset, rows: int) -> str:
    what = {"nb201": "NAS-Bench-201 accuracy.csv (200-epoch results) + latency_ms.csv (HW-NAS-Bench)",
            "timm": "timm results-imagenet.csv + benchmark-infer-*.csv"}[dataset.name]
    return f"{what}: {rows:,} of {len(dataset.names):,} rows, {CALIBRATION_SHARE:.0%} of architectures held out"


def conformal_width(residuals: np.ndarray, level: float) -> np.ndarray:
    """Per column, the split-conformal quantile of |residual| (NaN ignored)."""
    out = []
    for column in residuals.T:
        values = np.sort(np.abs(column[np.isfinite(column)]))
        if len(values) == 0:
            out.append(np.inf)
            continue
        rank = min(len(values) - 1, int(np.ceil((len(values) + 1) * level)) - 1)
        out.append(values[rank])
    return np.array(out, dtype=np.float32)


def figure_range(dataset: Dataset, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    figures = np.stack([dataset.items[i].figures for i in rows])
    return figures.min(0), figures.max(0)


def train_head(dataset: Dataset, config: NetConfig, op_count: int, checkpoint: Path | None = None,
               on_epoch: Callable[[dict], None] | None = None) -> Head:
    fit, calibration = split_groups(dataset.groups, CALIBRATION_SHARE, config.seed)
    learnt = dataset.transformed()
    net = train_net([dataset.items[i] for i in fit], learnt[fit], config, op_count, on_epoch, checkpoint)
    predicted, latents = predict_scaled(net, [dataset.items[i] for i in calibration])
    _, fit_latents = predict_scaled(net, [dataset.items[i] for i in fit[:REFERENCE_ROWS]])
    scale = fit_latents.std(0) + 1e-3
    head = Head(dataset.name, TITLES[dataset.name], describe(dataset, len(fit)), dataset.targets, net,
                conformal_width(learnt[calibration] - predicted, LEVEL), LEVEL, fit_latents / scale, scale,
                reach=np.inf, requires=REQUIRES[dataset.name])
    head.figures_low, head.figures_high = figure_range(dataset, fit)
    distances = head.distance(latents)
    head.reach = float(np.quantile(distances, 0.99) * 1.25) if len(distances) else float("inf")
    values = np.stack([t.inverse(predicted[:, j]) for j, t in enumerate(dataset.targets)], 1)
    head.metrics = {"held_out_rows": int(len(calibration)),
                    "columns": column_metrics(dataset.targets, values, dataset.values[calibration])}
    return head


def train_bundle(datasets: list[Dataset], out: Path, config: NetConfig, op_count: int, work: Path,
                 on_epoch: Callable[[str, dict], None] | None = None,
                 configs: dict[str, NetConfig] | None = None) -> Path:
    """Train one head per dataset (checkpoints under `work`) and write the bundle into `out`. Heads
    of a bundle already in `out` that were not trained now are kept (`--nb201` alone replaces the
    NAS-Bench-201 head and leaves the timm head as it was)."""
    heads = []
    work.mkdir(parents=True, exist_ok=True)
    for dataset in datasets:
        chosen = (configs or {}).get(dataset.name, config)
        chosen = replace(chosen, device=config.device, seed=config.seed)
        heads.append(train_head(dataset, chosen, op_count, work / f"{dataset.name}.ckpt",
                                (lambda e, n=dataset.name: on_epoch(n, e)) if on_epoch else None))
    return save_bundle(heads + kept_heads(out, {h.name for h in heads}), out)


def kept_heads(folder: Path, replaced: set[str]) -> list[Head]:
    """The heads of the bundle in `folder` not in `replaced` (none when there is no readable bundle)."""
    from narcli.errors import NarError
    from narcli.predict.bundle import _load

    if not (folder / "predictor.json").exists():
        return []
    try:
        existing = _load.__wrapped__(str(folder))  # read afresh, not through the cache
    except NarError:
        return []
    return [head for head in existing.heads if head.name not in replaced]


DEFAULT_CONFIGS = {"nb201": NetConfig(epochs=20, batch=64), "timm": NetConfig(epochs=60, batch=32)}


def train_from_folders(nb201: Path | None, timm: Path | None, out: Path | None, config: NetConfig,
                       epochs: int | None = None, graphs_db: Path | None = None, jobs: int = 2,
                       report: Callable[[str], None] = lambda line: None,
                       on_epoch: Callable[[str, dict], None] | None = None) -> Path:
    """`nar train predictor`: load the folders, train a head on each, write the bundle (default: the
    bundled predictor). Checkpoints live under $NAR_HOME/predictor/training."""
    from narcli.encode.features import OP_INDEX
    from narcli.predict.bundle import DATA_DIR
    from narcli.predict.sources import load_datasets
    from narcli.scan.cache import nar_home

    datasets = load_datasets(nb201, timm, graphs_db, jobs, report)
    configs = {name: replace(c, epochs=epochs or c.epochs) for name, c in DEFAULT_CONFIGS.items()}
    if config.kind != "graph":  # the same epochs and batches, the other network
        from narcli.predict.training import config_for

        configs = {name: config_for(config.kind, epochs=c.epochs, batch=c.batch) for name, c in configs.items()}
    work = nar_home() / "predictor" / "training"
    report(f"training {', '.join(d.name for d in datasets)} (checkpoints in {work})")
    return train_bundle(datasets, out or DATA_DIR, config, len(OP_INDEX), work, on_epoch, configs)
