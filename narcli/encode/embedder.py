"""Canonical graphs -> retrieval vectors, family predictions and motif summaries, with one encoder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from narcli.encode.motifs import MotifSet, sample_motifs
from narcli.graph.arch_graph import ArchGraph

TOP_PREDICTIONS = 5  # families (and coarse classes) kept per prediction
MOTIFS_KEPT = 12  # repeated motif types kept per summary


@dataclass
class Embedding:
    """What the encoder says about one graph."""

    vector: np.ndarray  # float32, unit length
    prediction: dict[str, list[list[Any]]]  # {"family": [[name, p], ...], "coarse": [[name, p], ...]}
    motifs: list[dict[str, Any]]  # repeated motif types: type, size, count, ops


def motif_summary(graph: ArchGraph, motifs: MotifSet) -> list[dict[str, Any]]:
    """The repeated motif types of a graph, most nodes covered first (what `shared` columns name)."""
    from narcli.encode.motifs import describe

    rows = [r for r in describe(graph, motifs) if r["count"] > 1][:MOTIFS_KEPT]
    return [{"type": r["type"], "size": r["size"], "count": r["count"], "ops": r["ops"]} for r in rows]


class Embedder:
    """The encoder at `weights` (default: the bundled one), loaded once, on `device` (default: CPU;
    "cuda" where a GPU is)."""

    def __init__(self, weights: Path | None = None, device: str = "cpu"):
        from narcli.encode.weights import bundled_weights_path, encoder_id, load_encoder

        self.weights = Path(weights or bundled_weights_path())
        self.model, self.card = load_encoder(self.weights)
        self.device = device
        self.model.to(device)
        self.encoder_id = encoder_id(self.weights)
        self.families: list[str] = self.card["families"]

    def embed(self, graphs: list[ArchGraph]) -> list[Embedding]:
        """One Embedding per graph (featurised here, motifs sampled once)."""
        from narcli.encode.features import encode_graph
        from narcli.graph.decoder import decoder_signature
        from narcli.graph.idioms import normalise_idioms

        from narcli.zoo.labels import block_names, coarse_from_structure, possible_coarse

        graphs = [normalise_idioms(g) for g in graphs]  # stored graphs may predate an idiom rule
        motif_sets = [sample_motifs(g) for g in graphs]
        encoded = [encode_graph(g, m) for g, m in zip(graphs, motif_sets)]
        vectors, predictions = self.embed_encoded(encoded)
        for prediction, graph in zip(predictions, graphs):
            ops = graph.op_histogram()
            prediction["coarse_possible"] = sorted(possible_coarse(ops))
            prediction["coarse_structure"] = coarse_from_structure(ops)  # when nothing possible was guessed
            # the zoo names a ResNet by its blocks (`zoo.labels.refine_family`); a query is named the same way
            prediction["refined"] = block_names(graph)
            prediction["decoder"] = decoder_signature(graph)  # what its decoder is named by (`search.family`)
        return [Embedding(v, p, motif_summary(g, m))
                for v, p, g, m in zip(vectors, predictions, graphs, motif_sets)]

    def embed_encoded(self, encoded: list, batch_nodes: int = 40_000) -> tuple[np.ndarray, list[dict]]:
        """(unit vectors, predictions) of already featurised graphs, batched by node count."""
        import torch

        from narcli.encode.encoder import node_batches
        from narcli.encode.training import coarse_classes

        vectors: list[np.ndarray] = []
        predictions: list[dict] = []
        for group in node_batches(encoded, batch_nodes):
            with torch.no_grad():
                batch = self.model.embedding_batch(group).to(self.device)
                vector, family, coarse = self.model.embed_and_classify(batch)
                vector, family, coarse = vector.cpu(), family.cpu(), coarse.cpu()
            vectors.append(vector.numpy().astype(np.float32))
            for f, c in zip(torch.softmax(family, 1), torch.softmax(coarse, 1)):
                predictions.append({"family": _top(f, self.families), "coarse": _top(c, coarse_classes(self.card["config"]))})
        dim = self.model.embedding_dim
        return (np.concatenate(vectors) if vectors else np.zeros((0, dim), np.float32)), predictions


def _top(probabilities: Any, names: list[str]) -> list[list[Any]]:
    values, index = probabilities.topk(min(TOP_PREDICTIONS, len(names)))
    return [[names[i], round(float(v), 4)] for v, i in zip(values.tolist(), index.tolist())]
