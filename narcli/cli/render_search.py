"""Terminal rendering of `nar similar`, `nar compare`, `nar check` and `nar index info`."""

from __future__ import annotations

from typing import Any

from narcli.cli.common import safe
from narcli.cli.render_scan import human
from narcli.search.text import human_params, prediction_line


def _shared_text(shared: list[dict[str, Any]], width: int = 28) -> str:
    if not shared:
        return "—"
    from narcli.cli.render_motifs import ops_text

    first = ops_text(shared[0]["ops"])
    if len(first) > width:
        first = first[: width - 1] + "…"
    more = f" +{len(shared) - 1}" if len(shared) > 1 else ""
    return f"{first}{more}"


def assumed_input_line(inputs: list[dict] | None = None, assumed: str | None = None) -> str | None:
    """"input float32[1,3,32,32], assumed: …" for a file whose input was guessed: the figures shown
    (MACs, latency) are for that size. None when the input was given, or for a zoo model."""
    if not assumed or not inputs:
        return None
    shapes = ", ".join(f"{i.get('dtype', 'float32')}[{','.join(map(str, i['shape']))}]" for i in inputs)
    return f"[dim]input {safe(shapes)}, assumed: {safe(assumed)} (--input-shape to set it)[/]"


def print_similar(console: Any, results: list[Any]) -> None:
    from narcli.zoo.composite import backbone_of

    for result in results:
        q = result.query
        figures = f"{human_params(q.params)} params, {human(q.macs)} MACs" if q.params or q.macs else ""
        console.print(f"[bold]{safe(q.name)}[/] [dim]({q.kind}{', ' + figures if figures else ''})[/]")
        if line := assumed_input_line(**q.inputs_json()):
            console.print(line)
        if q.zoo_model is not None:  # a zoo model has a family label: show it, and what the encoder says
            m = q.zoo_model
            backbone = backbone_of(m.id)
            over = f" over {safe(backbone)}" if backbone else ""
            console.print(f"zoo label: family [bold]{safe(m.family)}[/]{over}, coarse class {safe(m.coarse)}")
            console.print("[dim]encoder:[/] " + prediction_line(result.prediction))
        else:
            console.print(prediction_line(result.prediction))
        if getattr(result, "performance_text", None):
            console.print(f"[dim]{safe(result.performance_text)}[/]")
        if result.identical:
            shown = ", ".join(result.identical[:5]) + (f" and {len(result.identical) - 5} more"
                                                         if len(result.identical) > 5 else "")
            console.print(f"[dim]same architecture as: {safe(shown)}[/]")
        if getattr(result, "twins", None):  # another graph only in its sizes (a longer position table, say)
            from narcli.search.similar import TWIN_COSINE

            shown = ", ".join(result.twins[:5]) + (f" and {len(result.twins) - 5} more" if len(result.twins) > 5 else "")
            console.print(f"[dim]same layers, other sizes (cosine ≥ {TWIN_COSINE}): {safe(shown)}[/]")
        if not result.neighbours:
            what = ", ".join(f"{k} {v}" for k, v in result.filters.items())
            console.print(f"[yellow]no architecture matches {safe(what) or 'the index'}[/]")
            continue
        console.print(_similar_table(console.width, result.neighbours))
        if any(n.aliases or getattr(n, "heads", None) for n in result.neighbours):
            console.print("[dim]+N: more zoo models with that architecture, or other task heads of the model[/]")
        if getattr(result, "reordered", False):
            from narcli.search.similar import ORDER_NOTE

            console.print(f"[dim]{ORDER_NOTE} (--order cosine: cosine alone)[/]")
        if getattr(result, "stem_searched", False):
            from narcli.search.similar import STEM_NOTE

            console.print(f"[dim]{STEM_NOTE}[/]")


NAME_FIRST = 28  # the name's width before the shared motifs get any room
NAME_LEAST = 12
SHARED_LEAST = 12
GAP = 2  # one space of padding either side of a column boundary


