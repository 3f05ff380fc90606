"""Rich terminal output for scan results and cache information."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from narcli.cli.common import safe
from narcli.errors import printable
from narcli.fsutil import shown_path
from narcli.scan.cache import ModelRecord
from narcli.scan.targets import cache_name
from narcli.search.text import human, human_params
from narcli.trace.inputs import InputSpec


def human_bytes(n: int) -> str:
    for size, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= size:
            return f"{n / size:.1f} {suffix}"
    return f"{n} B"


def record_panel(record: ModelRecord, performance: str | None = None) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan", no_wrap=True)
    grid.add_column()
    inputs = ", ".join(str(InputSpec.from_json(i)) for i in record.inputs)
    grid.add_row("source", safe(shown_path(record.source)))
    origin = "  [dim](from the zoo)[/dim]" if record.kind == "zoo" else "  [dim](from cache)[/dim]"
    how = f"{record.tracer}" + (origin if record.cached else f"  [dim]({record.seconds:.2f} s)[/dim]")
    grid.add_row("tracer", how)
    if record.assumed:
        grid.add_row("input", Text.assemble((safe(inputs), ""), ("  assumed: " + printable(record.assumed), "yellow")))
    else:
        grid.add_row("input", safe(inputs))
    grid.add_row("params", f"{human_params(record.params)}  [dim]({record.params:,})[/dim]")
    grid.add_row("MACs", f"{human(record.macs)}  [dim]({record.macs:,})[/dim]")
    grid.add_row("depth", f"{record.depth}  [dim](nodes on the longest path)[/dim]")
    grid.add_row("graph", f"{record.nodes} nodes, {record.edges} edges")
    ops = ", ".join(f"{op} ×{n}" for op, n in record.top_ops)
    grid.add_row("top ops", safe(ops) or "-")
    grid.add_row("hash", f"[dim]{record.graph_hash}[/dim]")
    if performance:
        grid.add_row("predicted", safe(performance.removeprefix("predicted: ")))
    return Panel(grid, title=f"[bold]{safe(record.name)}[/bold]", title_align="left", expand=False)


def print_records(console: Console, records: list[ModelRecord], performance: list[str | None] | None = None) -> None:
    performance = performance or [None] * len(records)
    console.print(Group(*[record_panel(r, p) for r, p in zip(records, performance)]))


def print_directory(console: Console, results: list[Any]) -> None:
    table = Table(title="models found", title_justify="left")
    for column, justify in (("file", "left"), ("model", "left"), ("params", "right"),
                            ("MACs", "right"), ("depth", "right"), ("nodes", "right"),
                            ("tracer", "left")):
        table.add_column(column, justify=justify)
    failed, skipped = [], []
    for result in results:
        if result.error:
            failed.append(result)
        elif result.skipped:
            skipped.append(result)
        for r in result.records:
            table.add_row(safe(result.path), safe(r.name), human_params(r.params), human(r.macs), str(r.depth),
                          str(r.nodes), r.tracer + (" (cached)" if r.cached else ""))
    if table.row_count:
        console.print(table)
    models = sum(len(r.records) for r in results)
    console.print(f"{models} model(s) in {len(results) - len(failed) - len(skipped)} file(s); "
                  f"{len(skipped)} skipped, {len(failed)} failed")
    import os

    root = os.path.commonpath([str(r.path) for r in results]) if len(results) > 1 else ""
    by_reason: dict[str, list[str]] = {}
    for result in skipped:  # named (under the scanned folder), so a file skipped by mistake is noticed
        by_reason.setdefault(result.skipped, []).append(os.path.relpath(result.path, root) if root else str(result.path))
    for reason, paths in by_reason.items():
        listed = ", ".join(paths[:8]) + (f" and {len(paths) - 8} more" if len(paths) > 8 else "")
        console.print(f"[dim]skipped ({safe(reason)}): {safe(listed)}[/dim]", highlight=False, soft_wrap=True)
    for result in failed:
        error = result.error.removeprefix(f"{result.path}: ")  # most errors name the file first already
        console.print(f"[red]failed[/red] {safe(result.path)}: {safe(error)}", highlight=False)


def print_cached(console: Console, records: list[ModelRecord]) -> None:
    """`nar cache list`: one row per cached model, named so that `cache:NAME` picks exactly it."""
    from narcli.scan.cache import short_id

    if not records:
        console.print("nothing cached yet; `nar scan FILE` or `nar similar FILE` caches a model")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("name", "model", "file", "input", "params", "MACs"):
        table.add_column(column, justify="right" if column in ("params", "MACs") else "left",
                         no_wrap=column == "name")
    for r in records:
        inputs = ", ".join(str(InputSpec.from_json(i)) for i in r.inputs)
        table.add_row(cache_name(short_id(r.id)), safe(r.name), safe(shown_path(r.source)), safe(inputs), human_params(r.params),
                      human(r.macs))
    console.print(table)


def print_cache_info(console: Console, info: dict[str, Any]) -> None:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold cyan")
    grid.add_column()
    grid.add_row("path", safe(info["path"]) + ("" if info["exists"] else "  [dim](not created yet)[/dim]"))
    grid.add_row("size", human_bytes(info["bytes"]))
    for key in ("scans", "models", "graphs"):
        grid.add_row(key, str(info[key]))
    if info["exists"]:
        ok = info["health"] == "ok"
        grid.add_row("health", "ok" if ok else f"[bold red]damaged[/] ({safe(info['health'])})")
    console.print(grid)
    others = [s for s in info.get("stores", [])[1:] if s["exists"] or s["health"] != "ok"]
    if others:  # every other store under NAR_HOME that is there
        table = Table(title="other stores", title_justify="left", show_edge=False)
        for column in ("store", "holds", "size", "health"):
            table.add_column(column, overflow="fold")
        for store in others:
            health = "ok" if store["health"] == "ok" else f"[bold red]damaged[/] ({safe(store['health'])})"
            table.add_row(safe(store["name"]), safe(store["what"]), human_bytes(store["bytes"]), health)
        console.print(table)


def print_identification(console: Console, found: Any) -> None:
    """`nar scan x.safetensors`: what the checkpoint holds and which zoo architectures it matches."""
    dtypes = ", ".join(f"{d}" + (f" ×{n}" if len(found.dtypes) > 1 else "") for d, n in found.dtypes.items())
    shards = f" in {found.files} files" if found.files > 1 else ""
    nested = f", weights under [bold]{safe(found.nested_key)}[/]" if found.nested_key else ""
    console.print(f"[bold]{safe(found.path)}[/]: {found.format} checkpoint{shards}, {found.tensors:,} "
                  f"tensor{'' if found.tensors == 1 else 's'}, "
                  f"{human(found.numel)} values ({dtypes}){nested}")
    best = found.best
    if best is None:
        console.print(f"[yellow]no zoo architecture shares a tensor (name and shape) with it[/] (of "
                      f"{found.signatures:,} signatures). Scan the model's code for its architecture.")
        return
    if found.identified:
        verdict = "[bold green]exact match[/]" if best.exact else "[bold]identified[/]"
        console.print(f"{verdict}: [bold]{safe(best.id)}[/] ({safe(best.family)}): {best.matched:,} of {best.zoo_tensors:,} "
                      f"tensors match" + (f", {best.extra:,} extra in the checkpoint" if best.extra else ""))
        if best.reshaped:
            console.print(f"  {len(best.reshaped)} differ in shape (a new head or a resized embedding):")
            for name, ckpt, zoo in best.reshaped[:6]:
                console.print(f"    {safe(name)}  [dim]checkpoint[/] {tuple(ckpt)}  [dim]zoo[/] {tuple(zoo)}")
        if best.same_as:
            more = f" and {len(best.same_as) - 6} more" if len(best.same_as) > 6 else ""
            console.print(f"  [dim]the same tensors as {safe(', '.join(best.same_as[:6]))}{more}[/]")
    elif found.resized:
        console.print(f"[bold]a resized {safe(best.id)}[/] ({safe(best.family)}): {best.name_cover:.0%} of the checkpoint's "
                      f"tensors have a namesake in it, {len(best.reshaped):,} with other shapes and {best.matched:,} "
                      f"equal ({best.zoo_tensors:,} in the zoo's configuration): other widths or depths of it")
    else:
        console.print(f"[yellow]no zoo architecture matches[/]: the best shares {best.share:.0%} of its tensors. "
                      "Scan the model's code for its architecture.")
    table = Table(title=f"nearest of {found.signatures:,} zoo signatures ({found.seconds:.2f} s)",
                  title_justify="left")
    for column, justify in (("#", "right"), ("model", "left"), ("family", "left"), ("match", "right"),
                            ("tensors", "right"), ("params", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for i, m in enumerate(found.matches, 1):
        table.add_row(str(i), safe(m.id) + (f" [dim](+{len(m.same_as)})[/]" if m.same_as else ""), safe(m.family),
                      f"{m.share:.0%}", f"{m.matched}/{m.zoo_tensors}", human_params(m.params))
    console.print(table)


def print_scan_report(console: Console, report: Any) -> None:
    """Whatever `nar scan` found: models (traced, stored or cached), a directory's rows, or what a
    checkpoint's tensors identify."""
    from narcli.search.scan_report import ScannedDirectory, ScannedModels

    if isinstance(report, ScannedModels):
        print_records(console, report.records, report.summaries() or None)
    elif isinstance(report, ScannedDirectory):
        print_directory(console, report.results)
    else:
        print_identification(console, report)


class DirectoryProgress:
    """A progress bar on stderr for a directory scan, started by the first file it reports (a
    single model's scan reports none, and shows none)."""

    def __init__(self, console: Console):
        self.console, self.progress, self.task = console, None, None

    def __enter__(self) -> "DirectoryProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.stop()

    def on_file(self, current: Any, done: int, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        if self.progress is None:
            self.progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TimeRemainingColumn(), transient=True, console=self.console)
            self.progress.start()
            self.task = self.progress.add_task("scanning", total=None)
        self.progress.update(self.task, total=total, completed=done, description=f"scanning {safe(current.name)}")
