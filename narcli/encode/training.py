"""Pretraining of the NAR encoder: motif-level InfoNCE (Eq. 4), then supervised contrastive +
cross-entropy on family and coarse class (Eq. 5-7). Seeded, resumable from a checkpoint per epoch."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from narcli.encode.dataset import Item
from narcli.encode.encoder import NAREncoder, collate, node_batches
from narcli.errors import UsageError, check_range, check_training
from narcli.fsutil import atomic_writer
from narcli.zoo.labels import COARSE, COARSE_BEFORE_GRAPH


@dataclass
class TrainConfig:
    seed: int = 0
    hidden: int = 64
    dim: int = 256
    layers: int = 3
    kind: str = "gcn"  # gcn | gat
    use_motifs: bool = True
    use_wl: bool = True
    # a second branch over the whole graph beside the motifs (none | gat | gcn): the motif branch
    # alone generalised worse than a plain GAT to families it never saw (README, validation)
    full_graph: str = "gat"
    # The retrieval read-out, chosen on validation queries of the training split only
    # (benchmarks/tune_readout.py; README): cosine = (wl_mix - robust_mix - decoder_mix) x learned
    # + (1 - wl_mix) x width sketch (WL from `sketch_labels`) + robust_mix x robust sketch (coarse
    # labels) + decoder_mix x decoder sketch. The robust sketch (0.3 when it was chosen on the
    # real-client set) scored lower on validation beside the decoder sketch.
    wl_mix: float = 0.95
    sketch_labels: str = "ops+width"
    robust_mix: float = 0.0
    decoder_mix: float = 0.35
    motif_epochs: int = 1
    epochs: int = 40
    families_per_batch: int = 16
    per_family: int = 4
    batches_per_epoch: int = 20
    lr: float = 1e-3
    temperature: float = 0.1
    # 0: the graph level learns by supervised contrast alone (the heads still train, on a detached
    # embedding); CE+CL retrieved worse on the OOD split (README, ablations)
    ce_weight: float = 0.0
    cl_weight: float = 1.0
    max_nodes: int = 20_000  # graphs larger than this are left out of training batches (not of evaluation)
    coarse: tuple[str, ...] = COARSE  # the coarse head's classes, in order (read back from the card)
    device: str = "cpu"
    # edited variants (`encode.augment`) of each training architecture added to its family in
    # training: the shipped encoder uses 2 (README: real-client retrieval against zoo MAP)
    augment: int = 2
    # share of each batch's families drawn as a near family (by WL features) of another family in
    # the batch: sibling families (DeepLabV3 and V3+, ResNet and ResNeXt) then meet as each other's
    # negatives, which 16 random families of ~900 seldom do. 0.5 lifted every kind of validation
    # query over 0 (benchmarks/tune_readout.py --hard-families; README)
    hard_families: float = 0.5

    def __post_init__(self) -> None:  # the command line's checks, for Python callers too
        check_training(self.seed, self.epochs)
        if not math.isfinite(self.ce_weight) or self.ce_weight < 0:
            raise UsageError(f"--ce-weight must not be negative (and must be a finite number), not {self.ce_weight!r}")
        check_range("--augment", self.augment, 0, 16)
        if not 0.0 <= self.hard_families <= 0.5:
            raise UsageError(f"--hard-families must be between 0 and 0.5, not {self.hard_families!r}")


# read-out settings: they change how a trained model's vector is read, not the training itself
READ_OUT = ("wl_mix", "sketch_labels", "robust_mix", "decoder_mix")


# settings added after checkpoints existed, with the value that reproduces the earlier training:
# left out of the key at that value, so those checkpoints still match
ADDED_LATER = {"full_graph": "none", "augment": 0, "hard_families": 0.0}


def training_key(config: TrainConfig) -> dict:
    """The settings that shape training; a checkpoint resumes only under the same ones."""
    return {k: v for k, v in asdict(config).items()
            if k not in READ_OUT and not (k in ADDED_LATER and v == ADDED_LATER[k])}


@dataclass
class Trained:
    model: NAREncoder
    families: list[str]
    config: TrainConfig
    log: list[dict]


def train_encoder(items: list[Item], train_idx: list[int], config: TrainConfig,
                  checkpoint: Path | None = None, on_epoch: Callable[[dict], None] | None = None) -> Trained:
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    families = sorted({items[i].family for i in train_idx})
    family_id = {f: k for k, f in enumerate(families)}
    coarse_id = {c: k for k, c in enumerate(COARSE)}
    model = model_for(config, len(families))
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    log: list[dict] = []
    start_epoch = 0
    state = _read_checkpoint(checkpoint)
    if state is not None:
        if state.get("config") == training_key(config):
            model.load_state_dict(state["model"])
            optimiser.load_state_dict(state["optimiser"])
            log, start_epoch = state["log"], state["epoch"]
            random.setstate(state["random"])
            torch.set_rng_state(state["torch_random"])
    usable = [i for i in train_idx if items[i].encoded.num_nodes <= config.max_nodes]
    by_family: dict[str, list[int]] = {}
    for i in usable:
        by_family.setdefault(items[i].family, []).append(i)
    near = nearest_families(items, by_family) if config.hard_families > 0 else {}
    total = config.motif_epochs + config.epochs
    for epoch in range(start_epoch, total):
        stage = "motif" if epoch < config.motif_epochs and config.use_motifs else "graph"
        if epoch < config.motif_epochs and not config.use_motifs:
            continue
        model.train()
        began, losses = time.perf_counter(), []
        for _ in range(config.batches_per_epoch):
            chosen = _pk_batch(by_family, config.families_per_batch, config.per_family, near, config.hard_families)
            batch = collate([items[i].encoded for i in chosen]).to(config.device)
            if stage == "motif":
                loss = _motif_loss(model, batch, config.temperature)
            else:
                family = torch.tensor([family_id[items[i].family] for i in chosen], device=config.device)
                coarse = torch.tensor([coarse_id.get(items[i].coarse, 0) for i in chosen], device=config.device)
                z = model(batch)
                # the heads always learn (`nar similar` predicts families with them); with ce_weight 0
                # they learn on a detached embedding, so cross-entropy does not shape it
                head_input, head_weight = (z, config.ce_weight) if config.ce_weight > 0 else (z.detach(), 1.0)
                contrast = sum(supcon(F.normalize(v, dim=1), family, config.temperature)
                               for v in model.branch_vectors(z))
                loss = config.cl_weight * contrast \
                    + head_weight * (F.cross_entropy(model.family_head(head_input), family)
                                     + F.cross_entropy(model.coarse_head(head_input), coarse))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        entry = {"epoch": epoch + 1, "stage": stage, "loss": round(float(np.mean(losses)), 4),
                 "seconds": round(time.perf_counter() - began, 1)}
        log.append(entry)
        if on_epoch:
            on_epoch(entry)
        if checkpoint is not None:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            with atomic_writer(checkpoint, "wb") as handle:
                torch.save({"model": model.state_dict(), "optimiser": optimiser.state_dict(), "log": log,
                            "epoch": epoch + 1, "config": training_key(config), "random": random.getstate(),
                            "torch_random": torch.get_rng_state()}, handle)
    model.eval()
    return Trained(model, families, config, log)


def _read_checkpoint(path: Path | None) -> dict | None:
    """A training checkpoint, read with `weights_only=True` (tensors and plain containers only, so a
    planted file cannot run code); None when there is none or it cannot be read (training restarts)."""
    if path is None or not path.exists():
        return None
    try:
        state = torch.load(path, weights_only=True)
    except Exception:  # torch raises many kinds for a damaged or foreign file
        return None
    return state if isinstance(state, dict) else None


def coarse_classes(config: dict) -> list[str]:
    """The coarse head's classes: listed in the card since "graph" was added, the first seven before."""
    return list(config.get("coarse") or COARSE_BEFORE_GRAPH)


