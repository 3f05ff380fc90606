"""A target named on the command line (see `narcli.scan.targets`) as what a search
reads: its embedding, the encoder's family prediction, its repeated motifs and headline figures.

A zoo name or a file whose embedding is cached needs no torch; a new file is scanned (cached) and
embedded once, and its embedding is stored in the cache for the next time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from narcli.errors import ZooError
from narcli.scan.targets import (CachedCandidate, CachedName, Checkpoint, Directory, ModelFile, ModelFolder,
                                 Target, ZooName, cannot, find_cached, resolve_target)


@dataclass
class Query:
    name: str
    kind: str  # zoo | file | cache
    graph_hash: str
    vector: np.ndarray
    prediction: dict[str, Any] | None
    motifs: list[dict[str, Any]]
    params: int = 0
    macs: int = 0
    zoo_model: Any = None
    graph_key: str = ""  # the cached scan's graph, for files and cached scans
    path: str = ""
    record: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def inputs_json(self) -> dict[str, Any]:
        """The inputs a scanned model was traced at and what was assumed to choose them (its MACs and
        latency are those of that size); nothing for a zoo row, whose source sets its input."""
        record = self.record
        return {} if record is None else {"inputs": record.inputs, "assumed": record.assumed}


@lru_cache(maxsize=1)
def current_encoder() -> str:
    from narcli.encode.weights import WeightsError, bundled_weights_path, encoder_id

    path = bundled_weights_path()
    if not path.exists():
        raise WeightsError(f"encoder weights not found at {path}; reinstall nar")
    return encoder_id(path)


@lru_cache(maxsize=1)
def _embedder() -> Any:
    from narcli.encode.embedder import Embedder

    return Embedder()


def resolve_queries(target: str | Target, options: Any = None, zoo: Any = None, command: str = "similar") -> list[Query]:
    """The architectures `target` names, each with its embedding (one per model a file defines)."""
    resolved = resolve_target(target, options) if isinstance(target, str) else target
    match resolved:
        case CachedName(name=name):
            return [_cached_query(name)]
        case ZooName(text=text):
            from narcli.zoo.store import Zoo

            zoo = zoo or Zoo()
            return [zoo_query(zoo.resolve(text), zoo)]
        case Checkpoint(path=path):
            return [checkpoint_query(path, zoo)]
        case ModelFile(path=path, options=file_options) | ModelFolder(path=path, options=file_options):
            return file_queries(path, file_options)
        case Directory():
            raise cannot(command, resolved, "it answers for one model at a time: name a file in it, or "
                                            "`nar scan DIR` / `nar check DIR` for every model under it")
    raise AssertionError(resolved)


def zoo_query(model: Any, zoo: Any) -> Query:
    stored = zoo.embedding(model.graph_hash)
    if stored is None:
        raise ZooError(f"{model.id} has no embedding in the zoo; run `nar zoo embed --db {model.db}`")
    vector, encoder = stored
    if encoder != current_encoder():
        raise ZooError(f"the zoo's embeddings of {model.id} come from another encoder; "
                       f"run `nar zoo embed --db {model.db}`")
    notes = zoo.annotations([model.graph_hash]).get(model.graph_hash, {})
    return Query(model.id, "zoo", model.graph_hash, np.frombuffer(vector, dtype=np.float32),
                 _with_graph_reads(notes.get("prediction"), zoo, model), notes.get("motifs", []),
                 model.params or 0, model.macs or 0, model)


def _with_graph_reads(prediction: Any, zoo: Any, model: Any) -> Any:
    """A zoo model's stored prediction (its family and coarse class) with what a scanned file's
    graph says of it too: the blocks and decoder that rename a family (`search.family.query_names`),
    so `nar similar <zoo name>` orders its rows as it would that model's own code (and as the card's
    retrieval figures are scored). As stored when its graph cannot be read."""
    if not isinstance(prediction, dict) or ("refined" in prediction and DECODER_KEY in prediction):
        return prediction
    try:
        graph = zoo.graph(model)
    except ZooError:
        return prediction
    return prediction | graph_reads(graph)


def checkpoint_query(path: Path, zoo: Any = None) -> Query:
    """A checkpoint stands for the zoo architecture its tensors identify (it has no code to trace)."""
    from narcli.search.identify import SAME_MODEL, identified_model
    from narcli.zoo.store import Zoo

    zoo = zoo or Zoo()
    model, best = identified_model(path, zoo)
    query = zoo_query(model, zoo)
    query.name = f"{path.name} {'=' if best.share >= SAME_MODEL else '≈'} {best.id}"
    query.extra["checkpoint"] = {"path": str(path), "matched": best.matched, "zoo_tensors": best.zoo_tensors,
                                 "reshaped": len(best.reshaped), "extra": best.extra, "exact": best.exact}
    return query


def file_queries(path: Path, options: Any = None) -> list[Query]:
    """Scan `path` (cached) and embed each model it defines (embeddings cached too)."""
    from narcli.scan.cache import Cache
    from narcli.scan.scanner import ScanOptions, scan_file_annotated

    options = options or ScanOptions()
    cache = Cache()
    encoder = current_encoder()
    # with --no-cache nothing is stored, so the graphs come back from the scan itself; a file traced
    # now is embedded in the tracing process, which has torch loaded already
    records, graphs, notes = scan_file_annotated(path, options, cache=cache, want_graphs=not options.use_cache,
                                                 annotate=embed_for_query)
    queries: list[Query | None] = []
    missing = []
    for i, record in enumerate(records):
        note = notes[i] if notes[i] and notes[i]["encoder"] == encoder else None
        stored = note or (cache.embedding(record.graph_key, encoder)
                          if options.use_cache and record.graph_key else None)
        if stored is not None and not note:
            stored = _with_stem_checked(cache, record, stored)
        if stored is not None and options.use_cache:  # under this record too (fresh, or cached from another file)
            cache.store_embedding(record, encoder, stored["vector"], stored["prediction"], stored["motifs"])
        if stored is None:
            missing.append(i)
            queries.append(None)
        else:
            queries.append(_file_query(path, record, len(records), np.frombuffer(stored["vector"], dtype=np.float32),
                                       stored["prediction"], stored["motifs"]))
    if missing:
        wanted = [graphs[i] if graphs else cache.graph(records[i].graph_key) for i in missing]
        if any(g is None for g in wanted):
            raise ZooError(f"the cached graph of {path} is missing; run `nar scan --no-cache {path}` or "
                           "`nar cache clear`")
        for i, embedding in zip(missing, embed_with_stem(_embedder(), wanted)):
            record = records[i]
            if options.use_cache and record.graph_key:
                cache.store_embedding(record, encoder, embedding.vector.tobytes(), embedding.prediction,
                                      embedding.motifs)
            queries[i] = _file_query(path, record, len(records), embedding.vector, embedding.prediction,
                                     embedding.motifs)
    if graphs:  # a scan that stored nothing hands its graphs over (nar check compares them layer by layer)
        for query, graph in zip(queries, graphs):
            if query is not None:
                query.extra["graph"] = graph
    return [q for q in queries if q is not None]


def embed_for_query(graphs: list[Any]) -> list[dict[str, Any]]:
    """Embeddings of freshly traced graphs, in the form the cache stores (runs in the tracing child)."""
    embedder = _embedder()
    return [{"encoder": embedder.encoder_id, "vector": e.vector.tobytes(), "prediction": e.prediction,
             "motifs": e.motifs} for e in embed_with_stem(embedder, graphs)]


# A query whose first convolution reads the input at 3x3, stride 1, with no max-pool (how CIFAR code
# writes a ResNet) is searched a second time as ImageNet code writes that stem (`augment.imagenet_stem`),
# each zoo graph at the better of its two cosines: a CIFAR ResNet-50 sat at 0.942 from timm's
# ResNet-50 and 0.954 from a RegNet, its ImageNet spelling at 0.996 from the ResNet-50. On the
# encoder card's training part (never its test part or the real-client sets), CIFAR-stem rewrites
# found their family 0.853 -> 0.867, and 59 models whose stems are natively small (VGGs, U-Nets,
# super-resolution nets) kept every answer (README, "Models written by other people").
DECODER_KEY = "decoder"  # the query's decoder signature (`graph.decoder`), kept with its prediction
STEM_KEY = "imagenet_stem_vector"  # the second spelling's vector, kept with the query's prediction


def embed_with_stem(embedder: Any, graphs: list[Any]) -> list[Any]:
    """`embedder.embed(graphs)`, each embedding's prediction holding the ImageNet-stem spelling's
    vector (STEM_KEY) where that edit applies; one batch for both."""
    from narcli.encode.augment import imagenet_stem

    respelled = [imagenet_stem(g) for g in graphs]
    extra = [g for g in respelled if g is not None]
    embeddings = embedder.embed(list(graphs) + extra)
    out, others = embeddings[:len(graphs)], iter(embeddings[len(graphs):])
    for embedding, other in zip(out, respelled):  # [] says: looked, no second spelling
        embedding.prediction[STEM_KEY] = [float(x) for x in next(others).vector] if other is not None else []
    return out


def _with_stem_checked(cache: Any, record: Any, stored: dict[str, Any]) -> dict[str, Any] | None:
    """A cached embedding from before the second spelling: None (embed it again) when its graph has
    a CIFAR-style stem, else the same marked as looked at (stored again by the caller, no torch).
    One from before decoder signatures gets its graph's (no torch either)."""
    from narcli.encode.augment import imagenet_stem

    prediction = stored.get("prediction")
    if not isinstance(prediction, dict) or (STEM_KEY in prediction and DECODER_KEY in prediction):
        return stored
    graph = cache.graph(record.graph_key) if record.graph_key else None
    if STEM_KEY not in prediction:
        if graph is not None and imagenet_stem(graph) is not None:
            return None
        prediction = prediction | {STEM_KEY: []}
    if DECODER_KEY not in prediction and graph is not None:  # an embedding from before decoders were read
        prediction = prediction | {DECODER_KEY: read_decoder(graph)}
    return stored | {"prediction": prediction}


