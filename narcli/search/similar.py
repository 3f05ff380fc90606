"""`nar similar`: the nearest known architectures of a target, and its likely family."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from narcli.encode.family_rank import (FAMILY_RERANK_WEIGHT, KEEP_NEAREST, RERANK_CANDIDATES, TIE_BAND, family_order,
                                       vote_shares)
from narcli.errors import UsageError
from narcli.graph.decoder import known_decoders
from narcli.search.listing import filter_problem  # `nar zoo list` reads it without numpy
from narcli.search.family import (
    DEFAULT_NOVELTY_COSINE,
    VOTERS,
    FamilyPrediction,
    predict_family,
)
from narcli.search.predictions import performance_rows, summary_json, summary_line
from narcli.scan.targets import is_cache_name, zoo_hash
from narcli.search.query import Query, current_encoder, resolve_queries, stem_values, stem_vector, with_decoder
from narcli.zoo.composite import backbone_of

MAX_K = 1000
TWIN_COSINE = 0.9995  # one design to the encoder: the same layers at other sizes (their hashes differ)
OWN_LABEL_MARGIN = 1e-3  # a zoo model's own graph votes as the nearest of all, ahead of a twin's
LM_TASKS = ("causal-lm", "masked-lm", "pretraining")  # pretraining: BertForPreTraining's masked-LM head and its kind
# the nearest, then neighbours by the family vote and cosine (`encode.family_rank`); or cosine alone
ORDERS = ("family", "cosine")
# shown (CLI and browser) when that is not cosine order; a row of a family the query's blocks or
# decoder rename leaves the front (`family_rank.renamed_away`)
ORDER_NOTE = (f"nearest {KEEP_NEAREST} first{' (a near tie by family vote)' if TIE_BAND is not None else ''} unless "
              "your model's graph renames their family, then by family vote and cosine")
STEM_NOTE = ("its 3×3 stride-1 stem was also searched as ImageNet code writes it (7×7 stride 2, then a max-pool); "
             "each cosine is the better of the two")


@dataclass
class Neighbour:
    name: str
    kind: str  # zoo | cache
    family: str
    coarse: str
    task: str
    source: str
    cosine: float
    params: int
    macs: int
    graph_hash: str
    aliases: list[str] = field(default_factory=list)  # other zoo models with this architecture
    shared: list[dict[str, Any]] = field(default_factory=list)  # motif types in common with the query
    heads: list[str] = field(default_factory=list)  # other task heads of the same model, folded into this row
    backbone: str = ""  # what a composite design's decoder (its family) is built over (`zoo.composite`)

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["cosine"] = round(self.cosine, 4)
        return data


@dataclass
class SimilarResult:
    query: Query
    prediction: FamilyPrediction
    neighbours: list[Neighbour]
    identical: list[str]  # zoo models with exactly the query's architecture (other than itself)
    filters: dict[str, str]
    performance: list[Any] = field(default_factory=list)  # the predictor's summary rows, when they apply
    twins: list[str] = field(default_factory=list)  # other graphs at cosine >= TWIN_COSINE: same layers, other sizes
    order: str = "family"  # how the neighbours are ordered (ORDERS)
    reordered: bool = False  # whether that order shows other rows, or the same in another order, than cosine would
    stem_searched: bool = False  # searched also with its stem as ImageNet code writes it (`query_vectors`)

    @property
    def performance_text(self) -> str | None:
        return summary_line(self.performance)

    def to_json(self) -> dict[str, Any]:
        q = self.query
        return {"query": {"name": q.name, "kind": q.kind, "graph_hash": q.graph_hash, "params": q.params,
                          "macs": q.macs, "path": q.path or None, **q.inputs_json(),
                          **({"checkpoint": q.extra["checkpoint"]} if "checkpoint" in q.extra else {})},
                "prediction": self.prediction.to_json(), "performance": summary_json(self.performance),
                "identical": self.identical, "twins": self.twins, "filters": self.filters,
                "order": self.order, "reordered": self.reordered, "stem_searched": self.stem_searched,
                "neighbours": [n.to_json() for n in self.neighbours]}


def shared_motifs(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Motif types repeated in both summaries, in `a`'s order (most nodes covered first)."""
    types_b = {m["type"] for m in b}
    return [m for m in a if m["type"] in types_b]


