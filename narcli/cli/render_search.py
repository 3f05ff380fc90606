"""Terminal rendering of `nar similar`, `nar compare`, `nar check` and `nar index info`."""

from __future__ import annotations

from typing import Any

from narcli.cli.common import safe
from narcli.cli.render_scan import human
from narcli.search.text import prediction_line


def _shared_text(shared: list[dict[str, Any]], width: int = 28) -> str:
    if not shared:
        return "—"
    from narcli.cli.render_motifs import ops_text

    first = ops_text(shared[0]["ops"])
    if len(first) > width:
        first = first[: width - 1] + "…"
    more = f" +{len(shared) - 1}" if len(shared) > 1 else ""
    return f"{first}{more}"


def print_similar(console: Any, results: list[Any]) -> None:
    from rich.table import Table

    for result in results:
        q = result.query
        figures = f"{human(q.params)} params, {human(q.macs)} MACs" if q.params or q.macs else ""
        console.print(f"[bold]{safe(q.name)}[/] [dim]({q.kind}{', ' + figures if figures else ''})[/]")
        if q.zoo_model is not None:  # a zoo model has a family label: show it, and what the encoder says
            m = q.zoo_model
            console.print(f"zoo label: family [bold]{safe(m.family)}[/], coarse class {safe(m.coarse)}")
            console.print("[dim]encoder:[/] " + prediction_line(result.prediction))
        else:
            console.print(prediction_line(result.prediction))
        if getattr(result, "performance_text", None):
            console.print(f"[dim]{safe(result.performance_text)}[/]")
        if result.identical:
            shown = ", ".join(result.identical[:5]) + (f" and {len(result.identical) - 5} more"
                                                         if len(result.identical) > 5 else "")
            console.print(f"[dim]same architecture as: {safe(shown)}[/]")
        if not result.neighbours:
            what = ", ".join(f"{k} {v}" for k, v in result.filters.items())
            console.print(f"[yellow]no architecture matches {safe(what) or 'the index'}[/]")
            continue
        table = Table(box=None, pad_edge=False, header_style="bold")
        table.add_column("#", justify="right", min_width=2, no_wrap=True)
        table.add_column("name", no_wrap=True, overflow="ellipsis", max_width=36)
        table.add_column("family", no_wrap=True, overflow="ellipsis", max_width=16)
        wide = console.width >= 110
        if wide:
            table.add_column("task", no_wrap=True, overflow="ellipsis", max_width=12)
        for column in ("cosine", "params", "MACs"):
            table.add_column(column, justify="right", no_wrap=True, min_width=6)
        table.add_column("shared motifs", no_wrap=True, overflow="ellipsis", max_width=26)
        for rank, n in enumerate(result.neighbours, 1):
            name = safe(n.name) + (f" [dim]+{len(n.aliases)}[/]" if n.aliases else "")
            cells = [str(rank), name, safe(n.family)] + ([safe(n.task or "")] if wide else [])
            table.add_row(*cells, f"{n.cosine:.3f}", human(n.params), human(n.macs), safe(_shared_text(n.shared)))
        console.print(table)
        if any(n.aliases for n in result.neighbours):
            console.print("[dim]+N: N more zoo models share that architecture[/]")


def print_indexes(console: Any, rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from narcli.cli.render_scan import human_bytes

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("index", "kind", "items", "dim", "trees", "size", "status"):
        table.add_column(column)
    for row in rows:
        status = row.get("status", "")
        if status == "ok" and row.get("current") is False:
            status = "stale (rebuilt on next use)"
        elif status == "ok" and "novelty_threshold" in row:
            status = f"ok, novelty cosine {row['novelty_threshold']:.3f}"
        table.add_row(safe(row["path"]), row.get("kind") or "", str(row.get("items", "")), str(row.get("dim", "")),
                      str(row.get("trees", "")), human_bytes(row["bytes"]) if "bytes" in row else "", safe(status))
    console.print(table)


def print_comparison(console: Any, c: Any) -> None:
    from rich.table import Table

    from narcli.cli.render_motifs import ops_text

    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("")
    table.add_column(safe(c.a.name), justify="right")
    table.add_column(safe(c.b.name), justify="right")
    for label, x, y in (("params", human(c.a.params), human(c.b.params)), ("MACs", human(c.a.macs), human(c.b.macs)),
                        ("depth", str(c.a.depth), str(c.b.depth)), ("nodes", str(c.a.nodes), str(c.b.nodes))):
        table.add_row(label, x, y)
    for op, x, y in c.op_difference[:10]:
        table.add_row(f"[dim]op[/] {safe(op)}", str(x), str(y))
    if len(c.op_difference) > 10:
        table.add_row(f"[dim]… {len(c.op_difference) - 10} more ops differ[/]", "", "")
    console.print(table)
    verdict = " (the same architecture)" if c.same_architecture else ""
    console.print(f"cosine [bold]{c.cosine:.3f}[/]{verdict}")
    # a motif's type hashes its operations in order, their kernel sizes and what surrounds them, so
    # two "only in" motifs can list the same operations: mark them, and say what can differ
    looks_alike = {ops_text(m["ops"]) for m in c.motifs_only_a} & {ops_text(m["ops"]) for m in c.motifs_only_b}
    for title, motifs in (("shared motifs", c.motifs_shared), (f"only in {c.a.name}", c.motifs_only_a),
                          (f"only in {c.b.name}", c.motifs_only_b)):
        listed = "; ".join(f"{ops_text(m['ops'])} ×{m['count']}" + ("*" if ops_text(m["ops"]) in looks_alike and
                                                                    m not in c.motifs_shared else "")
                           for m in motifs[:4]) or "none"
        more = f" (+{len(motifs) - 4})" if len(motifs) > 4 else ""
        console.print(f"[bold]{safe(title)}[/]: {safe(listed)}{more}")
    if looks_alike:
        console.print("[dim]* the same operations on both sides, in another order, with other kernel sizes, or "
                      "between other neighbours (a motif's type tells those apart)[/]")


def _checked_name(r: Any) -> str:
    """`a/model.py:Net`: the model named with the path it was checked at (two `model.py` files in
    different folders must be told apart), not the file's base name alone."""
    from pathlib import Path

    base = Path(r.path).name
    return r.path + r.name[len(base):] if r.name.startswith(base) else f"{r.path}: {r.name}"


def print_check(console: Any, report: Any) -> None:

    for r in report.results:
        if r.skipped:
            continue
        if r.error:
            tag = "[red]FAIL[/]" if report.on_error == "fail" else "[yellow]warn[/]"
            console.print(f"{tag} {safe(r.path)}: {safe(r.error)}")
        elif r.flagged:
            console.print(f"[red]KNOWN[/] {safe(_checked_name(r))}: cosine {r.cosine:.3f} to {safe(r.nearest)} "
                          f"(family {safe(r.family)}), at or above {report.threshold:.3f}")
        else:
            console.print(f"[green]ok[/] {safe(_checked_name(r))}: nearest {safe(r.nearest)} at cosine {r.cosine:.3f}")
    if report.flagged:
        console.print(f"[bold red]{len(report.flagged)} model(s) match a known architecture[/] (threshold "
                      f"{report.threshold:.3f} from {safe(report.threshold_from)}); rename is not redesign — "
                      "reuse the known model, or raise the threshold with --threshold or \\[tool.nar] check-threshold")
    console.print(report.summary, highlight=False, soft_wrap=True)  # one line, for hook logs and grep