def read_decoder(graph: Any) -> dict[str, int]:
    """The decoder signature of a graph, read as the embedder reads it (after the idiom rules)."""
    from narcli.graph.decoder import decoder_signature
    from narcli.graph.idioms import normalise_idioms

    return decoder_signature(normalise_idioms(graph))


def graph_reads(graph: Any) -> dict[str, Any]:
    """What the embedder reads from a graph beside its vector and rename a family by: its blocks
    (`zoo.labels.block_names`) and its decoder signature (after the idiom rules, as it reads them)."""
    from narcli.graph.decoder import decoder_signature
    from narcli.graph.idioms import normalise_idioms
    from narcli.zoo.labels import block_names

    graph = normalise_idioms(graph)
    return {"refined": block_names(graph), DECODER_KEY: decoder_signature(graph)}


def with_decoder(prediction: Any, graph_key: str | None, cache: Any = None, encoder: str | None = None) -> Any:
    """A cached prediction from before decoder signatures, with its cached graph's (no torch); as it
    is when it has one, or its graph is gone. With `encoder`, the filled prediction is stored back
    in `cache`, so the graph is read once, not at every browser start (a read-only home is skipped)."""
    if not isinstance(prediction, dict) or DECODER_KEY in prediction or not graph_key:
        return prediction
    from narcli.errors import NarError
    from narcli.scan.cache import Cache

    cache = cache or Cache()
    try:
        graph = cache.graph(graph_key)
    except NarError:
        return prediction
    if graph is None:
        return prediction
    prediction = prediction | {DECODER_KEY: read_decoder(graph)}
    if encoder is not None:
        try:
            cache.update_prediction(graph_key, encoder, prediction)
        except (NarError, OSError):  # read-only, or busy: read again next time
            pass
    return prediction


