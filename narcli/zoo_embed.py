"""`nar zoo embed`: store the encoder's embedding, family prediction and motif summary of every
architecture in a zoo database."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def encoder_id(weights: Path) -> str:
    """Names the weights, and the model card settings that shape vectors, that made an embedding,
    so a changed encoder is noticed (the card's read-out settings change the vectors of unchanged
    weights; its metrics and log do not)."""
    import json

    weights = Path(weights)
    digest = hashlib.sha256(weights.read_bytes())
    card = weights.with_suffix(".json")
    if card.exists():
        fields = json.loads(card.read_text())
        shaping = {k: fields.get(k) for k in ("encoder_version", "families", "config")}
        digest.update(json.dumps(shaping, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def embed_zoo(db: Path, weights: Path | None = None, force: bool = False, jobs: int = 2,
              report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Embed the graphs of `db` that lack an embedding from these weights; drop stale ones."""
    from narcli.dataset import map_in_processes, zoo_items
    from narcli.embedder import Embedder
    from narcli.zoo import Zoo, open_readonly
    from narcli.zoo_build import ZooWriter

    open_readonly(Path(db)).close()  # a missing or foreign database: say how to build it, create nothing
    embedder = Embedder(weights)
    writer = ZooWriter(db)
    try:
        done = set() if force else writer.embedded(embedder.encoder_id)
        with Zoo([db]) as zoo:
            report("featurising the zoo (cached after the first run)")
            items = zoo_items(zoo, progress=True)
            todo = [item for item in items if item.graph_hash not in done]
            blobs = [zoo.graph_blob(item.graph_hash) for item in todo]
        report(f"embedding {len(todo)} architectures")
        summaries = map_in_processes(_motif_summary_of_blob, blobs, "motif summaries", True, jobs)
        vectors, predictions = embedder.embed_encoded([item.encoded for item in todo])
        writer.store_embeddings(embedder.encoder_id, [
            (item.graph_hash, vector.tobytes(), prediction, summary)
            for item, vector, prediction, summary in zip(todo, vectors, predictions, summaries)])
        writer.set_meta(embedding_encoder=embedder.encoder_id)
        writer.compact()
    finally:
        writer.close()
    return {"database": str(db), "encoder": embedder.encoder_id, "embedded": len(todo), "unchanged": len(done),
            "architectures": len(items)}


def _motif_summary_of_blob(blob: bytes) -> list[dict[str, Any]]:
    import zlib

    from narcli.embedder import motif_summary
    from narcli.graph import ArchGraph
    from narcli.motifs import sample_motifs

    graph = ArchGraph.from_json(zlib.decompress(blob).decode())
    return motif_summary(graph, sample_motifs(graph))
