"""Turn what a user names on the command line (a zoo model or a model file) into canonical graphs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from narcli.scan.scanner import ScanOptions, looks_like_a_name


@dataclass
class Target:
    """One architecture a command works on: its display name, its graph, and its zoo record if any."""

    name: str
    graph: Any  # ArchGraph
    zoo_model: Any = None  # ZooModel when the target is a zoo name


def _is_checkpoint(path: Path) -> bool:
    from narcli.trace.checkpoint import is_checkpoint_path

    return is_checkpoint_path(path)


def resolve_targets(text: str, options: ScanOptions | None = None, zoo: Any = None) -> list[Target]:
    """The graphs `text` names: one zoo model, or every model a file defines (scanned, cached)."""
    from narcli.scan.scanner import module_target

    path = Path(text)
    found = module_target(text, options)
    if found is not None:  # pkg.module:Class
        path, options = found
    elif _is_checkpoint(path):  # no code: the zoo architecture its tensors identify
        from narcli.search.identify import SAME_MODEL, identified_model
        from narcli.zoo.store import Zoo

        zoo = zoo or Zoo()
        model, best = identified_model(path, zoo)
        sign = "=" if best.share >= SAME_MODEL else "≈"  # ≈: a resized variant
        return [Target(f"{path.name} {sign} {best.id}", zoo.graph(model), model)]
    elif not path.exists() and looks_like_a_name(text):
        from narcli.zoo.store import Zoo

        zoo = zoo or Zoo()
        model = zoo.resolve(text)
        return [Target(model.id, zoo.graph(model), model)]
    from narcli.scan.scanner import scan_file

    records, graphs = scan_file(path, options, want_graphs=True)
    return [Target(f"{path.name}:{r.name}" if len(records) > 1 else path.name, g)
            for r, g in zip(records, graphs)]