def stem_vector(query: Query) -> np.ndarray | None:
    """The query's ImageNet-stem spelling's vector, when it has one."""
    return stem_values(query.prediction)


def stem_values(prediction: dict | None) -> np.ndarray | None:
    """The ImageNet-stem spelling's vector kept with a stored prediction (STEM_KEY), when there is one."""
    values = (prediction or {}).get(STEM_KEY)
    return np.asarray(values, dtype=np.float32) if isinstance(values, list) and values else None


def _file_query(path: Path, record: Any, count: int, vector: np.ndarray, prediction: Any, motifs: Any) -> Query:
    name = f"{path.name}:{record.name}" if count > 1 else path.name
    return Query(name, "file", record.graph_hash, vector, prediction, motifs, record.params, record.macs,
                 graph_key=record.graph_key, path=str(Path(path).resolve()), record=record)


def _cached_query(name: str) -> Query:
    """`cache:NAME`: a model scanned before (by `nar scan` or a search), found as `find_cached` says;
    a model not yet embedded is embedded now and stored."""
    from narcli.scan.cache import Cache

    cache = Cache()
    encoder = current_encoder()
    entries = {e["model_id"]: e for e in cache.embeddings(encoder)}
    model_id = cached_candidate(name, cache, entries).model_id
    if model_id not in entries:
        _embed_cached(cache, model_id, encoder)
        entries = {e["model_id"]: e for e in cache.embeddings(encoder)}
    e = _stem_checked_entry(cache, entries[model_id], encoder)
    return Query(f"{Path(e['path']).name}:{e['name']}", "cache", e["graph_hash"],
                 np.frombuffer(e["vector"], dtype=np.float32), e["prediction"], e["motifs"], e["params"] or 0,
                 e["macs"] or 0, graph_key=e["graph_key"], path=e["path"], extra={"model_id": e["model_id"]},
                 record=cache.record(model_id))  # None when gone: an embedding kept alone