def check_k(k: int) -> None:
    if k <= 0 or k > MAX_K:
        raise UsageError(f"-k must be between 1 and {MAX_K}, got {k}")


def check_order(order: str) -> None:
    if order not in ORDERS:
        raise UsageError(f"unknown order {order!r}; use {' or '.join(ORDERS)}")


def check_filters(zoo: Any, family: str | None, task: str | None, source: str | None) -> None:
    """A filter value that no zoo model has is a usage error, with the close values."""
    problem = filter_problem(zoo, family, task, source)
    if problem:
        raise UsageError(problem)


def find_similar(target: str, k: int = 10, family: str | None = None, task: str | None = None,
                 source: str | None = None, options: Any = None,
                 report: Callable[[str], None] = lambda line: None, order: str = "family") -> list[SimilarResult]:
    """For each architecture `target` names: its `k` nearest neighbours (zoo and, without a zoo
    filter, the user's own scanned models) and its predicted family. `order` "family": the
    `KEEP_NEAREST` nearest (any within `TIE_BAND` of the nearest's cosine ordered by the vote), then
    the neighbours of the family the nearest ten vote for (`encode.family_rank`), each family's by
    cosine; "cosine": by cosine alone. Either way a zoo
    architecture whose canonical graph is the query's own comes first (`same_graph_first`)."""
    from narcli.search.neighbours import user_index, zoo_index
    from narcli.zoo.store import Zoo

    check_k(k)
    check_order(order)
    zoo = Zoo()
    check_filters(zoo, family, task, source)
    queries = resolve_queries(target, options, zoo)
    index = zoo_index(report=report)
    threshold = index.meta.get("calibration", {}).get("novelty_threshold", DEFAULT_NOVELTY_COSINE)
    decoders, other_decoders = known_decoders(index.meta), known_decoders(index.meta, "other_decoders")
    only_cache = bool(source and source.lower() == "cache")
    zoo_filtered = bool(family or task or (source and not only_cache))
    encoder = None if zoo_filtered else current_encoder()
    users, details = user_index(encoder, report) if encoder else (None, {})
    from narcli.scan.cache import Cache

    cache = Cache() if users is not None else None  # a cached neighbour's decoder, read once, is stored back
    filters = {name: value for name, value in (("family", family), ("task", task), ("source", source)) if value}
    results = []
    for query in queries:
        own = query.graph_hash if query.kind == "zoo" else None
        # one index query serves the family vote (unfiltered) and, without filters, the table; more
        # than k, as a model's task heads fold into one row, and the second stage re-orders the nearest
        # RERANK_CANDIDATES
        wanted_rows = max(3 * k, RERANK_CANDIDATES) if order == "family" else 3 * k
        nearest = [(h, c) for h, c in nearest_either_stem(index, query, max(wanted_rows, 3 * VOTERS) + 1)
                   if h != own]
        same_graph = query.graph_hash if query.kind != "zoo" else None
        nearest = same_graph_first(index, query_vectors(query), nearest, same_graph)
        voters = nearest[:VOTERS]
        if only_cache:
            found: list[tuple[str, float]] = []
        elif zoo_filtered:
            found = _filtered(index, query_vectors(query), zoo, family, task, source, wanted_rows, own)
        else:
            found = nearest[:wanted_rows]
        if users is not None:
            mine, seen = [], set()
            for key, c in nearest_either_stem(users, query, k + 5):
                e = details.get(key, {})
                same = (e.get("graph_hash"), e.get("path"), e.get("name"))  # one file scanned twice: one row
                if _is_query_itself(key, details, query) or (is_cache_name(key) and same in seen):
                    continue
                seen.add(same)
                mine.append((key, c))
            found = sorted(found + mine, key=lambda kc: (kc[0] != same_graph, -kc[1]))[:wanted_rows]
        hashes = list({h for h, _ in voters} | {zoo_hash(h) or h for h, _ in found if not is_cache_name(h)})
        models = zoo.models_by_hash(hashes)
        notes = zoo.annotations(hashes)
        vote_on = votes(voters, models, same_graph)
        if query.zoo_model is not None:  # its own label votes first: a twin of another family must not outvote it
            vote_on.insert(0, (query.zoo_model.family, query.zoo_model.coarse, _ahead_of(vote_on)))
        prediction = predict_family(query.prediction, vote_on, threshold, decoders, other_decoders)
        names = prediction.names  # the query's blocks and decoder name it as the zoo would
        own_label = query.zoo_model is not None and prediction.family == query.zoo_model.family
        prediction.backbone = backbone_of(query.zoo_model.id) if own_label else \
            _backbone(prediction.family, voters, models, names)
        for key, _ in found:  # a cached neighbour's family, reached the way a query's is (not the head alone)
            if is_cache_name(key) and "family" not in details[key] and users is not None:
                details[key]["family"] = _cached_family(key, users, index, zoo, details[key], threshold,
                                                        cache, encoder)
        wanted = query_task(query)
        neighbours = [n for n in (_neighbour(key, c, models, notes, details, query, family, task, source, wanted)
                                  for key, c in found) if n is not None]
        # `fold_heads` puts the model with the query's own graph first, whichever of its heads it keeps
        own_first = any(has_graph(n, same_graph) for n in neighbours)
        by_cosine = fold_heads(neighbours, wanted, same_graph)
        neighbours = by_cosine
        if order == "family":
            voted = vote_shares([f for f, _, _ in vote_on[:VOTERS]], [c for _, _, c in vote_on[:VOTERS]],
                                names)  # the family named as predicted
            neighbours = family_ordered(by_cosine, voted, names, own_first)
        neighbours = neighbours[:k]
        reordered = [n.name for n in neighbours] != [n.name for n in by_cosine[:k]]
        identical = zoo.aliases(query.zoo_model) if query.zoo_model is not None else \
            [m.id for m in models.get(query.graph_hash, [])]
        twins = [m.id for h, c in nearest if c >= TWIN_COSINE and h != query.graph_hash for m in models.get(h, [])]
        results.append(SimilarResult(query, prediction, neighbours, identical, filters, performance_rows(query),
                                     [t for t in twins if t not in identical], order, reordered,
                                     len(query_vectors(query)) > 1))
    return results


