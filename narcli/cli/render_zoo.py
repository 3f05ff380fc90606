"""Rich terminal output for the zoo: model records, lists, families, build progress and reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from narcli.cli.common import safe
from narcli.cli.render_scan import human, human_params
from narcli.errors import printable


def _shape(spec: dict[str, Any]) -> str:
    text = f"{spec.get('dtype', 'float32')}[{','.join(str(d) for d in spec.get('shape', []))}]"
    return f"{spec['name']}: {text}" if spec.get("name") else text


def print_zoo_model(console: Console, model: Any, aliases: list[str]) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column()
    grid.add_row("family", f"{safe(model.family)}  [dim]({safe(model.coarse)}; from {safe(model.source)}'s "
                           f"{safe(repr(model.source_family))}, labelled by {safe(model.labelled_by)})[/dim]")
    grid.add_row("task", safe(model.task))
    if model.status != "ok":
        grid.add_row("status", f"[red]failed[/red]: {safe(model.reason)}: {safe(model.message)}")
    else:
        grid.add_row("input", safe(", ".join(_shape(s) for s in model.inputs)))
        grid.add_row("params", f"{human_params(model.params)}  [dim]({model.params:,})[/dim]")
        grid.add_row("MACs", f"{human(model.macs)}  [dim]({model.macs:,})[/dim]")
        grid.add_row("depth", f"{model.depth}  [dim](nodes on the longest path)[/dim]")
        grid.add_row("graph", f"{model.nodes} nodes, {model.edges} edges  [dim](traced by {safe(model.tracer)})[/dim]")
        grid.add_row("top ops", safe(", ".join(f"{op} ×{n}" for op, n in model.top_ops)) or "-")
        grid.add_row("hash", f"[dim]{model.graph_hash}[/dim]")
        if aliases:
            shown = ", ".join(aliases[:6]) + (f" and {len(aliases) - 6} more" if len(aliases) > 6 else "")
            grid.add_row("same as", safe(shown))
    console.print(Panel(grid, title=f"[bold]{safe(model.id)}[/bold]", title_align="left", expand=False))


def print_model_list(console: Console, models: list[Any], total: int, failed: bool) -> None:
    # Plain aligned columns: a rich Table measures every cell, which takes a third of a second for
    # a family of a few hundred models.
    if failed:
        header = ("model", "family", "reason", "message")
        rows = [(m.id, m.family, m.reason or "", (m.message or "")[:100]) for m in models]
        right: tuple[int, ...] = ()
    else:
        header = ("model", "family", "coarse", "task", "params", "MACs", "nodes")
        rows = [(m.id, m.family, m.coarse, m.task, human_params(m.params), human(m.macs), str(m.nodes)) for m in models]
        right = (4, 5, 6)
    rows = [tuple(printable(c) for c in r) for r in rows]  # written straight to the file: no console to escape them
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    shown = f", first {len(models)}" if len(models) < total else ""
    console.print(f"[bold]{total} zoo model(s){shown}[/bold]")
    console.print(line(header), style="bold", highlight=False, soft_wrap=True)
    console.file.write("\n".join(line(r) for r in rows) + "\n")


def print_families(console: Console, families: list[dict[str, Any]]) -> None:
    table = Table(title=f"{len(families)} families", title_justify="left")
    for column, justify in (("family", "left"), ("coarse", "left"), ("models", "right"),
                            ("architectures", "right"), ("sources", "left")):
        table.add_column(column, justify=justify)
    for f in families:
        table.add_row(safe(f["family"]), safe(f["coarse"]), str(f["models"]), str(f["architectures"]), safe(", ".join(f["sources"])))
    console.print(table)


def print_stats(console: Console, stats: dict[str, Any]) -> None:
    table = Table(title=f"{stats['models']} models, {stats['architectures']} distinct architectures, "
                        f"{stats['failed']} failed", title_justify="left")
    for column, justify in (("source", "left"), ("models", "right"), ("architectures", "right"),
                            ("failed", "right"), ("skipped", "right"), ("traced", "right"),
                            ("top failure reasons", "left")):
        table.add_column(column, justify=justify)
    for name, s in stats["sources"].items():
        tried = s["models"] + s["failed"]
        reasons = ", ".join(f"{r} ×{n}" for r, n in list(s["reasons"].items())[:3])
        table.add_row(safe(name), str(s["models"]), str(s["architectures"]), str(s["failed"]), str(s["skipped"]),
                      f"{s['models'] / tried:.1%}" if tried else "-", safe(reasons))
    console.print(table)
    for title, counts in (("coarse class", stats["coarse"]), ("task", stats["tasks"])):
        small = Table(title=f"by {title}", title_justify="left")
        small.add_column(title)
        small.add_column("models", justify="right")
        for key, n in counts.items():
            small.add_row(safe(key), str(n))
        console.print(small)


def print_plugins(console: Console, plugins: list[dict[str, Any]], missing: list[dict[str, Any]] | None = None) -> None:
    for m in missing or []:  # first-party plugins not installed: each with the one command that works
        console.print(f"[yellow]not installed[/] {safe(m['package'])} ({safe(', '.join(m['sources']))}): "
                      f"{safe(m['install'])}", highlight=False, soft_wrap=True)
    if not plugins:
        console.print("no plugins installed; zoo sources come as plugins (above)")
        return
    table = Table(title="plugins", title_justify="left")
    for column in ("plugin", "package", "version", "hooks", "zoo sources"):
        table.add_column(column)
    for p in plugins:
        sources = ", ".join(safe(s["name"]) + (f" [yellow](unusable: {safe(s['missing'])})[/yellow]" if s["missing"] else "")
                            for s in p["sources"])
        if p.get("error"):  # a broken plugin: named with why, the others still listed
            sources = (sources + "; " if sources else "") + f"[red]broken: {safe(p['error'])}[/red]"
        table.add_row(safe(p["name"]), safe(p["package"]), safe(p["version"]), safe(", ".join(p["hooks"])), sources)
    console.print(table)


class BuildProgress:
    """A progress bar per source with ETA, and a running count of failures."""

    def __init__(self, console: Console):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("[red]{task.fields[failed]} failed"), TimeElapsedColumn(),
                                 TimeRemainingColumn(), console=console)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> BuildProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def start(self, source: str, total: int) -> None:
        self.tasks[source] = self.progress.add_task(safe(source), total=total, failed=0)

    def advance(self, source: str, result: Any) -> None:
        task = self.tasks[source]
        failed = self.progress.tasks[self.progress.task_ids.index(task)].fields["failed"] + (not result.ok)
        self.progress.update(task, advance=1, failed=failed, description=safe(f"{source} {result.key[:40]}"))


def print_build_reports(console: Console, reports: list[Any], db: Path) -> None:
    table = Table(title=f"zoo build → {db}", title_justify="left")
    for column, justify in (("source", "left"), ("listed", "right"), ("already done", "right"), ("traced", "right"),
                            ("failed", "right"), ("skipped", "right"), ("new archs", "right"), ("time", "right"),
                            ("rate", "right")):
        table.add_column(column, justify=justify)
    for r in reports:
        tried = r.ok + r.failed
        rate = f"{tried / r.seconds * 60:.0f}/min" if r.seconds and tried else "-"
        table.add_row(safe(r.source), str(r.listed), str(r.already), str(r.ok), str(r.failed), str(r.skipped),
                      str(r.new_architectures),
                      f"{r.seconds:.0f} s", rate)
    console.print(table)
    reasons: dict[str, int] = {}
    for r in reports:
        for reason, n in r.reasons.items():
            reasons[f"{r.source}: {reason}"] = n
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:10]:
        console.print(f"  [red]{n:>5}[/red] {safe(reason)}", highlight=False)
    if reasons:
        console.print("  (`nar zoo list --failed` shows each failure)")
