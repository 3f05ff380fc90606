"""Training and evaluating the reference-CPU latency head (`nar train latency`, `nar eval latency`).

Data: a reference dataset folder (`reference-latency.csv` + card, written by `nar bench --zoo
--export`; the bundled one by default) joined to the bundled zoo's graphs by hash.

Splits are by family, never by row: shuffled families are dealt out until the test families hold
`TEST_SHARE` of the rows and the calibration families `CALIBRATION_SHARE`; the rest train. `evaluate`
trains on the training families, sets the interval from their out-of-fold errors (`FOLDS` folds by
family), checks training choices and that interval on the calibration families, and scores the test
families beside two baselines on the same rows: log latency linear in log MACs, and scikit-learn's
HistGradientBoostingRegressor on whole-model figures. `train` fits the shipped head on every family
beside one without the calibration families; every family's out-of-fold error sets the interval.
Folds, because one calibration split's 17-60 families let a few hard ones set the width (0.20-0.52
in log over three splits, covering 89-99 % of the test families' models where 90 % is asked).
"""

from __future__ import annotations

import math
import random
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import NarError, check_range, check_training
from narcli.graph.structure_idioms import as_run
from narcli.predict.latency import HELD_OUT_FOLDER, cost_op, graph_features, LatencyHead, node_features, read_reference, save_head
from narcli.predict.latency_network import network
from narcli.predict.latency_split import (CALIBRATION_SHARE, FOLDS, TEST_SHARE, family_folds,  # noqa: F401
                                          family_of, family_split, oversampled)

LEVEL = 0.9


@dataclass
class Sample:
    row: dict[str, Any]
    ops: np.ndarray
    numeric: np.ndarray
    work: np.ndarray
    count: np.ndarray  # how many nodes each (deduplicated) row stands for
    figures: np.ndarray  # baseline features
    op_names: set[str]
    log_ms: float


@dataclass
class Config:
    epochs: int = 200
    batch: int = 64
    hidden: int = 64
    embed: int = 16
    lr: float = 3e-3
    weight_decay: float = 1e-4
    seed: int = 0
    device: str = "cpu"
    huber: float = 0.1  # log error beyond which a model's loss grows linearly; 0: squared error
    balance: float = 0.5  # each model weighs 1 / (its family's rows) ** balance: a decoder over 70 encoders is not 70 designs
    offset_decay: float = 0.0  # L2 pull of each operation's own embedding offset towards its kind's
    # > 0: each model is seen (largest source's rows / its source's rows) ** source_balance times an
    # epoch (`oversampled`). At 0.5 the classics held out by family went 28.3 -> 24.6 % MAPE and the
    # calibration families 14.7 -> 13.5 %, but the head costed a context encoder (never measured on
    # the reference machine; two 33 M-weight linear layers at batch 1) at 92 ms where the shipped head
    # says 33, and a calibration that timed it fell apart: not shipped (README, "Oversampling the
    # classics", 2026-12-07)
    source_balance: float = 0.0

    def __post_init__(self) -> None:  # the command line's checks, for Python callers too
        check_training(self.seed, self.epochs)
        check_range("huber", self.huber, 0.0, 10.0)
        check_range("balance", self.balance, 0.0, 2.0)
        check_range("offset_decay", self.offset_decay, 0.0, 100.0)
        check_range("source_balance", self.source_balance, 0.0, 2.0)


def load_samples(folder: Path | None = None, report: Callable[[str], None] = lambda line: None
                 ) -> tuple[list[Sample], dict[str, Any]]:
    from narcli.graph.arch_graph import ArchGraph
    from narcli.predict.bundle import DATA_DIR
    from narcli.zoo.store import Zoo, bundled_zoo_path

    rows, card = read_reference(folder or DATA_DIR)
    samples = []
    retraced = 0
    began = time.perf_counter()
    with Zoo([bundled_zoo_path()]) as zoo:
        models = {m.id: m for m in zoo.models() if m.status == "ok"}
        for row in rows:
            if row["median_ms"] <= 0:
                continue
            model = models.get(row["model"])
            try:
                if model is not None and model.graph_hash == row["graph_hash"]:
                    # its own trace and sizes (a shared graph may have been traced at another input)
                    graph = zoo.graph(model)
                    row = {**row, "macs": model.macs, "params": model.params}
                else:
                    try:
                        graph = ArchGraph.from_json(zlib.decompress(zoo.graph_blob(row["graph_hash"])).decode())
                    except NarError:
                        if model is None or not retraced_alike(model, row):
                            raise
                        # the measured model, traced again since (a tracer or idiom change renamed
                        # its graph) at the sizes it was measured at: the time is still its own
                        graph = zoo.graph(model)
                        retraced += 1
            except NarError:
                continue  # measured on a zoo that has since changed
            graph = as_run(graph)  # costed as it runs: a graph network's bookkeeping on its edge index too
            ops, numeric, work, count = _deduplicated(*node_features(graph))
            samples.append(Sample(row, ops, numeric, work, count, graph_features(graph), {n.op for n in graph.nodes},
                                  math.log(row["median_ms"])))
    report(f"{len(samples):,} measured architectures featurised in {time.perf_counter() - began:.0f} s"
           + (f" ({retraced} traced again since they were measured)" if retraced else ""))
    return samples, card