def _stem_checked_entry(cache: Any, entry: dict[str, Any], encoder: str) -> dict[str, Any]:
    """A cached embedding as `_with_stem_checked` leaves it: one stored before the second spelling
    is embedded again when its graph has a CIFAR-style stem (and stored again where its record is
    still cached), else marked as looked at."""
    from types import SimpleNamespace

    checked = _with_stem_checked(cache, SimpleNamespace(graph_key=entry["graph_key"]), entry)
    if checked is not None:
        return checked
    [embedding] = embed_with_stem(_embedder(), [cache.graph(entry["graph_key"])])
    record = cache.record(entry["model_id"])
    if record is not None:
        cache.store_embedding(record, encoder, embedding.vector.tobytes(), embedding.prediction, embedding.motifs)
    return entry | {"vector": embedding.vector.tobytes(), "prediction": embedding.prediction,
                    "motifs": embedding.motifs}


def cached_candidate(name: str, cache: Any, entries: dict[str, dict] | None = None) -> CachedCandidate:
    """The cached model `cache:NAME` means, among the scanned records and the embeddings kept for
    models (by the current encoder) whose record is gone."""
    from narcli.scan.targets import cached_candidates

    if entries is None:
        entries = {e["model_id"]: e for e in cache.embeddings(current_encoder())}
    candidates = cached_candidates(cache)
    seen = {c.model_id for c in candidates}
    candidates += [CachedCandidate(i, e["name"], e["path"], e["graph_key"]) for i, e in entries.items() if i not in seen]
    return find_cached(name, candidates)


def _embed_cached(cache: Any, model_id: str, encoder: str) -> None:
    """Embed a model that `nar scan` cached without an embedding, and store it (on first use only)."""
    record = cache.record(model_id)
    if record is None:  # removed by another process since it was found
        raise ZooError(f"cached model {model_id} is no longer in the cache; scan it again")
    graph = cache.graph(record.graph_key)
    if graph is None:
        raise ZooError(f"the cached graph of {record.name} is missing; scan {record.source} again")
    [embedding] = embed_with_stem(_embedder(), [graph])
    cache.store_embedding(record, encoder, embedding.vector.tobytes(), embedding.prediction, embedding.motifs)
