"""`nar export TARGET`: the canonical graph of a zoo model, a model file or a cached model, written
as JSON and Graphviz DOT (what the browser's `e` writes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from narcli.errors import NarError


def export_graphs(target: str, folder: Path, options: Any = None) -> list[Path]:
    """Write each architecture `target` names (one per model a file defines) into `folder`; nothing
    is written unless every graph is there and every destination may be written."""
    from narcli.graph.dot import write_graphs
    from narcli.scan.cache import Cache
    from narcli.search.query import resolve_queries
    from narcli.zoo.store import Zoo

    graphs: list[tuple[Any, str]] = []
    with Zoo() as zoo:
        for query in resolve_queries(target, options, zoo, command="export"):
            if query.zoo_model is not None:
                graph = zoo.graph(query.zoo_model)
            elif query.graph_key:
                graph = Cache().graph(query.graph_key)
            else:
                graph = None
            if graph is None:
                raise NarError(f"{query.name}: no stored graph to export (a bare checkpoint has none; scan its code)")
            graphs.append((graph, query.name))
    return write_graphs(graphs, Path(folder))