def retraced_alike(model: Any, row: dict[str, Any]) -> bool:
    """Whether a zoo model whose graph changed since `row` measured it is still that architecture at
    those sizes: its MACs and parameters are the ones the row recorded (a model traced at another
    input size, or rebuilt from another config, is not)."""
    return int(row["macs"]) == model.macs and int(row["params"]) == model.params


def _deduplicated(ops: np.ndarray, numeric: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, ...]:
    """Identical nodes (a transformer's 24 equal layers) once, with their count: training sees each
    distinct node once per graph, ten to thirty times fewer rows."""
    table = np.concatenate([ops[:, None].astype(np.float64), numeric.astype(np.float64), work], 1)
    unique, first, count = np.unique(table, axis=0, return_index=True, return_counts=True)
    return ops[first], numeric[first], work[first], count.astype(np.float32)


def fold_residuals(samples: list[Sample], rows: list[int], fold: list[int], config: Config,
                   report: Callable[[str], None] = lambda line: None) -> np.ndarray:
    """Log residuals of `fold`'s models (those answered) under a head fitted on the rest of `rows`."""
    inside = set(fold)
    rest = [i for i in rows if i not in inside]
    answered = [i for i, ok in zip(fold, answerable(samples, rest, fold)) if ok]
    report(f"interval fold: {len(answered)} models of families the fit leaves out")
    weights = fit(samples, rest, config, report)
    return predict_samples(weights, samples, answered) - np.array([samples[i].log_ms for i in answered])


def out_of_fold_residuals(samples: list[Sample], folds: list[list[int]], config: Config,
                          report: Callable[[str], None] = lambda line: None) -> np.ndarray:
    """Every fold's residuals under a head fitted on the other folds."""
    return np.concatenate([fold_residuals(samples, sum(folds, []), fold, config, report) for fold in folds])


def _batch(samples: list[Sample], ids: list[int]) -> tuple[Any, ...]:
    import torch

    ops = np.concatenate([samples[i].ops for i in ids])
    numeric = np.concatenate([samples[i].numeric for i in ids])
    work = np.concatenate([samples[i].work * samples[i].count[:, None] for i in ids]).astype(np.float32)
    count = np.concatenate([samples[i].count for i in ids])
    owner = np.concatenate([np.full(len(samples[i].ops), k) for k, i in enumerate(ids)])
    return (torch.from_numpy(ops), torch.from_numpy(numeric), torch.from_numpy(work), torch.from_numpy(count),
            torch.from_numpy(owner))


def family_weights(samples: list[Sample], rows: list[int], balance: float) -> dict[int, float]:
    """Each row's weight, 1 / (its family's rows) ** `balance`, counted over the distinct `rows`.
    Counted after `oversampled` repeats a small source's rows, its families would look larger and
    weigh less, undoing about half of the oversampling at balance 0.5 (so it was until 2026-12-07)."""
    distinct = list(dict.fromkeys(rows))
    family_rows: dict[str, int] = defaultdict(int)
    for i in distinct:
        family_rows[family_of(samples[i])] += 1
    return {i: family_rows[family_of(samples[i])] ** -balance for i in distinct}