def _similar_table(width: int, neighbours: list[Any]) -> Any:
    """The neighbours in `width` columns. Family, cosine and the figures always get their full
    width; the name takes what is left (cut with an ellipsis), then the shared motifs, then task on
    a wide terminal. Rich would otherwise shrink every column alike, cutting `resnet` to `resn…`."""
    from rich.table import Table

    extra = [len(n.aliases) + len(getattr(n, "heads", None) or []) for n in neighbours]
    from narcli.zoo.composite import design_label

    rows = [{"#": str(rank), "name": n.name, "family": design_label(n.family or "", getattr(n, "backbone", "")),
             "task": n.task or "",
             "cosine": f"{n.cosine:.3f}", "params": human_params(n.params), "MACs": human(n.macs),
             "shared motifs": _shared_text(n.shared, 60)} for rank, n in enumerate(neighbours, 1)]
    full = {column: max([len(column)] + [len(r[column]) for r in rows]) for column in rows[0]} if rows else {}
    full["name"] = max([4] + [len(r["name"]) + (len(f" +{x}") if x else 0) for r, x in zip(rows, extra)])
    full["#"] = max(2, full["#"])  # ranks line up whether there are 9 rows or 10
    widths = {c: full[c] for c in ("#", "family", "cosine", "params", "MACs")}
    room = width - sum(widths.values()) - GAP * 5  # the six columns always shown
    if room < NAME_LEAST:  # a very narrow terminal: the family gives way, to 8 columns at least
        widths["family"] = max(8, widths["family"] - (NAME_LEAST - room))
        room = width - sum(widths.values()) - GAP * 5
    widths["name"] = max(min(full["name"], NAME_FIRST, room), min(NAME_LEAST, full["name"]))
    room -= widths["name"]
    if room - GAP >= min(SHARED_LEAST, full["shared motifs"]):
        widths["shared motifs"] = min(full["shared motifs"], SHARED_LEAST)
        room -= widths["shared motifs"] + GAP
    grow = min(full["name"] - widths["name"], max(room, 0))
    widths["name"] += grow
    room -= grow
    if room >= full["task"] + GAP:
        widths["task"] = full["task"]
        room -= full["task"] + GAP
    if "shared motifs" in widths:
        widths["shared motifs"] += min(full["shared motifs"] - widths["shared motifs"], max(room, 0))
    table = Table(box=None, pad_edge=False, header_style="bold")
    order = [c for c in ("#", "name", "family", "task", "cosine", "params", "MACs", "shared motifs") if c in widths]
    for column in order:
        table.add_column(column, width=widths[column], no_wrap=True, overflow="ellipsis",
                         justify="right" if column in ("#", "cosine", "params", "MACs") else "left")
    for row, x in zip(rows, extra):
        cells = {**{c: safe(v) for c, v in row.items()}, "name": safe(row["name"]) + (f" [dim]+{x}[/]" if x else "")}
        table.add_row(*(cells[c] for c in order))
    return table


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
    for label, x, y in (("params", human_params(c.a.params), human_params(c.b.params)), ("MACs", human(c.a.macs), human(c.b.macs)),
                        ("depth", str(c.a.depth), str(c.b.depth)), ("nodes", str(c.a.nodes), str(c.b.nodes))):
        table.add_row(label, x, y)
    for op, x, y in c.op_difference[:10]:
        table.add_row(f"[dim]op[/] {safe(op)}", str(x), str(y))
    if len(c.op_difference) > 10:
        table.add_row(f"[dim]… {len(c.op_difference) - 10} more ops differ[/]", "", "")
    console.print(table)
    verdict = " (the same architecture)" if c.same_architecture else ""
    console.print(f"cosine [bold]{c.cosine:.3f}[/]{verdict}")
    counts_b = {m["type"]: m["count"] for m in getattr(c.b, "motifs", None) or []}
    paired = getattr(c, "motifs_paired", [])
    # a motif's type hashes its layers in sequence order, so one block cut at another point (a
    # transformer layer starting at its attention, not its norm) has another type: shared all the same
    shared = [f"{ops_text(m['ops'])} ×{m['count']}" + (f" (×{counts_b[m['type']]})" if counts_b.get(m["type"],
              m["count"]) != m["count"] else "") for m in c.motifs_shared]
    shared += [f"{ops_text(p['a']['ops'])} ×{p['a']['count']} (×{p['b']['count']})†" for p in paired if p["same_block"]]
    console.print(f"[bold]shared motifs[/]: {safe(_listed(shared))}")
    alike = [p for p in paired if not p["same_block"]]
    if alike:
        console.print("[bold]alike motifs[/], and what differs:")
        for p in alike[:4]:
            console.print(f"  {safe(ops_text(p['a']['ops']))} ×{p['a']['count']} ~ {safe(ops_text(p['b']['ops']))} "
                          f"×{p['b']['count']}: {safe(p['difference'])}")
        if len(alike) > 4:
            console.print(f"  [dim]… {len(alike) - 4} more[/]")
    for name, motifs in ((c.a.name, c.motifs_only_a), (c.b.name, c.motifs_only_b)):
        console.print(f"[bold]only in {safe(name)}[/]: "
                      + safe(_listed([f"{ops_text(m['ops'])} ×{m['count']}" for m in motifs])))
    if any(p["same_block"] for p in paired):
        console.print(f"[dim]† the same block, cut at another point of the layer sequence; (×N): its count in "
                      f"{safe(c.b.name)}[/]")
    elif any(counts_b.get(m["type"], m["count"]) != m["count"] for m in c.motifs_shared):
        console.print(f"[dim](×N): its count in {safe(c.b.name)}[/]")


