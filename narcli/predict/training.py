"""Training one predictor network: masked MSE (a target may be missing for some graphs) + 0.1 x
NAR-Former's sequence-ranking loss + 0.5 x a pairwise logistic ranking loss, AdamW with a one-cycle
schedule, an EMA of the weights for what is kept. Targets arrive already transformed (log for
latencies) and are standardised here per column.

Resumable: with a `checkpoint` path the state is written after every epoch and picked up again;
each epoch's batch order comes from (seed, epoch), so a resumed run is the run it would have been.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from narcli.errors import UsageError, check_training
from narcli.fsutil import atomic_writer
from narcli.predict.inputs import GraphInput


@dataclass
class NetConfig:
    dim: int = 96
    layers: int = 6
    epochs: int = 60
    batch: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    ema: float = 0.99
    sr_weight: float = 0.1
    rank_weight: float = 0.5
    kind: str = "graph"  # "graph": message passing over every node; "former": transformer over folded tokens
    ac_weight: float = 0.0  # NAR-Former's architecture-consistency loss (former only)
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:  # the command line's checks, for Python callers too
        check_training(self.seed, self.epochs)
        if self.kind not in KINDS:
            raise UsageError(f"--kind is one of {', '.join(KINDS)}, not {self.kind!r}")

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "device"}


KINDS = ("graph", "former")


def config_for(kind: str, **overrides) -> NetConfig:
    """The recipe of each network kind (the former: narrower, 4 blocks, NAR-Former's AC loss)."""
    if kind not in KINDS:
        raise UsageError(f"--kind is one of {', '.join(KINDS)}, not {kind!r}")
    base = NetConfig() if kind == "graph" else NetConfig(kind="former", dim=64, layers=4, ac_weight=0.5)
    return replace(base, **overrides)


@dataclass
class TrainedNet:
    weights: dict[str, np.ndarray]  # the EMA weights, numpy
    mean: np.ndarray  # per target, of the transformed values
    std: np.ndarray
    config: NetConfig
    log: list[dict]


def standardise(targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = np.nanmean(targets, 0)
    std = np.nanstd(targets, 0)
    return np.nan_to_num(mean).astype(np.float32), np.where(np.isfinite(std) & (std > 1e-8), std, 1.0).astype(np.float32)


@dataclass
class Selection:
    """Labelled rows kept out of training that choose the checkpoint (NAR-Former picks its checkpoint
    on the 200 cells after the first N): after each epoch the EMA weights are scored by Kendall tau
    on `column` and the best epoch's weights are kept."""

    items: list[GraphInput]
    labels: np.ndarray  # (n,) any monotone form of the target (tau reads ranks); NaN rows are skipped
    column: int = 0


def train_net(items: list[GraphInput], targets: np.ndarray, config: NetConfig, op_count: int,
              on_epoch: Callable[[dict], None] | None = None, checkpoint: Path | None = None,
              selection: Selection | None = None) -> TrainedNet:
    """Fit a network on `items` -> `targets` (n, t), NaN where a value is missing. With `selection`
    the weights kept are the best-scoring epoch's, else the last epoch's (EMA either way)."""
    import torch
    from torch.nn import functional as F

    torch.manual_seed(config.seed)
    targets = np.asarray(targets, dtype=np.float32).reshape(len(items), -1)
    mean, std = standardise(targets)
    scaled = torch.from_numpy(np.nan_to_num((targets - mean) / std))
    observed = torch.from_numpy(np.isfinite(targets))
    inputs = _Inputs(items, config)
    model = inputs.build(op_count, targets.shape[1])
    ema = copy.deepcopy(model)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps = config.epochs * math.ceil(len(items) / config.batch)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, config.lr, total_steps=max(steps, 4), pct_start=max(0.1, 2 / max(steps, 4)))
    log: list[dict] = []
    first = 0
    chooser = _Chooser(selection, config) if selection is not None else None
    if checkpoint is not None and checkpoint.exists():
        state = torch.load(checkpoint, map_location=config.device, weights_only=True)
        if state.get("config") == config.to_dict() and state.get("rows") == len(items):
            model.load_state_dict(state["model"])
            ema.load_state_dict(state["ema"])
            optimiser.load_state_dict(state["optimiser"])
            schedule.load_state_dict(state["schedule"])
            first, log = int(state["epoch"]), list(state["log"])
            if chooser is not None and state.get("chosen"):
                chooser.best, chooser.best_epoch, chooser.best_state = state["chosen"]
    for epoch in range(first, config.epochs):
        model.train()
        began, losses = time.perf_counter(), []
        rng = np.random.default_rng([config.seed, epoch])
        order = rng.permutation(len(items))
        for start in range(0, len(order), config.batch):
            idx = order[start:start + config.batch]
            if len(idx) < 2:
                continue
            y = scaled[idx].to(config.device)
            seen = observed[idx].to(config.device)
            p = model(inputs.batch(idx))
            loss = ((p - y) ** 2 * seen).sum() / seen.sum().clamp(min=1)
            partner = torch.as_tensor(rng.permutation(len(idx)), device=p.device)
            both = seen & seen[partner]
            loss = loss + config.sr_weight * ((p - p[partner]) - (y - y[partner])).abs().mul(both).sum() \
                / both.sum().clamp(min=1)
            dp = p.unsqueeze(1) - p.unsqueeze(0)  # (b, b, t)
            dy = y.unsqueeze(1) - y.unsqueeze(0)
            pairs = (seen.unsqueeze(1) & seen.unsqueeze(0) & (dy.abs() > 0.05)).float()
            loss = loss + config.rank_weight * (F.softplus(-dp * torch.sign(dy)) * pairs).sum() / pairs.sum().clamp(min=1)
            if config.ac_weight and config.kind == "former":
                loss = loss + config.ac_weight * (model(inputs.batch(idx, rng)) - p).abs().mean()
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            with torch.no_grad():
                for e, w in zip(ema.parameters(), model.parameters()):
                    e.mul_(config.ema).add_(w.detach(), alpha=1 - config.ema)
            losses.append(float(loss.detach()))
        entry = {"epoch": epoch + 1, "epochs": config.epochs, "loss": round(float(np.mean(losses or [0.0])), 4),
                 "seconds": round(time.perf_counter() - began, 1)}
        if chooser is not None:
            entry["selection_tau"] = chooser.score(ema, epoch + 1)
        log.append(entry)
        if checkpoint is not None:
            with atomic_writer(checkpoint, "wb") as handle:
                torch.save({"config": config.to_dict(), "rows": len(items), "epoch": epoch + 1, "log": log,
                            "model": model.state_dict(), "ema": ema.state_dict(),
                            "optimiser": optimiser.state_dict(), "schedule": schedule.state_dict(),
                            "chosen": (chooser.best, chooser.best_epoch, chooser.best_state) if chooser else None}, handle)
        if on_epoch:
            on_epoch(entry)
    state = chooser.best_state if chooser is not None and chooser.best_state is not None else ema.state_dict()
    weights = {k: v.detach().float().cpu().numpy() for k, v in state.items()}
    if chooser is not None and chooser.best_epoch:
        log.append({"selected_epoch": chooser.best_epoch, "selection_tau": round(chooser.best, 4)})
    return TrainedNet(weights, mean, std, config, log)


class _Chooser:
    """Scores the EMA weights on the selection rows each epoch and keeps the best epoch's."""

    def __init__(self, selection: Selection, config: NetConfig) -> None:
        self.labels = np.asarray(selection.labels, dtype=np.float64)
        self.rows = np.flatnonzero(np.isfinite(self.labels))
        self.inputs = _Inputs([selection.items[i] for i in self.rows], config)
        self.column, self.best, self.best_epoch, self.best_state = selection.column, -np.inf, 0, None

    def score(self, model, epoch: int) -> float:
        import torch

        from narcli.predict.metrics import kendall_tau

        model.eval()
        with torch.no_grad():
            predicted = np.concatenate([model(self.inputs.batch(np.arange(start, min(start + 128, len(self.rows)))))
                                        [:, self.column].float().cpu().numpy()
                                        for start in range(0, len(self.rows), 128)])
        tau = kendall_tau(predicted, self.labels[self.rows])
        if tau > self.best:  # ties keep the earlier epoch
            self.best, self.best_epoch = tau, epoch
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return round(tau, 4)


class _Inputs:
    """The training rows as the configured network reads them (graphs, or folded tokens)."""

    def __init__(self, items: list[GraphInput], config: NetConfig) -> None:
        self.items, self.config = items, config
        if config.kind == "former":
            from narcli.predict.former import token_features
            from narcli.predict.tokens import tokenise

            self.tokens = [tokenise(i) for i in items]
            self.features = [token_features(t) for t in self.tokens]

    def build(self, op_count: int, targets: int):
        c = self.config
        if c.kind == "former":
            from narcli.predict.former import build_torch_former

            model = build_torch_former(op_count, self.tokens[0].numeric.shape[1], targets, c.dim, c.layers)
        else:
            from narcli.predict.network import build_torch_net

            model = build_torch_net(op_count, self.items[0].numeric.shape[1], targets, c.dim, c.layers)
        return model.to(c.device)

    def batch(self, idx, rng: np.random.Generator | None = None):
        """A batch; with `rng`, tokens renumbered in another topological order (AC augmentation)."""
        if self.config.kind != "former":
            from narcli.predict.network import collate

            return collate([self.items[i] for i in idx], self.config.device)
        from narcli.predict.former import collate_tokens, token_features
        from narcli.predict.tokens import reordered

        tokens = [self.tokens[i] for i in idx]
        features = [token_features(t, reordered(t, rng)) for t in tokens] if rng is not None else \
            [self.features[i] for i in idx]
        return collate_tokens(tokens, self.config.device, features)


def predict_latents(net: TrainedNet, items: list[GraphInput]) -> np.ndarray:
    """The readout vectors the head reads (the applicability space), numpy only."""
    if net.config.kind == "former":
        from narcli.predict.former import latents_numpy
        from narcli.predict.tokens import tokenise

        return latents_numpy(net.weights, [tokenise(i) for i in items], net.config.layers)
    from narcli.predict.network import latents_numpy as graph_latents

    return np.concatenate([graph_latents(net.weights, items[start:start + 128], net.config.layers)
                           for start in range(0, len(items), 128)])


def predict_scaled(net: TrainedNet, items: list[GraphInput]) -> tuple[np.ndarray, np.ndarray]:
    """(predictions in the transformed target space (n, t), latents), numpy only."""
    from narcli.predict.network import head_numpy

    if not items:
        width = (3 if net.config.kind == "former" else 4) * net.config.dim
        return np.zeros((0, len(net.mean)), np.float32), np.zeros((0, width), np.float32)
    latents = predict_latents(net, items)
    return head_numpy(net.weights, latents) * net.std + net.mean, latents
