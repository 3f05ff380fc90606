"""`nar zoo embed`: store the encoder's embedding of every architecture in a zoo database."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def encoder_id(weights: Path) -> str:
    """Names the weights that made an embedding, so a changed encoder is noticed."""
    return hashlib.sha256(Path(weights).read_bytes()).hexdigest()[:16]


def embed_zoo(db: Path, weights: Path | None = None, force: bool = False,
              report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Embed the graphs of `db` that lack an embedding from these weights; drop stale ones."""
    from narcli.dataset import zoo_items
    from narcli.training import embed_items
    from narcli.weights import bundled_weights_path, load_encoder
    from narcli.zoo import Zoo
    from narcli.zoo_build import ZooWriter

    weights = Path(weights or bundled_weights_path())
    model, _ = load_encoder(weights)
    encoder = encoder_id(weights)
    with Zoo([db]) as zoo:
        report("featurising the zoo (cached after the first run)")
        items = zoo_items(zoo, progress=True)
    writer = ZooWriter(db)
    try:
        done = set() if force else writer.embedded(encoder)
        todo = [item for item in items if item.graph_hash not in done]
        report(f"embedding {len(todo)} architectures")
        vectors = embed_items(model, [item.encoded for item in todo]) if todo else []
        writer.store_embeddings(encoder, [(item.graph_hash, vector.tobytes()) for item, vector in zip(todo, vectors)])
        writer.set_meta(embedding_encoder=encoder)
        writer.compact()
    finally:
        writer.close()
    return {"database": str(db), "encoder": encoder, "embedded": len(todo), "unchanged": len(done),
            "architectures": len(items)}
