"""Training the predictor as NAR-Former does: MSE + 0.1 sequence ranking + 0.5 architecture
consistency (the same graph under another topological order must get the same prediction), AdamW
with warm-up, an EMA of the weights for evaluation. Targets are standardised per column."""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from narcli.predict.model import Batch, Predictor
from narcli.predict.tokens import GraphTokens, random_topological_order


@dataclass
class PredictorConfig:
    dim: int = 128
    layers: int = 4
    heads: int = 4
    epochs: int = 200
    batch: int = 64
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup: float = 0.1
    ema: float = 0.99
    sr_weight: float = 0.1
    ac_weight: float = 0.5
    seed: int = 0
    device: str = "cpu"


@dataclass
class TrainedPredictor:
    model: Predictor  # the EMA weights
    mean: np.ndarray
    std: np.ndarray
    log: list[dict]

    def predict(self, items: list[GraphTokens], batch: int = 256) -> np.ndarray:
        self.model.eval()
        device = next(self.model.parameters()).device
        out = []
        with torch.no_grad():
            for start in range(0, len(items), batch):
                chunk = items[start:start + batch]
                ranks = [np.arange(t.length) for t in chunk]
                out.append(self.model(Batch(chunk, ranks, str(device))).cpu().numpy())
        return np.concatenate(out) * self.std + self.mean


def train_predictor(items: list[GraphTokens], targets: np.ndarray, config: PredictorConfig, op_count: int,
                    on_epoch: Callable[[dict], None] | None = None) -> TrainedPredictor:
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    rng = np.random.default_rng(config.seed)
    targets = np.asarray(targets, dtype=np.float32).reshape(len(items), -1)
    mean, std = targets.mean(0), targets.std(0) + 1e-8
    scaled = torch.from_numpy((targets - mean) / std)
    model = Predictor(op_count, items[0].numeric.shape[1], targets.shape[1], config.dim, config.layers,
                      config.heads).to(config.device)
    ema = copy.deepcopy(model)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = max(1, -(-len(items) // config.batch))
    total = config.epochs * steps_per_epoch
    warm = max(1, int(config.warmup * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 0.5 * (1 + np.cos(np.pi * min(1.0, s / total)))))
    log = []
    for epoch in range(config.epochs):
        model.train()
        began, losses = time.perf_counter(), []
        order = rng.permutation(len(items))
        for start in range(0, len(order), config.batch):
            idx = order[start:start + config.batch]
            chunk = [items[i] for i in idx]
            y = scaled[idx].to(config.device)
            natural = Batch(chunk, [np.arange(t.length) for t in chunk], config.device)
            other = Batch(chunk, [random_topological_order(t, rng) for t in chunk], config.device)
            p, q = model(natural), model(other)
            partner = torch.randperm(len(idx))
            loss = F.mse_loss(p, y) \
                + config.sr_weight * F.l1_loss(p - p[partner], y - y[partner]) \
                + config.ac_weight * F.l1_loss(p, q)
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            with torch.no_grad():
                for e, w in zip(ema.parameters(), model.parameters()):
                    e.mul_(config.ema).add_(w.detach(), alpha=1 - config.ema)
            losses.append(float(loss.detach()))
        entry = {"epoch": epoch + 1, "loss": round(float(np.mean(losses)), 4),
                 "seconds": round(time.perf_counter() - began, 1)}
        log.append(entry)
        if on_epoch:
            on_epoch(entry)
    return TrainedPredictor(ema, mean, std, log)
