"""Which zoo architecture a bare checkpoint (no code) holds, from its tensor names and shapes alone.

The checkpoint's names are made canonical (wrapper prefixes such as `module.` or an EMA copy folded
in), sketched, and compared with every zoo signature's sketch; the closest candidates are then
matched tensor by tensor. A match reports how many of the architecture's tensors the checkpoint
holds with the same shape, which differ in shape (a new classifier head, say) and what is extra.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli.errors import LoadError, UsageError, ZooError
from narcli.trace.checkpoint import Shape, canonical_shapes, read_checkpoint

CANDIDATES = 40  # signatures read in full after the sketch comparison
NAME_CANDIDATES = 10  # and those whose names alone are closest (a resized variant shares no shapes)
SAME_MODEL = 0.5  # below this share of matching tensors a match is only "nearest", not the model
# a tensor with the zoo model's name but another shape (a resized head) is half the evidence of an
# equal one: it tells a fine-tuned classifier from the same backbone with another task head
RESHAPED_WEIGHT = 0.5
RESIZED = 0.8  # share of the checkpoint's tensor names found in a zoo model to call it a resized variant


@dataclass
class SignatureMatch:
    """One zoo architecture against the checkpoint."""

    id: str
    family: str
    params: int
    zoo_tensors: int  # tensors a checkpoint of the zoo model holds
    matched: int  # of those, present in the checkpoint with the same shape
    reshaped: list[tuple[str, Shape, Shape]] = field(default_factory=list)  # (name, checkpoint, zoo)
    missing: int = 0  # zoo tensors the checkpoint lacks
    extra: int = 0  # checkpoint tensors the zoo model lacks
    share: float = 0.0  # matched / the larger of the two tensor counts
    score: float = 0.0  # the ranking: share, with half credit for reshaped tensors
    name_cover: float = 0.0  # share of the checkpoint's tensors that have a namesake in the zoo model
    same_as: list[str] = field(default_factory=list)  # other zoo models with this very signature

    @property
    def exact(self) -> bool:
        return self.matched == self.zoo_tensors and self.extra == 0 and not self.reshaped

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["reshaped"] = [{"name": n, "checkpoint": list(c), "zoo": list(z)} for n, c, z in self.reshaped]
        data["exact"] = self.exact
        return data


@dataclass
class Identification:
    path: str
    format: str
    files: int
    tensors: int
    numel: int
    dtypes: dict[str, int]
    nested_key: str | None
    matches: list[SignatureMatch]
    signatures: int  # zoo signatures compared against
    seconds: float = 0.0

    @property
    def best(self) -> SignatureMatch | None:
        return self.matches[0] if self.matches else None

    @property
    def identified(self) -> bool:
        """The best match holds at least half the tensors with the very same shapes."""
        return bool(self.matches) and self.matches[0].share >= SAME_MODEL

    @property
    def resized(self) -> bool:
        """Not identified, but (nearly) every checkpoint tensor has a namesake in the best match: a
        variant of it with other widths or fewer layers."""
        return not self.identified and bool(self.matches) and self.matches[0].name_cover >= RESIZED

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "matches"}
        data["identified"] = self.identified
        data["resized"] = self.resized
        data["matches"] = [m.to_json() for m in self.matches]
        return data


_SKETCHES: dict[tuple, Any] = {}


def _sketch_table(zoo: Any) -> Any:
    from narcli.zoo.signatures import load_sketches

    key = tuple(str(p) for p in zoo.paths)
    if key not in _SKETCHES:
        _SKETCHES.clear()
        _SKETCHES[key] = load_sketches(zoo)
    return _SKETCHES[key]


def identify_checkpoint(path: Path, top: int = 5, zoo: Any = None) -> Identification:
    """The zoo architectures whose checkpoints look most like the one at `path`, best first."""
    clock = time.perf_counter()
    checkpoint = read_checkpoint(Path(path))
    matches, compared = match_shapes(checkpoint.shapes(), top, zoo)
    return Identification(str(path), checkpoint.format, checkpoint.files, len(checkpoint.tensors),
                          checkpoint.numel(), checkpoint.dtypes(), checkpoint.nested_key, matches, compared,
                          round(time.perf_counter() - clock, 4))


def identified_model(path: Path, zoo: Any = None) -> tuple[Any, SignatureMatch]:
    """(ZooModel, match) of the architecture a checkpoint holds (or, when only the names agree, the
    one it is a resized variant of), for commands that search from it; UsageError when no zoo
    architecture matches well enough to stand for it."""
    from narcli.zoo.store import Zoo

    zoo = zoo or Zoo()
    found = identify_checkpoint(path, 1, zoo)
    best = found.best
    if best is None or not (found.identified or found.resized):
        share = f"; the nearest, {best.id}, shares {best.share:.0%} of its tensors" if best else ""
        raise UsageError(f"{path}: no zoo architecture matches this checkpoint's tensors{share}; "
                         "scan the model's code instead")
    return zoo.resolve(best.id), best


def match_shapes(shapes: dict[str, Shape], top: int = 5, zoo: Any = None) -> tuple[list[SignatureMatch], int]:
    """(best matches, signatures compared) for a checkpoint given as name -> shape."""
    import numpy as np

    from narcli.zoo.signatures import load_signatures, sketch
    from narcli.zoo.store import Zoo

    zoo = zoo or Zoo()
    table = _sketch_table(zoo)
    if not table.ids:
        raise ZooError("the zoo has no checkpoint signatures; run `nar zoo signatures`")
    query = canonical_shapes(shapes)
    if not query:
        raise LoadError("the checkpoint holds no tensors")
    estimate = (table.sketches == sketch(query)[None, :]).mean(axis=1)
    by_names = (table.name_sketches == sketch(query, shapes=False)[None, :]).mean(axis=1)
    chosen = list(np.argsort(-estimate, kind="stable")[:CANDIDATES])
    chosen += [i for i in np.argsort(-by_names, kind="stable")[:NAME_CANDIDATES] if i not in set(chosen)]
    ids = [table.ids[i] for i in chosen]
    signatures = load_signatures(zoo, ids)
    direct = _unwrapped(shapes)
    models = {m.id: m for m in zoo._query(f"select * from models where id in ({','.join('?' * len(ids))})",
                                          tuple(ids))}
    families = zoo.family_sizes()
    scored = []
    for model_id in ids:
        if model_id not in signatures or model_id not in models:
            continue
        match, exact_names = _compare(model_id, signatures[model_id], query, direct)
        model = models[model_id]
        match.family, match.params = model.family, model.params or 0
        # equal scores (the same tensors): the best-ranked source, then the more common family
        scored.append((-match.score, -exact_names, zoo.rank(model.source), -families.get(model.family, 0),
                       model_id, match, tuple(signatures[model_id])))
    scored.sort(key=lambda s: s[:5])
    out: list[SignatureMatch] = []
    groups: dict[Any, SignatureMatch] = {}
    for *_, match, key in scored:
        if match.matched == 0 and match.reshaped == []:  # nothing in common: not worth a row
            continue
        if key in groups:  # the same tensors as a better-ranked model: listed beside it, not again
            groups[key].same_as.append(match.id)
            continue
        groups[key] = match
        out.append(match)
    return out[:top], len(table.ids)


def _unwrapped(shapes: dict[str, Shape]) -> dict[str, Shape]:
    """Names with only process wrappers (`module.`, `_orig_mod.`) dropped: a model's own `model.`
    prefix is kept, to tell a task model from its base model when both have the same tensors."""
    out = {}
    for name, shape in shapes.items():
        parts = name.split(".")
        while len(parts) > 1 and parts[0] in ("module", "_orig_mod"):
            parts = parts[1:]
        out.setdefault(".".join(parts), shape)
    return out


def _compare(model_id: str, signature: list[tuple[str, Shape]], query: dict[str, Shape],
             direct: dict[str, Shape]) -> tuple[SignatureMatch, int]:
    zoo_shapes = canonical_shapes(signature)
    matched, reshaped = 0, []
    for name, shape in zoo_shapes.items():
        found = query.get(name)
        if found == shape:
            matched += 1
        elif found is not None:
            reshaped.append((name, found, shape))
    missing = len(zoo_shapes) - matched - len(reshaped)
    extra = len(query) - matched - len(reshaped)
    larger = max(len(zoo_shapes), len(query))
    share, score = matched / larger, (matched + RESHAPED_WEIGHT * len(reshaped)) / larger
    exact_names = sum(1 for name, shape in signature if direct.get(name) == shape)
    cover = (matched + len(reshaped)) / max(len(query), 1)
    return SignatureMatch(model_id, "", 0, len(zoo_shapes), matched, reshaped, missing, extra, share, score,
                          cover), exact_names