def model_for(config: TrainConfig | dict, families: int) -> NAREncoder:
    """An untrained encoder shaped by `config` (a TrainConfig, or one read back from a model card)."""
    c = config if isinstance(config, dict) else asdict(config)
    return NAREncoder(families, len(coarse_classes(c)), c["hidden"], c["dim"], c["layers"], c["use_motifs"], c["kind"],
                      c.get("use_wl", True), c.get("wl_mix", 1.0),
                      full_graph=c.get("full_graph", "none"),
                      sketch_labels=c.get("sketch_labels", "ops"),
                      robust_mix=c.get("robust_mix", 0.0),
                      decoder_mix=c.get("decoder_mix", 0.0)).to(c.get("device", "cpu"))


HARD_NEIGHBOURS = 3  # a hard family is one of another family's this many nearest


def nearest_families(items: list[Item], by_family: dict[str, list[int]],
                     count: int = HARD_NEIGHBOURS) -> dict[str, list[str]]:
    """Each family's `count` nearest other families by the cosine of their mean WL features (what
    hashing alone sees alike: the families a contrast must learn to tell apart)."""
    from narcli.encode.features import WL_DIM

    names = sorted(by_family)
    centres = np.zeros((len(names), WL_DIM), np.float32)
    for row, name in enumerate(names):
        for i in by_family[name]:
            graph = items[i].encoded
            counts = np.zeros(WL_DIM, np.float32)
            np.add.at(counts, graph.wl_index, graph.wl_count)
            centres[row] += counts / max(float(np.linalg.norm(counts)), 1e-9)
    centres /= np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-9)
    out = {}
    for start in range(0, len(names), 512):
        cosines = centres[start:start + 512] @ centres.T
        cosines[np.arange(cosines.shape[0]), np.arange(start, start + cosines.shape[0])] = -np.inf
        for row, order in enumerate(np.argsort(-cosines, axis=1)[:, :count]):
            out[names[start + row]] = [names[j] for j in order]
    return out


