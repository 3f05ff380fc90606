"""`nar motifs`: the repeated motifs of each model a target names (zoo name, cached scan, checkpoint or file)."""

from __future__ import annotations

from typing import Any

from narcli.encode.motifs import MAX_SIZE, STEPS, describe, sample_motifs
from narcli.search.targets import resolve_graphs


def motif_report(target: str, steps: int = STEPS, max_size: int = MAX_SIZE, options: Any = None) -> list[dict]:
    """For each model `target` names (zoo name or file, scanned with `options`): its motif types and
    macro-graph size."""
    from narcli.errors import check_range

    check_range("--steps", steps, 0)
    check_range("--max-size", max_size, 1)
    reports = []
    for found in resolve_graphs(target, options):
        motifs = sample_motifs(found.graph, steps, max_size)
        reports.append({"name": found.name, "nodes": found.graph.num_nodes,
                        "instances": len(motifs.instances), "types": len(motifs.types()),
                        "macro_edges": len(motifs.macro_edges), "motifs": describe(found.graph, motifs)})
    return reports
