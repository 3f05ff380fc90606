"""`nar zoo embed`: store the encoder's embedding, family prediction and motif summary of every
architecture in a zoo database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def embed_zoo(db: Path, weights: Path | None = None, force: bool = False, jobs: int = 2,
              report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Embed the graphs of `db` that lack an embedding from these weights; drop stale ones."""
    from narcli.encode.dataset import map_in_processes, zoo_items
    from narcli.encode.embedder import Embedder
    from narcli.zoo.build import ZooWriter
    from narcli.zoo.store import Zoo, open_readonly

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

    from narcli.encode.embedder import motif_summary
    from narcli.encode.motifs import sample_motifs
    from narcli.graph.arch_graph import ArchGraph
    from narcli.graph.idioms import normalise_idioms

    graph = normalise_idioms(ArchGraph.from_json(zlib.decompress(blob).decode()))
    return motif_summary(graph, sample_motifs(graph))
