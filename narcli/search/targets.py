"""The canonical graphs a target names (`narcli.scan.targets` says what kind of target it is)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from narcli.scan.scanner import ScanOptions
from narcli.scan.targets import (CachedName, Checkpoint, Directory, ModelFile, ModelFolder, Target, ZooName, cannot,
                                 resolve_target)


@dataclass
class NamedGraph:
    """One architecture a command works on: its display name, its graph, and its zoo record if any."""

    name: str
    graph: Any  # ArchGraph
    zoo_model: Any = None  # ZooModel when the target is a zoo name (or a checkpoint of one)
    record: Any = None  # ModelRecord when the target is a scanned file: its inputs and what was assumed


def resolve_graphs(text: str | Target, options: ScanOptions | None = None, zoo: Any = None,
                   command: str = "motifs") -> list[NamedGraph]:
    """The graphs `text` names: one zoo model, one cached scan, or every model a file defines
    (scanned, cached). A directory is refused in `command`'s name."""
    target = resolve_target(text, options) if isinstance(text, str) else text
    match target:
        case ZooName(text=name):
            from narcli.zoo.store import Zoo

            zoo = zoo or Zoo()
            model = zoo.resolve(name)
            return [NamedGraph(model.id, zoo.graph(model), model)]
        case CachedName(name=name):
            from pathlib import Path

            from narcli.errors import ZooError
            from narcli.scan.cache import Cache
            from narcli.search.query import cached_candidate

            cache = Cache()
            found = cached_candidate(name, cache)
            graph = cache.graph(found.graph_key)
            if graph is None:
                raise ZooError(f"the cached graph of {found.name} is missing; scan {found.path} again")
            record = cache.record(found.model_id)
            return [NamedGraph(f"{Path(found.path).name}:{found.name}", graph, record=record)]
        case Checkpoint(path=path):  # no code: the zoo architecture its tensors identify
            from narcli.search.identify import SAME_MODEL, identified_model
            from narcli.zoo.store import Zoo

            zoo = zoo or Zoo()
            model, best = identified_model(path, zoo)
            sign = "=" if best.share >= SAME_MODEL else "≈"  # ≈: a resized variant
            return [NamedGraph(f"{path.name} {sign} {best.id}", zoo.graph(model), model)]
        case ModelFile(path=path, options=file_options) | ModelFolder(path=path, options=file_options):
            from narcli.scan.scanner import scan_file

            records, graphs = scan_file(path, file_options, want_graphs=True)
            return [NamedGraph(f"{path.name}:{r.name}" if len(records) > 1 else path.name, g, record=r)
                    for r, g in zip(records, graphs)]
        case Directory():
            raise cannot(command, target, "it answers for one model at a time: name a file in it, or "
                                          "`nar scan DIR` for every model under it")
    raise AssertionError(target)
