"""`nar zoo embed`: store the encoder's embedding, family prediction and motif summary of every
architecture in a zoo database; here, or on Ray actors that each hold the encoder (on a GPU where
the cluster has them) while this process stays the database's one writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.fsutil import write_bytes

RAY_BATCH = 128  # graphs per call to an encoder actor: one commit each, so an interruption loses little
# without GPUs, one encoder actor per CPU, one thread each: featurising a graph (numpy, one thread)
# costs ~60 times its forward pass, so actors, not torch threads, are what spreads the work
CPUS_PER_ENCODER = 1


def embed_zoo(db: Path, weights: Path | None = None, force: bool = False, jobs: int = 2,
              report: Callable[[str], None] = lambda line: None, engine: str = "local",
              address: str | None = None, actors: int | None = None) -> dict[str, Any]:
    """Embed the graphs of `db` that lack an embedding from these weights; drop stale ones.
    `engine="ray"`: on encoder actors (`actors` of them; default one per GPU, else per 4 CPUs)."""
    if engine == "ray":
        return embed_zoo_on_ray(db, weights, force, report, address, actors)
    from narcli.encode.dataset import map_in_processes, zoo_items
    from narcli.encode.embedder import Embedder
    from narcli.zoo.writer import writing
    from narcli.zoo.store import Zoo, open_readonly

    open_readonly(Path(db)).close()  # a missing or foreign database: say how to build it, create nothing
    embedder = Embedder(weights)
    with writing(db) as writer:
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


class EncoderActor:
    """The encoder on one Ray worker (wrapped by `ray.remote` when used): the weights come as bytes,
    so every node embeds with exactly the driver's encoder, on CUDA when Ray gave it a GPU."""

    def __init__(self, weights: bytes, card: bytes):
        import shutil
        import socket
        import tempfile

        import torch

        from narcli.encode.embedder import Embedder

        folder = Path(tempfile.mkdtemp(prefix="nar-encoder-"))
        write_bytes(folder / "encoder.safetensors", weights)
        write_bytes(folder / "encoder.json", card)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cpu":
            torch.set_num_threads(CPUS_PER_ENCODER)
        try:
            self.embedder = Embedder(folder / "encoder.safetensors", device)
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # loaded and named: the copy has served
        self.where = {"encoder": self.embedder.encoder_id, "device": self.embedder.device, "node": socket.gethostname()}

    def describe(self) -> dict[str, str]:
        return self.where

    def embed(self, batch: list[tuple[str, bytes]]) -> list[tuple[str, bytes, Any, Any]]:
        """(hash, float32 vector bytes, prediction, motif summary) of each graph that can be encoded."""
        from narcli.encode.dataset import _encode_blob

        encoded = [(h, blob, _encode_blob((h, blob))) for h, blob in batch]
        encoded = [(h, blob, e) for h, blob, e in encoded if e is not None]  # too large: as `zoo_items` skips
        vectors, predictions = self.embedder.embed_encoded([e for _, _, e in encoded])
        return [(h, vector.tobytes(), prediction, _motif_summary_of_blob(blob))
                for (h, blob, _), vector, prediction in zip(encoded, vectors, predictions)]


def embed_zoo_on_ray(db: Path, weights: Path | None, force: bool, report: Callable[[str], None],
                     address: str | None, actors: int | None) -> dict[str, Any]:
    from narcli.encode.dataset import zoo_labels
    from narcli.encode.weights import bundled_weights_path, encoder_id
    from narcli.zoo.writer import writing
    from narcli.zoo.store import Zoo, open_readonly

    open_readonly(Path(db)).close()
    weights = Path(weights or bundled_weights_path())
    wanted = encoder_id(weights)
    payload = (weights.read_bytes(), weights.with_suffix(".json").read_bytes())
    embedded, count, devices = 0, 0, []
    with writing(db) as writer:
        done = set() if force else writer.embedded(wanted)
        with Zoo([db]) as zoo:
            hashes = list(zoo_labels(zoo))
            todo = [h for h in hashes if h not in done]
            if todo:
                embedded, count, devices = _embed_on_actors(zoo, todo, writer, wanted, payload, address, actors,
                                                            report)
        writer.set_meta(embedding_encoder=wanted)
    return {"database": str(db), "encoder": wanted, "embedded": embedded, "unchanged": len(done),
            "architectures": len(hashes), "engine": "ray", "encoders": count, "devices": devices}


def _embed_on_actors(zoo: Any, todo: list[str], writer: Any, wanted: str, payload: tuple[bytes, bytes],
                     address: str | None, actors: int | None, report: Callable[[str], None]) -> tuple[int, int, list]:
    """Embed `todo` on encoder actors, committing each batch as it returns; (embedded, actors, devices)."""
    from rich.progress import Progress

    from narcli.errors import NarError
    from narcli.trace.ray_engine import cluster_cpus, ray_session

    embedded = 0
    with ray_session(address) as ray:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        cpus = cluster_cpus(ray)
        count = max(1, min(actors or gpus or cpus // CPUS_PER_ENCODER, -(-len(todo) // RAY_BATCH)))
        needs = {"num_gpus": 1, "num_cpus": 1} if gpus else {"num_cpus": min(CPUS_PER_ENCODER, cpus)}
        pool = [ray.remote(**needs)(EncoderActor).remote(*payload) for _ in range(count)]
        try:
            places = ray.get([a.describe.remote() for a in pool])
            if any(p["encoder"] != wanted for p in places):
                strays = sorted({p["node"] for p in places if p["encoder"] != wanted})
                raise NarError(f"the nar on {', '.join(strays)} embeds differently from this one "
                               "(another version); install the same nar on every node")
            devices = sorted({p["device"] for p in places})
            report(f"embedding {len(todo)} architectures on {count} Ray encoder(s) ({', '.join(devices)})")
            batches = [todo[i:i + RAY_BATCH] for i in range(0, len(todo), RAY_BATCH)]
            calls: dict[Any, Any] = {}
            with Progress(transient=True) as bar:
                task = bar.add_task("embedding", total=len(todo))
                while batches or calls:
                    for actor in pool:
                        while batches and sum(1 for a in calls.values() if a is actor) < 2:
                            batch = batches.pop(0)
                            calls[actor.embed.remote([(h, zoo.graph_blob(h)) for h in batch])] = actor
                    ready, _ = ray.wait(list(calls), num_returns=1)
                    for ref in ready:
                        del calls[ref]
                        rows = ray.get(ref)
                        writer.store_embeddings(wanted, rows)  # committed per batch: a rerun resumes
                        embedded += len(rows)
                        bar.advance(task, RAY_BATCH)
        finally:
            for actor in pool:
                ray.kill(actor)
    return embedded, count, devices