def fit(samples: list[Sample], rows: list[int], config: Config,
        report: Callable[[str], None] = lambda line: None) -> dict[str, np.ndarray]:
    """Train the node-cost network on `rows`; its weights as numpy arrays (the head's layout)."""
    import torch

    from narcli.encode.features import OP_INDEX

    torch.manual_seed(config.seed)
    weight = family_weights(samples, rows, config.balance)  # before repetition: see family_weights
    rows = oversampled(samples, rows, config.source_balance) if config.source_balance else list(rows)
    net = network(len(OP_INDEX), config)
    figures = np.stack([samples[i].figures for i in rows])
    with torch.no_grad():
        net.global_mean.copy_(torch.from_numpy(figures.mean(0)).float())
        net.global_std.copy_(torch.from_numpy(figures.std(0) + 1e-3).float())
    net = net.to(config.device)
    optimiser = torch.optim.AdamW(net.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    # a warm-up of at least two steps: OneCycleLR divides by the warm-up's length (tiny fits, tests)
    steps = max(config.epochs * math.ceil(len(rows) / config.batch), 4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, config.lr, total_steps=steps,
                                                   pct_start=max(0.1, 2 / steps))
    rng = random.Random(config.seed)
    order = list(rows)
    mean_weight = sum(weight[i] for i in rows) / len(rows)  # over the rows as seen, repeats too
    for epoch in range(config.epochs):
        rng.shuffle(order)
        total = 0.0
        for start in range(0, len(order), config.batch):
            ids = order[start:start + config.batch]
            ops, numeric, work, count, owner = (t.to(config.device) for t in _batch(samples, ids))
            target = torch.tensor([samples[i].log_ms for i in ids], dtype=torch.float32, device=config.device)
            whole = torch.from_numpy(np.stack([samples[i].figures for i in ids])).float().to(config.device)
            predicted = net(ops, numeric, work, count, owner, len(ids), whole)
            if config.huber > 0:  # squared within `huber`, linear beyond: a few odd rows do not set the rates
                per_row = torch.nn.functional.smooth_l1_loss(predicted, target, reduction="none", beta=config.huber)
            else:
                per_row = (predicted - target) ** 2
            weights = torch.tensor([weight[i] / mean_weight for i in ids], dtype=per_row.dtype, device=config.device)
            loss = (per_row * weights).mean()
            if config.offset_decay:
                loss = loss + config.offset_decay * net.embed.weight.pow(2).sum()
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
            optimiser.step()
            schedule.step()
            total += float(loss.detach()) * len(ids)
        if epoch % 20 == 0 or epoch == config.epochs - 1:
            report(f"epoch {epoch + 1}/{config.epochs}: loss {total / len(order):.4f}")
    net = net.cpu()
    weights = {"embed": net.op_embedding().detach().numpy().copy(), "overhead": net.overhead.detach().numpy().copy(),
               "base": net.base.detach().numpy().copy()}
    for i, layer in enumerate(net.layers):
        weights[f"w{i}"] = layer.weight.detach().numpy().copy()
        weights[f"b{i}"] = layer.bias.detach().numpy().copy()
    for i, layer in enumerate(net.whole):
        weights[f"g{i}"] = layer.weight.detach().numpy().copy()
        weights[f"gb{i}"] = layer.bias.detach().numpy().copy()
    weights["global_mean"] = net.global_mean.detach().numpy().copy()
    weights["global_std"] = net.global_std.detach().numpy().copy()
    return weights


def previous_held_out_families(folder: Path) -> set[str]:
    """The families the held-out head in `folder` left out (its card's `held_out_families`); empty
    where there is none, or its card is unreadable (a fresh split is drawn then)."""
    import json

    try:
        card = json.loads((folder / "latency.json").read_text())
        families = card["metrics"]["held_out_families"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    return {f for f in families if isinstance(f, str)} if isinstance(families, list) else set()


def predict_samples(weights: dict[str, np.ndarray], samples: list[Sample], rows: list[int]) -> np.ndarray:
    from narcli.predict.latency import graph_log_latency

    return np.array([graph_log_latency(weights, s.ops, s.numeric, s.work, s.figures, s.count)
                     for s in (samples[i] for i in rows)])


def conformal_half(residuals: np.ndarray, level: float = LEVEL) -> float:
    values = np.sort(np.abs(residuals))
    rank = min(len(values) - 1, int(np.ceil((len(values) + 1) * level)) - 1)
    return float(values[rank])


def scores(predicted_log: np.ndarray, true_log: np.ndarray, half: float | None = None) -> dict[str, float]:
    predicted, true = np.exp(predicted_log), np.exp(true_log)
    error = np.abs(predicted - true) / true
    out = {"rows": int(len(true)), "mape": round(float(error.mean() * 100), 2),
           "median_ape": round(float(np.median(error) * 100), 2), "within10": round(float((error <= 0.1).mean() * 100), 1)}
    if half is not None:
        out["coverage90"] = round(float((np.abs(predicted_log - true_log) <= half).mean() * 100), 1)
    return out


def _boosted(samples: list[Sample], train: list[int], test: list[int], seed: int) -> np.ndarray:
    from sklearn.ensemble import HistGradientBoostingRegressor

    x = np.stack([s.figures for s in samples])  # the same whole-graph features the head's correction sees
    y = np.array([s.log_ms for s in samples])
    model = HistGradientBoostingRegressor(random_state=seed, max_iter=400, learning_rate=0.05)
    return model.fit(x[train], y[train]).predict(x[test])


def _macs_only(samples: list[Sample], train: list[int], test: list[int]) -> np.ndarray:
    x = np.array([math.log(max(s.row["macs"], 1)) for s in samples])
    y = np.array([s.log_ms for s in samples])
    slope, intercept = np.polyfit(x[train], y[train], 1)
    return slope * x[test] + intercept


def _tables(samples: list[Sample], test: list[int], columns: dict[str, np.ndarray], half: float) -> dict[str, Any]:
    true = np.array([samples[i].log_ms for i in test])
    out: dict[str, Any] = {}
    for key in ("coarse", "source"):
        groups: dict[str, list[int]] = defaultdict(list)
        for k, i in enumerate(test):
            groups[samples[i].row[key] or "?"].append(k)
        out[key] = {g: {name: scores(p[idx], true[idx], half if name == "head" else None) for name, p in columns.items()}
                    for g, idx in sorted(groups.items()) for idx in [np.array(idx)]}
    return out


def answerable(samples: list[Sample], train: list[int], rows: list[int]) -> np.ndarray:
    """Which of `rows` a head trained on `train` answers for (`LatencyHead.why_not`'s rules: sizes
    within SIZE_MARGIN of the training range, unseen operations at most UNSEEN_SHARE of nodes, MACs)."""
    from narcli.predict.latency import SIZE_MARGIN, UNSEEN_SHARE

    seen = np.zeros(max(int(s.ops.max()) for s in samples) + 1, dtype=bool)
    for i in train:
        seen[samples[i].ops] = True
    macs = np.array([samples[i].row["macs"] for i in train], dtype=np.float64)
    params = np.array([samples[i].row["params"] for i in train], dtype=np.float64)
    out = []
    for i in rows:
        s = samples[i]
        unseen = ~seen[s.ops]
        node_share = float((s.count * unseen).sum() / s.count.sum())
        mac_share = float((s.work[:, 0] * s.count * unseen).sum() / max((s.work[:, 0] * s.count).sum(), 1))
        inside = all(low / SIZE_MARGIN <= v <= high * SIZE_MARGIN or (low == 0 and v <= high * SIZE_MARGIN)
                     for v, low, high in ((s.row["macs"], macs.min(), macs.max()),
                                          (s.row["params"], params.min(), params.max())))
        out.append(inside and node_share <= UNSEEN_SHARE and mac_share <= UNSEEN_SHARE)
    return np.array(out, dtype=bool)


def _enough(samples: list[Sample]) -> None:
    if len(samples) < 50:
        raise NarError(f"only {len(samples)} reference measurements match the zoo's graphs; the head needs at least 50")


def evaluate(folder: Path | None = None, config: Config | None = None, seed: int = 0,
             report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Held-out-family figures of a head trained now, beside the two baselines."""
    config = config or Config(seed=seed)
    samples, card = load_samples(folder, report)
    _enough(samples)
    train, calibration, test = family_split(samples, seed)
    report(f"families split: {len(train)} training rows, {len(calibration)} calibration, {len(test)} test")
    answered = answerable(samples, train, test)
    refused = [samples[i].row["model"] for i, ok in zip(test, answered) if not ok]
    all_test, test = test, [i for i, ok in zip(test, answered) if ok]
    calibration = [i for i, ok in zip(calibration, answerable(samples, train, calibration)) if ok]
    half = conformal_half(out_of_fold_residuals(samples, family_folds(samples, train, FOLDS, seed), config, report))
    weights = fit(samples, train, config, report)
    on_calibration = predict_samples(weights, samples, calibration)
    calibration_true = np.array([samples[i].log_ms for i in calibration])
    true = np.array([samples[i].log_ms for i in test])
    columns = {"head": predict_samples(weights, samples, test), "macs_only": _macs_only(samples, train, test),
               "boosted_tree": _boosted(samples, train, test, seed)}
    overall = {name: scores(p, true, half if name == "head" else None) for name, p in columns.items()}
    families = {name: sorted({samples[i].row["family"] for i in rows}) for name, rows in
                (("test", test), ("calibration", calibration))}
    return {"device": card.get("device"), "rows": len(samples), "split": {"train": len(train),
            "calibration": len(calibration), "test": len(test), "test_share": round(len(test) / len(samples), 3),
            "test_families": len(families["test"]), "calibration_families": len(families["calibration"]),
            "test_answered": len(test), "test_refused": refused, "test_all": len(all_test)},
            "interval_half_log": round(half, 4), "overall": overall,
            # the calibration families: where choices about training and the interval are checked,
            # never on the test families
            "validation": scores(on_calibration, calibration_true, half), "by": _tables(samples, test, columns, half),
            "config": config.__dict__, "seed": seed}


def train(folder: Path | None = None, out: Path | None = None, config: Config | None = None, seed: int = 0,
          report: Callable[[str], None] = lambda line: None, resplit: bool = False) -> Path:
    """Fit the shipped head on every family, and beside it (in `HELD_OUT_FOLDER`) the head fitted
    without the calibration families. Every family's out-of-fold error (that fit's on the
    calibration families, `FOLDS` - 1 more fits for the others) sets both intervals. The calibration
    families are those the held-out head already in `out` left out (unless `resplit`, or there is
    none): a split drawn afresh from `seed`.

    Every family is fitted because a user's model is most like the family it belongs to: a head that
    never saw the GRUs costed a hand-written GRU classifier at half its time. The held-out fit is
    kept because a figure about designs the head never saw needs a head that never saw them:
    `nar eval calibration` scores with it."""
    from narcli.predict.bundle import DATA_DIR

    config = config or Config(seed=seed)
    samples, card = load_samples(folder, report)
    _enough(samples)
    target = out or DATA_DIR
    kept = set() if resplit else previous_held_out_families(target / HELD_OUT_FOLDER)
    if not any(family_of(s) in kept for s in samples):
        kept = set()  # another reference set (`--reference`) that holds none of those families
    if kept:
        # the families held out before stay held out: `nar eval calibration` runs measured against
        # them (and rescored offline when the head changes) stay about designs the head never saw.
        # A family split drawn afresh moves with every family the reference set gains or loses.
        calibration = [i for i, s in enumerate(samples) if family_of(s) in kept]
        fitted = [i for i, s in enumerate(samples) if family_of(s) not in kept]
        report(f"keeping the {len(kept)} families held out by the head in {target / HELD_OUT_FOLDER}")
    else:
        train_rows, calibration, test = family_split(samples, seed)
        fitted = train_rows + test
    calibration = [i for i, ok in zip(calibration, answerable(samples, fitted, calibration)) if ok]
    report(f"fitting without the {len({family_of(samples[i]) for i in calibration})} calibration families")
    held_out_weights = fit(samples, fitted, config, report)
    true = np.array([samples[i].log_ms for i in calibration])
    residuals = predict_samples(held_out_weights, samples, calibration) - true
    # the calibration families are one fold (the held-out fit's); the others need fits of their own
    every = list(range(len(samples)))
    pooled = np.concatenate([residuals] + [fold_residuals(samples, every, fold, config, report)
                                           for fold in family_folds(samples, fitted, FOLDS - 1, seed)])
    half = conformal_half(pooled)
    figures = {"macs": [s.row["macs"] for s in samples], "params": [s.row["params"] for s in samples],
               "nodes": [int(s.count.sum()) for s in samples]}
    ranges = {k: [float(min(v)), float(max(v))] for k, v in figures.items()}
    kind = "GPU" if card.get("device", {}).get("kind") == "cuda" else "CPU"
    metrics = {"calibration": scores(residuals + true, true, half),
               "out_of_fold": {"models": len(pooled), "coverage90": round(float((np.abs(pooled) <= half).mean() * 100), 1)},
               # never fitted by the held-out head: `nar eval calibration` scores on these first
               # (with the families kept from the head it replaces, those the reference set has no
               # rows of today too: they stay unfitted, and held out at the next fit)
               "held_out_families": sorted({family_of(samples[i]) for i in calibration} | kept)}

    def described(rows: list[int], what: str) -> str:
        return (f"{len(rows):,} reference-{kind} measurements of {len({samples[i].row['family'] for i in rows})} "
                f"families (bench --zoo){what}; interval from the errors of {len(pooled)} models, each "
                f"costed by a fit without its family ({FOLDS} folds)")

    held_out = LatencyHead(held_out_weights, half, LEVEL, card.get("device", {}), ranges,
                           {cost_op(op) for i in fitted for op in samples[i].op_names}, metrics,
                           described(fitted, ", the calibration families left out"))
    save_head(held_out, target / HELD_OUT_FOLDER)
    report("fitting every family (the shipped head)")
    weights = fit(samples, every, config, report)
    head = LatencyHead(weights, half, LEVEL, card.get("device", {}), ranges,
                       {cost_op(op) for s in samples for op in s.op_names}, metrics, described(every, ""))
    return save_head(head, target)