def _listed(items: list[str], shown: int = 4) -> str:
    return "; ".join(items[:shown]) + (f" (+{len(items) - shown})" if len(items) > shown else "") if items else "none"


def _checked_name(r: Any) -> str:
    """`a/model.py:Net`: the model named with the path it was checked at (two `model.py` files in
    different folders must be told apart), not the file's base name alone."""
    from pathlib import Path

    base = Path(r.path).name
    return r.path + r.name[len(base):] if r.name.startswith(base) else f"{r.path}: {r.name}"


def print_check(console: Any, report: Any) -> None:
    from narcli.search.known import RESPELLED

    for r in report.results:
        if r.skipped:
            console.print(f"[dim]skip {safe(r.path)}: {safe(r.skipped)}[/]", soft_wrap=True)
            continue
        settings = f" [dim](settings of {', '.join(safe(s) for s in r.settings)})[/]" if r.settings else ""
        if r.error:
            tag = "[red]FAIL[/]" if report.on_error == "fail" else "[yellow]warn[/]"
            console.print(f"{tag} {safe(r.path)}: {safe(r.error)}{settings}", soft_wrap=True)
        elif r.allowed:
            console.print(f"[yellow]allowed[/] {safe(_checked_name(r))}: {safe(r.known.describe())} "
                          f"(family {safe(r.family)}; allow-known){settings}", soft_wrap=True)
        elif r.flagged:
            console.print(f"[red]KNOWN[/] {safe(_checked_name(r))}: {safe(r.known.describe())} "
                          f"(family {safe(r.family)}){settings}", soft_wrap=True)
        else:
            respelled = f" ({RESPELLED})" if r.respelled else ""
            console.print(f"[green]ok[/] {safe(_checked_name(r))}: nearest {safe(r.nearest)} at cosine {r.cosine:.3f}"
                          f"{respelled}{settings}", soft_wrap=True)  # one line a file: hook logs are grepped
    if report.flagged:
        console.print(f"[bold red]{len(report.flagged)} model(s) match a known architecture[/]: the same graph, the "
                      f"same layers with an adapted stem or head, or cosine at or above {report.threshold:.3f} (from "
                      f"{safe(report.threshold_from)}); rename is not redesign — reuse the known model; to keep one on "
                      "purpose, set allow-known = true for it under \\[tool.nar.files.\"GLOB\"]; the cosine rule "
                      "follows --threshold or \\[tool.nar] check-threshold")
    console.print(report.summary, highlight=False, soft_wrap=True)  # one line, for hook logs and grep
