"""`nar scan TARGET`: what a target holds, for every kind of target, as a typed report with `to_json()`.

A model file or folder is traced (cached); a zoo name and a cached scan show their stored records
(nothing traced); a checkpoint names the zoo architecture its tensors hold; a directory scans every
model file under it, one failure one row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli.scan.targets import CachedName, Checkpoint, Directory, ModelFile, ModelFolder, ZooName, resolve_target


@dataclass
class ScannedModels:
    """The models one target names: their records, graphs when asked for, and (for a file traced or
    found in the cache) the one-line performance summaries `nar scan` shows."""

    path: str
    records: list[Any]  # ModelRecord
    graphs: list[Any] = field(default_factory=list)  # ArchGraph, with `want_graphs`
    performance: list[list[Any]] | None = None  # prediction rows per record

    def to_json(self) -> dict[str, Any]:
        from narcli.search.predictions import summary_json

        models = []
        for i, record in enumerate(self.records):
            item = record.to_json()
            if self.performance is not None:
                item["performance"] = summary_json(self.performance[i])
            if self.graphs:
                item["graph"] = self.graphs[i].to_dict() if i < len(self.graphs) and self.graphs[i] is not None else None
            models.append(item)
        return {"path": self.path, "models": models}

    def summaries(self) -> list[str | None]:
        from narcli.search.predictions import summary_line

        return [summary_line(rows) for rows in self.performance] if self.performance is not None else []


@dataclass
class ScannedDirectory:
    path: str
    results: list[Any]  # walk.FileResult

    @property
    def failed(self) -> bool:
        return any(r.error for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "files": [
            {"path": str(r.path), "models": [m.to_json() for m in r.records], "error": r.error, "skipped": r.skipped}
            for r in self.results]}


ScanReport = ScannedModels | ScannedDirectory  # or identify.Identification, for a checkpoint


def scan_target(text: str, options: Any = None, want_graphs: bool = False,
                on_file: Callable[[Path, int, int], None] | None = None) -> Any:
    """The report `nar scan TEXT` prints, for whatever kind of target `text` is."""
    from narcli.scan.scanner import ScanOptions

    options = options or ScanOptions()
    target = resolve_target(text, options)
    match target:
        case ZooName(text=name):
            from narcli.zoo.store import Zoo

            zoo = Zoo()
            model = zoo.resolve(name)
            return ScannedModels(name, [model.to_record()], [zoo.graph(model)] if want_graphs else [])
        case CachedName(name=name):
            from narcli.scan.cache import Cache
            from narcli.scan.targets import find_cached_record

            cache = Cache()
            record = find_cached_record(name, cache)
            return ScannedModels(record.source, [record], [cache.graph(record.graph_key)] if want_graphs else [])
        case Checkpoint(path=path, options=given):
            from narcli.errors import UsageError
            from narcli.search.identify import identify_checkpoint

            if given.model or given.input_shapes:
                raise UsageError(f"{path}: --model and --input-shape apply to .py files only")
            return identify_checkpoint(path, 5)
        case Directory(path=path, options=given):
            from narcli.scan.walk import scan_directory

            return ScannedDirectory(str(path), scan_directory(path, given, on_file=on_file))
        case ModelFile(path=path, options=given) | ModelFolder(path=path, options=given):
            from narcli.scan.scanner import scan_file
            from narcli.search.predictions import performance_rows

            records, graphs = scan_file(path, given, want_graphs=want_graphs)
            return ScannedModels(str(path), records, graphs, [performance_rows(r) for r in records])
    raise AssertionError(target)