def votes(voters: list[tuple[str, float]], models: dict, same_graph: str | None = None) -> list[tuple[str, str, float]]:
    """(family, coarse, cosine) of the voters the zoo has; the zoo graph the query is
    (`same_graph_first`) votes first, as a zoo model's own label does."""
    vote_on = [(models[h][0].family, models[h][0].coarse, c) for h, c in voters if h in models]
    if voters and voters[0][0] == same_graph and same_graph in models:  # never "new", as a zoo query is not
        vote_on[0] = (*vote_on[0][:2], _ahead_of(vote_on))
    return vote_on


def _ahead_of(vote_on: list[tuple[str, str, float]]) -> float:
    """The cosine a query's own graph votes with: ahead of every voter, and never below 1."""
    return max([1.0] + [c for _, _, c in vote_on]) + OWN_LABEL_MARGIN


def same_graph_first(index: Any, vectors: list[np.ndarray], nearest: list[tuple[str, float]],
                     graph_hash: str | None) -> list[tuple[str, float]]:
    """`nearest` with the zoo architecture whose canonical graph is the query's own (a file that
    rebuilds a known model exactly) in front, at its own cosine: sizes traced at another input (a
    sequence length, say) move the vectors of one graph apart, never its identity."""
    if not graph_hash:
        return nearest
    rest = [(h, c) for h, c in nearest if h != graph_hash]
    if len(rest) == len(nearest):
        position = index.position(graph_hash)
        if position is None:  # not a zoo architecture
            return nearest
        stored = index.vector(position)
        cosine = max(float(stored @ v / max(np.linalg.norm(stored) * np.linalg.norm(v), 1e-12))
                     for v in vectors)
        return [(graph_hash, cosine)] + rest[:len(nearest) - 1]
    return [(graph_hash, dict(nearest)[graph_hash])] + rest


