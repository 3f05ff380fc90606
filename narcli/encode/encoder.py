"""The NAR graph encoder (torch-geometric) and the GCN/GAT baselines that share its inputs.

`NAREncoder`: learnable operation embeddings plus numeric attributes -> `Fs`, a GCN over the edges
inside each motif instance, mean-pooled per instance -> `Fm`, a GCN over the macro graph, mean- and
max-pooled -> a normalised embedding (optionally beside that of `Ff`, a second branch over the
whole graph). `Fc`, a GCN over the whole graph pooled over a motif and its macro neighbours, gives
the context graphs of the motif-level pretraining; it is not used to embed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from narcli.encode.features import (
    DECODER,
    NUMERIC,
    OP_NAMES,
    SKETCH_LABELS,
    WL_DIM,
    EncodedGraph,
    wl_dense,
)


@dataclass
class Batch:
    """Several encoded graphs joined into one disconnected graph, with the indices pooling needs."""

    ops: torch.Tensor
    numeric: torch.Tensor
    edges: torch.Tensor  # all edges, both directions
    inner_edges: torch.Tensor  # edges inside motif instances, both directions
    motif_of: torch.Tensor  # node -> global motif instance
    macro_edges: torch.Tensor  # between global motif instances, both directions
    motif_graph: torch.Tensor  # motif instance -> graph in the batch
    node_graph: torch.Tensor  # node -> graph in the batch
    wl: torch.Tensor  # (graphs, WL_DIM) WL subtree features, log counts, unit length
    num_graphs: int
    sketch_wl: torch.Tensor | None = None  # (graphs, WL_DIM) the WL features the retrieval sketch reads
    robust_wl: torch.Tensor | None = None  # (graphs, WL_DIM) the coarse-label WL features of the robust sketch
    decoder_wl: torch.Tensor | None = None  # (graphs, WL_DIM) the decoder part's WL features (decoder sketch)

    def to(self, device: str) -> Batch:
        return Batch(*(getattr(self, f).to(device) for f in
                       ("ops", "numeric", "edges", "inner_edges", "motif_of", "macro_edges", "motif_graph",
                        "node_graph", "wl")), self.num_graphs,
                     *(None if t is None else t.to(device) for t in (self.sketch_wl, self.robust_wl, self.decoder_wl)))


def collate(graphs: list[EncodedGraph], sketch_labels: str | None = None, robust: bool = False,
            decoder: bool = False) -> Batch:
    """One batch of `graphs`; `sketch_labels` ("ops" or "ops+width"): also the WL features that a
    retrieval embedding's sketch reads, with `robust` those of its robust sketch and with `decoder`
    those of its decoder sketch (embedding needs them, training does not)."""
    ops, numeric, edges, inner, motif_of, macro, motif_graph, node_graph = ([] for _ in range(8))
    node_offset = motif_offset = 0
    for index, g in enumerate(graphs):
        ops.append(g.ops)
        numeric.append(g.numeric)
        e = g.edges + node_offset
        edges.append(e)
        same = g.motif_of[g.edges[0]] == g.motif_of[g.edges[1]] if g.edges.size else np.zeros(0, bool)
        inner.append(e[:, same])
        motif_of.append(g.motif_of + motif_offset)
        macro.append(g.macro_edges + motif_offset)
        motif_graph.append(np.full(g.num_motifs, index, dtype=np.int64))
        node_graph.append(np.full(g.num_nodes, index, dtype=np.int64))
        node_offset += g.num_nodes
        motif_offset += g.num_motifs

    def both_ways(parts: list[np.ndarray]) -> torch.Tensor:
        joined = np.concatenate([p.reshape(2, -1) for p in parts], axis=1)
        return torch.from_numpy(np.concatenate([joined, joined[::-1]], axis=1).copy())

    def wl(labels: str) -> torch.Tensor:
        return torch.from_numpy(np.stack([wl_dense(g, labels) for g in graphs]))

    op_wl = wl("ops")
    sketch_wl = None if sketch_labels is None else op_wl if sketch_labels == "ops" else wl(sketch_labels)
    return Batch(torch.from_numpy(np.concatenate(ops)), torch.from_numpy(np.concatenate(numeric)),
                 both_ways(edges), both_ways(inner), torch.from_numpy(np.concatenate(motif_of)),
                 both_ways(macro), torch.from_numpy(np.concatenate(motif_graph)),
                 torch.from_numpy(np.concatenate(node_graph)), op_wl, len(graphs), sketch_wl,
                 wl("coarse") if robust else None, wl(DECODER) if decoder else None)


def node_batches(graphs: list[EncodedGraph], batch_nodes: int) -> Iterator[list[EncodedGraph]]:
    """Consecutive groups of graphs of at most `batch_nodes` nodes in all (a larger graph goes alone)."""
    group: list[EncodedGraph] = []
    nodes = 0
    for graph in graphs:
        if group and nodes + graph.num_nodes > batch_nodes:
            yield group
            group, nodes = [], 0
        group.append(graph)
        nodes += graph.num_nodes
    if group:
        yield group


class GraphStack(nn.Module):
    """`layers` message-passing layers (GCN or GAT) with ELU between them and a residual path."""

    def __init__(self, dim_in: int, dim: int, layers: int, kind: str = "gcn"):
        super().__init__()
        from torch_geometric.nn import GATConv, GCNConv

        from narcli.trace.compat import pyg_templates_removed

        def conv(a: int, b: int) -> nn.Module:
            return GCNConv(a, b) if kind == "gcn" else GATConv(a, b // 4, heads=4)

        with pyg_templates_removed():  # the first layer of a class writes its generated code to a temp file
            self.convs = nn.ModuleList([conv(dim_in if i == 0 else dim, dim) for i in range(layers)])
        self.skip = nn.Linear(dim_in, dim) if dim_in != dim else nn.Identity()

    def forward(self, x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        h = x
        for i, conv in enumerate(self.convs):
            h = conv(h, edges)
            if i < len(self.convs) - 1:
                h = F.elu(h)
        return h + self.skip(x)


class NodeInput(nn.Module):
    """Learnable operation embedding plus a projection of the numeric attributes."""

    def __init__(self, dim: int):
        super().__init__()
        self.ops = nn.Embedding(len(OP_NAMES), dim)
        self.numeric = nn.Linear(len(NUMERIC), dim)

    def forward(self, batch: Batch) -> torch.Tensor:
        return self.ops(batch.ops) + self.numeric(batch.numeric)


def _mean(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    from torch_geometric.utils import scatter

    return scatter(values, index, dim=0, dim_size=size, reduce="mean")


def _max(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    from torch_geometric.utils import scatter

    return scatter(values, index, dim=0, dim_size=size, reduce="max")


def _mean_max(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """Mean and max pooling side by side: (size, 2 x features)."""
    return torch.cat([_mean(values, index, size), _max(values, index, size)], dim=1)


def _projection(seed: int, dim: int) -> torch.Tensor:
    """A fixed random projection of WL features to `dim` (the same seed gives the same matrix)."""
    rng = np.random.default_rng(seed)
    return torch.from_numpy((rng.standard_normal((WL_DIM, dim)) / np.sqrt(dim)).astype(np.float32))


class NAREncoder(nn.Module):
    """Motifs -> macro graph -> embedding; heads for family and coarse class."""

    def __init__(self, families: int, coarse: int, hidden: int = 128, dim: int = 256, layers: int = 3,
                 use_motifs: bool = True, kind: str = "gcn", use_wl: bool = True, wl_mix: float = 1.0,
                 sketch_dim: int = 256, full_graph: str = "none", sketch_labels: str = "ops",
                 robust_mix: float = 0.0, decoder_mix: float = 0.0):
        super().__init__()
        self.use_motifs = use_motifs
        # The retrieval embedding joins the learned vector (weight wl_mix) with a fixed random
        # projection of WL subtree features (weight 1 - wl_mix), so cosine = wl_mix * learned
        # + (1 - wl_mix) * ~WL. The learned part groups families; the WL part ranks near-duplicates
        # (alone, the learned part lost to WL hashing on MRR). Its WL starts from `sketch_labels`:
        # operations, or operations + feature width, which on validation also lifted known-family
        # MRR above GAT's and WL's (README). Not trained, not saved: the same seed gives the same
        # projection.
        if sketch_labels not in SKETCH_LABELS:
            raise ValueError(f"unknown sketch labels {sketch_labels!r}; use one of {', '.join(SKETCH_LABELS)}")
        # A robust sketch (weight robust_mix, taken from the learned part's share) reads WL features
        # over coarse labels (`features.coarse_labels`: any activation is "activation", any norm is
        # "normalization", no widths): the near-neighbours it finds survive the edits authors make
        # when they rewrite a design, which the learned part and the width sketch do not (README).
        # A decoder sketch (weight decoder_mix, also from the learned share) reads coarse-label WL
        # features of the part after the deepest feature map (`features.decoder_part`): what tells
        # a U-Net from an FPN over the same backbone, which the whole-graph parts barely see.
        if not 0.0 <= robust_mix <= wl_mix:
            raise ValueError(f"robust_mix must be between 0 and wl_mix ({wl_mix}), not {robust_mix}")
        if not 0.0 <= decoder_mix <= wl_mix - robust_mix:
            raise ValueError(f"decoder_mix must be between 0 and wl_mix - robust_mix ({wl_mix - robust_mix:g}), "
                             f"not {decoder_mix}")
        self.wl_mix = wl_mix
        self.robust_mix = robust_mix
        self.decoder_mix = decoder_mix
        self.sketch_labels = sketch_labels
        if wl_mix < 1.0:
            self.register_buffer("sketch", _projection(0, sketch_dim), persistent=False)
        if robust_mix > 0.0:
            self.register_buffer("robust_sketch", _projection(1, sketch_dim), persistent=False)
        # always there (not saved): a read-out may be re-weighted after training (benchmarks/tune_readout.py)
        self.register_buffer("decoder_sketch", _projection(2, sketch_dim), persistent=False)
        # WL subtree features, projected, beside the pooled graph embedding: the learned model then
        # starts from what hashing already knows (without them it lost to WL hashing)
        self.wl = nn.Linear(WL_DIM, hidden) if use_wl else None
        self.input = NodeInput(hidden)
        self.fs = GraphStack(hidden, hidden, layers, kind)
        self.fc = GraphStack(hidden, hidden, layers, kind)
        self.fm = GraphStack(hidden, hidden, layers, kind) if use_motifs else None
        # Ff: a second branch, a stack ("gat" or "gcn") over the whole graph with its own input and
        # read-out, trained with its own contrastive loss; its vector is joined to the motif branch's.
        # Motifs carry the repeated structure, but alone they generalised worse than a full-graph GAT
        # to families the model never saw; fed into one read-out with them, it did not help (README)
        self.ff = GraphStack(hidden, hidden, layers, full_graph) if full_graph != "none" else None
        if self.ff is not None:
            self.ff_input = NodeInput(hidden)
            self.ff_out = nn.Sequential(nn.Linear(2 * hidden, dim), nn.ELU(), nn.Linear(dim, dim))
        self.branches = 2 if self.ff is not None else 1
        self.embedding_dim = dim * self.branches + (sketch_dim if wl_mix < 1.0 else 0) + \
            (sketch_dim if robust_mix > 0.0 else 0) + (sketch_dim if decoder_mix > 0.0 else 0)
        self.out = nn.Sequential(nn.Linear((3 if use_wl else 2) * hidden, dim), nn.ELU(), nn.Linear(dim, dim))
        self.motif_proj = nn.Linear(hidden, hidden)
        self.family_head = nn.Linear(dim * self.branches, families)
        self.coarse_head = nn.Linear(dim * self.branches, coarse)

    def motifs(self, batch: Batch) -> torch.Tensor:
        """Fs: one vector per motif instance."""
        h = self.fs(self.input(batch), batch.inner_edges)
        return _mean(h, batch.motif_of, int(batch.motif_graph.shape[0]))

    def contexts(self, batch: Batch) -> torch.Tensor:
        """Fc: one vector per motif instance, pooled over the instance and its macro neighbours."""
        motifs = int(batch.motif_graph.shape[0])
        h = self.fc(self.input(batch), batch.edges)
        per_motif = _mean(h, batch.motif_of, motifs)
        loops = torch.arange(motifs, device=per_motif.device).repeat(2, 1)
        edges = torch.cat([batch.macro_edges, loops], dim=1)
        return _mean(per_motif[edges[0]], edges[1], motifs)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Unnormalised embeddings, one per graph: the branches' vectors side by side."""
        size = batch.num_graphs
        if self.use_motifs:
            h = self.fm(self.motifs(batch), batch.macro_edges)
            index = batch.motif_graph
        else:  # the "no motifs" ablation and the GCN/GAT baselines: one stack over the whole graph
            h = self.fs(self.input(batch), batch.edges)
            index = batch.node_graph
        parts = [_mean_max(h, index, size)]
        if self.wl is not None:
            parts.append(self.wl(batch.wl))
        z = self.out(torch.cat(parts, dim=1))
        if self.ff is None:
            return z
        g = self.ff(self.ff_input(batch), batch.edges)
        return torch.cat([z, self.ff_out(_mean_max(g, batch.node_graph, size))], dim=1)

    def branch_vectors(self, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """`forward`'s output split into one vector per branch (each has its own contrastive loss)."""
        return z.chunk(self.branches, dim=1)

    def embedding_batch(self, graphs: list[EncodedGraph]) -> Batch:
        """A batch of `graphs` with the WL features this model's retrieval vector reads."""
        return collate(graphs, self.sketch_labels, self.robust_mix > 0, self.decoder_mix > 0)

    def retrieval_parts(self, batch: Batch) -> dict[str, torch.Tensor]:
        """Every part a retrieval vector may join, each of unit length and unweighted (for choosing
        the weights); the batch must carry every sketch's features."""
        learned = torch.cat([F.normalize(v, dim=1) for v in self.branch_vectors(self.forward(batch))], dim=1)
        sketch = self.sketch if self.wl_mix < 1.0 else _projection(0, self.decoder_sketch.shape[1])
        robust = self.robust_sketch if self.robust_mix > 0.0 else _projection(1, self.decoder_sketch.shape[1])
        return {"learned": learned / self.branches ** 0.5,
                "width": F.normalize(batch.sketch_wl @ sketch, dim=1),
                "robust": F.normalize(batch.robust_wl @ robust, dim=1),
                "decoder": F.normalize(batch.decoder_wl @ self.decoder_sketch, dim=1)}

    def embed(self, batch: Batch, learned_only: bool = False) -> torch.Tensor:
        """Unit-length retrieval embeddings (`learned_only`: the learned part alone, for ablations)."""
        return self._retrieval_vector(self.forward(batch), batch, learned_only)

    def embed_and_classify(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Retrieval embeddings with the family and coarse-class logits, from one forward pass."""
        z = self.forward(batch)
        return self._retrieval_vector(z, batch, False), self.family_head(z), self.coarse_head(z)

    def _retrieval_vector(self, z: torch.Tensor, batch: Batch, learned_only: bool) -> torch.Tensor:
        learned = torch.cat([F.normalize(v, dim=1) for v in self.branch_vectors(z)], dim=1) / self.branches ** 0.5
        if learned_only or (self.wl_mix >= 1.0 and self.robust_mix == 0.0 and self.decoder_mix == 0.0):
            return learned
        parts = [learned * (self.wl_mix - self.robust_mix - self.decoder_mix) ** 0.5]
        if self.wl_mix < 1.0:
            if batch.sketch_wl is None:
                raise ValueError("collate the batch with sketch_labels=model.sketch_labels to embed it")
            parts.append(F.normalize(batch.sketch_wl @ self.sketch, dim=1) * (1 - self.wl_mix) ** 0.5)
        if self.robust_mix > 0.0:
            if batch.robust_wl is None:
                raise ValueError("collate the batch with robust=True to embed it with the robust sketch")
            parts.append(F.normalize(batch.robust_wl @ self.robust_sketch, dim=1) * self.robust_mix ** 0.5)
        if self.decoder_mix > 0.0:
            if batch.decoder_wl is None:
                raise ValueError("collate the batch with decoder=True to embed it with the decoder sketch")
            parts.append(F.normalize(batch.decoder_wl @ self.decoder_sketch, dim=1) * self.decoder_mix ** 0.5)
        return torch.cat(parts, dim=1)