def _pk_batch(by_family: dict[str, list[int]], families: int, per_family: int,
              near: dict[str, list[str]] | None = None, hard: float = 0.0) -> list[int]:
    """P families x K members (with replacement in small families), so every item has positives;
    with `hard`, that share of the P are each a near family (`near`) of one already chosen."""
    names = [f for f in by_family if len(by_family[f]) >= 2] or list(by_family)
    hard_count = int(round(hard * families)) if near else 0
    chosen = random.sample(names, min(families - hard_count, len(names)))
    for _ in range(hard_count):
        options = [f for f in near.get(random.choice(chosen), []) if f in by_family and f not in chosen]
        if options:
            chosen.append(random.choice(options))
    out = []
    for f in chosen:
        members = by_family[f]
        out += random.sample(members, per_family) if len(members) >= per_family else \
            [random.choice(members) for _ in range(per_family)]
    return out


def supcon(z: torch.Tensor, labels: torch.Tensor, temperature: float) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al.): pull same-label pairs together in the batch."""
    sim = z @ z.T / temperature
    n = z.shape[0]
    self_mask = torch.eye(n, dtype=torch.bool, device=z.device)
    sim = sim.masked_fill(self_mask, -1e9)
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    positives = (labels[:, None] == labels[None, :]) & ~self_mask
    count = positives.sum(1)
    has = count > 0
    if not has.any():
        return z.sum() * 0
    return -((log_prob * positives).sum(1)[has] / count[has]).mean()


def _motif_loss(model: NAREncoder, batch: Any, temperature: float, sample: int = 512) -> torch.Tensor:
    """InfoNCE: a motif's embedding against its own context (positive) and other motifs' contexts."""
    motifs = F.normalize(model.motif_proj(model.motifs(batch)), dim=1)
    contexts = F.normalize(model.contexts(batch), dim=1)
    if motifs.shape[0] > sample:
        keep = torch.randperm(motifs.shape[0])[:sample]
        motifs, contexts = motifs[keep], contexts[keep]
    logits = motifs @ contexts.T / temperature
    return F.cross_entropy(logits, torch.arange(motifs.shape[0], device=logits.device))


@torch.no_grad()
def embed_items(model: NAREncoder, graphs: list, batch_nodes: int = 40_000, learned_only: bool = False) -> np.ndarray:
    """Normalised embeddings of encoded graphs, batched by node count, on the model's device."""
    model.eval()
    device = str(next(model.parameters()).device)
    rows = [model.embed(model.embedding_batch(group).to(device),
                        learned_only).cpu().numpy()
            for group in node_batches(graphs, batch_nodes)]
    out = np.concatenate(rows) if rows else np.zeros((0, model.embedding_dim))
    return out.astype(np.float32)