def query_vectors(query: Query) -> list[np.ndarray]:
    """What a search compares with: the query's vector and, when it has one, its ImageNet-stem
    spelling's (`query.stem_vector`); every index a search reads takes each graph at the better."""
    other = stem_vector(query)
    return [query.vector] if other is None else [query.vector, other]


def nearest_either_stem(index: Any, query: Query, n: int) -> list[tuple[str, float]]:
    """The index's `n` nearest to any of the query's vectors (`query_vectors`), each graph at the
    better of its cosines, best first."""
    return [(key, cosine) for key, cosine, _ in nearest_by_spelling(index, query, n)]


def nearest_by_spelling(index: Any, query: Query, n: int) -> list[tuple[str, float, bool]]:
    """`nearest_either_stem` with, for each graph, whether its cosine is the second spelling's."""
    return nearest_of_vectors(index, query_vectors(query), n)


def nearest_of_vectors(index: Any, vectors: list[np.ndarray], n: int) -> list[tuple[str, float, bool]]:
    """The index's `n` nearest to any of `vectors` (a graph's spellings, `query_vectors`), each at
    the better of its cosines, with whether that was a later spelling's."""
    found: dict[str, tuple[float, bool]] = {}
    for spelling, vector in enumerate(vectors):
        for key, cosine in index.query(vector, n):
            if cosine > found.get(key, (-1.0, False))[0]:
                found[key] = (cosine, spelling > 0)
    return sorted(((key, c, respelled) for key, (c, respelled) in found.items()), key=lambda kcr: -kcr[1])[:n]


def _is_query_itself(key: str, details: dict, query: Query) -> bool:
    entry = details.get(key)
    if entry is None:
        return False
    if query.record is not None and entry["model_id"] == query.record.id:
        return True
    return entry["model_id"] == query.extra.get("model_id") or (bool(query.path) and entry["path"] == query.path)


def _filtered(index: Any, vectors: list[np.ndarray], zoo: Any, family: str | None, task: str | None,
              source: str | None, k: int, own: str | None) -> list[tuple[str, float]]:
    """Exact cosine over the architectures that pass the filters (few, so no approximation), each at
    the better of the query's vectors (`query_vectors`)."""
    allowed = {m.graph_hash for m in zoo.models(family=family, task=task, source=source)}
    positions = [i for i, key in enumerate(index.keys) if key in allowed and key != own]
    if not positions:
        return []
    stored = index.vectors(positions)
    cosines = np.max([stored @ v / np.maximum(np.linalg.norm(stored, axis=1) * np.linalg.norm(v), 1e-12)
                      for v in vectors], axis=0)
    order = np.argsort(-cosines, kind="stable")[:k]
    return [(index.keys[positions[i]], float(cosines[i])) for i in order]


