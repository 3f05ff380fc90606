"""Terminal rendering of `nar motifs` reports."""

from __future__ import annotations

from typing import Any


def ops_text(ops: dict[str, int]) -> str:
    """`conv2d×3 relu×3 add` from an op histogram."""
    return " ".join(op if n == 1 else f"{op}×{n}" for op, n in ops.items())


def print_motifs(console: Any, reports: list[dict], limit: int) -> None:
    from rich.table import Table

    from narcli.cli.common import safe

    for report in reports:
        console.print(f"[bold]{safe(report['name'])}[/]: {report['nodes']} nodes → {report['instances']} motif "
                      f"instances of {report['types']} types (macro graph: {report['instances']} nodes, "
                      f"{report['macro_edges']} edges)")
        table = Table(box=None, pad_edge=False)
        for column, justify in (("motif", "left"), ("size", "right"), ("count", "right"), ("ops inside", "left")):
            table.add_column(column, justify=justify)
        shown = report["motifs"] if limit == 0 else report["motifs"][:limit]
        for row in shown:
            table.add_row(safe(row["type"]), str(row["size"]), f"×{row['count']}", safe(ops_text(row["ops"])))
        console.print(table)
        hidden = len(report["motifs"]) - len(shown)
        if hidden > 0:
            console.print(f"[dim]… {hidden} more motif types (--limit 0 shows all)[/]")