def cached_families() -> dict[str, tuple[str, str]]:
    """The family ("new" below the novelty cosine) and coarse class of every cached scan that has an
    embedding, by its graph key, as `nar similar` gives them (the browser's table shows them). Reads
    stored embeddings only: no torch."""
    from narcli.search.neighbours import user_index, zoo_index
    from narcli.zoo.store import Zoo

    encoder = current_encoder()
    users, details = user_index(encoder)
    if users is None:
        return {}
    from narcli.scan.cache import Cache

    index = zoo_index()
    threshold = index.meta.get("calibration", {}).get("novelty_threshold", DEFAULT_NOVELTY_COSINE)
    cache = Cache()
    with Zoo() as zoo:
        out = {}
        for key, entry in details.items():
            if entry.get("graph_key"):
                predicted = _cached_prediction(key, users, index, zoo, entry, threshold, cache, encoder)
                out[entry["graph_key"]] = (predicted.family or "new", predicted.coarse or "")
        return out


def _cached_family(key: str, users: Any, index: Any, zoo: Any, entry: dict, threshold: float,
                   cache: Any = None, encoder: str | None = None) -> str:
    """The family a cached model gets as a query (its head's guess combined with the vote of its
    nearest zoo architectures, "new" below the novelty cosine), so a neighbour never contradicts
    what `nar similar` says of the same graph."""
    return _cached_prediction(key, users, index, zoo, entry, threshold, cache, encoder).family or "new"


def _cached_prediction(key: str, users: Any, index: Any, zoo: Any, entry: dict, threshold: float,
                       cache: Any = None, encoder: str | None = None) -> Any:
    """What `nar similar` predicts for a cached model (`search.family.FamilyPrediction`); one cached
    before decoder signatures gets its graph's, stored back under `encoder` (`query.with_decoder`)."""
    vectors = [users.vector(users.keys.index(key))]
    stem = stem_values(entry.get("prediction"))
    if stem is not None:  # a CIFAR stem is searched in both spellings, as `nar similar` does
        vectors.append(stem)
    same_graph = entry.get("graph_hash")
    nearest = [(h, c) for h, c, _ in nearest_of_vectors(index, vectors, VOTERS)]
    voters = same_graph_first(index, vectors, nearest, same_graph)
    models = zoo.models_by_hash([h for h, _ in voters])
    prediction = with_decoder(entry.get("prediction"), entry.get("graph_key"), cache, encoder)  # as a query reads it
    return predict_family(prediction, votes(voters, models, same_graph), threshold, known_decoders(index.meta),
                          known_decoders(index.meta, "other_decoders"))


def query_task(query: Query) -> str | None:
    """What the query is for: a zoo model's task; for a scanned model "causal-lm" when its output
    scores every token of its vocabulary (a language-model head), else unknown (None)."""
    if query.zoo_model is not None:
        return query.zoo_model.task or None
    if not query.graph_key:
        return None
    from narcli.errors import NarError
    from narcli.scan.cache import Cache

    try:
        graph = Cache().graph(query.graph_key)
    except NarError:
        return None
    vocabularies = {n.attrs.get("in_features") for n in graph.nodes if n.op == "embedding"} if graph else set()
    outputs = [n for n in graph.nodes if n.op == "output"] if graph else []
    if len(outputs) == 1 and outputs[0].shape and outputs[0].shape[-1] in vocabularies - {None}:
        return "causal-lm"
    return None


def task_distance(task: str, wanted: str | None) -> int:
    """0: the task asked for (or none asked), 1: another language-model head for one, 2: any other."""
    if not wanted or task == wanted:
        return 0
    return 1 if task in LM_TASKS and wanted in LM_TASKS else 2


def _model_of(n: Neighbour) -> str:
    """The model a task head belongs to (`hf/gpt2` for `hf/gpt2/causal-lm`); a model is its own."""
    suffix = "/" + n.task
    name = n.name[: -len(suffix)] if n.kind == "zoo" and n.task and n.name.endswith(suffix) else n.name
    return f"{n.kind}:{name}"


def family_ordered(by_cosine: list[Neighbour], shares: dict[str, float], names: dict[str, str] | None,
                   own_first: bool) -> list[Neighbour]:
    """`by_cosine` in the second stage's order (`family_order`); with `own_first`, its first row (the
    model whose graph is the query's own, put first by `fold_heads` at whatever cosine) stays first,
    out of the stage's reach: its cosine may be below the rows after it, and neither a near tie nor a
    family the query renames may displace it."""
    pinned = int(bool(by_cosine) and own_first)
    rest = by_cosine[pinned:]
    ranked = family_order([n.cosine for n in rest], [n.family for n in rest], shares, FAMILY_RERANK_WEIGHT,
                          keep=max(KEEP_NEAREST - pinned, 0), blocks=names)
    return by_cosine[:pinned] + [rest[i] for i in ranked]


def has_graph(n: Neighbour, graph_hash: str | None) -> bool:
    """Whether `n` is a zoo row of the graph `graph_hash` (the query's own: `fold_heads` puts its
    model first and `family_ordered` keeps it there)."""
    return bool(graph_hash) and n.kind == "zoo" and n.graph_hash == graph_hash


def fold_heads(neighbours: list[Neighbour], wanted: str | None, first: str | None = None) -> list[Neighbour]:
    """One row per model: its task heads (one backbone, other last layers) fold into the row of the
    head whose task is the query's (else the nearest), so a GPT's nearest is a causal LM, not five
    heads of one model with a token classifier first. Rows by cosine, the model with graph `first`
    (the query's own, `same_graph_first`) in front."""
    rows: dict[str, list[Neighbour]] = {}
    for n in neighbours:
        rows.setdefault(_model_of(n), []).append(n)
    kept, in_front = [], set()
    for members in rows.values():
        best = min(members, key=lambda n: (task_distance(n.task, wanted), -n.cosine))
        best.heads = [name for n in members if n is not best for name in [n.name, *n.aliases]]
        kept.append(best)
        if any(has_graph(n, first) for n in members):
            in_front.add(id(best))
    return sorted(kept, key=lambda n: (id(n) not in in_front, -n.cosine))


def _backbone(family: str | None, voters: list[tuple[str, float]], models: dict,
              names: dict[str, str] | None = None) -> str:
    """The backbone of the nearest voter of the predicted family, when that family is composite; of
    one whose family the query's decoder renames to it when none is (`query_names`): a U-Net++ over
    a ResNet-34 is nearest a U-Net over one, whose encoder it shares."""
    if not family:
        return ""
    named = {f for f, to in (names or {}).items() if to == family}
    members = [m for graph_hash, _ in voters for m in models.get(graph_hash, [])]
    same = [m for m in members if m.family == family]
    if same:
        return backbone_of(same[0].id)
    return next((backbone_of(m.id) for m in members if m.family in named and backbone_of(m.id)), "")


def _neighbour(key: str, cosine: float, models: dict, notes: dict, details: dict, query: Query,
               family: str | None, task: str | None, source: str | None, wanted: str | None = None) -> Neighbour | None:
    if is_cache_name(key):
        e = details[key]
        return Neighbour(f"{Path(e['path']).name}:{e['name']}", "cache", e.get("family", ""),
                         "", "", "cache", cosine, e["params"] or 0, e["macs"] or 0, e["graph_hash"],
                         shared=shared_motifs(query.motifs, e.get("motifs") or []))
    graph_hash = zoo_hash(key) or key
    group = models.get(graph_hash)
    if not group:
        return None  # an embedding left from a model no longer in the zoo
    chosen = [m for m in group if (not family or m.family.lower() == family.lower())
              and (not task or m.task.lower() == task.lower()) and (not source or m.source.lower() == source.lower())]
    m = min(chosen or group, key=lambda x: task_distance(x.task, wanted))  # the query's task first, else the first
    motifs = notes.get(graph_hash, {}).get("motifs", [])
    return Neighbour(m.id, "zoo", m.family, m.coarse, m.task, m.source, cosine, m.params or 0, m.macs or 0,
                     graph_hash, [x.id for x in group if x.id != m.id], shared_motifs(query.motifs, motifs),
                     backbone=backbone_of(m.id))
