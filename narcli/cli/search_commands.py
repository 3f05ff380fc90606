"""`nar similar`, `nar compare`, `nar check`, `nar motifs` and `nar index`: questions asked of the zoo."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from narcli.errors import printable
from narcli.cli.common import fail, run, safe, scan_options, stderr_console, stdout

index_app = typer.Typer(help="Build or inspect the nearest-neighbour indexes.", no_args_is_help=True)


def similar_command(
    target: str = typer.Argument(..., help="A zoo name (resnet50), a .py/.onnx/.pt2 file, or cache:NAME."),
    k: int = typer.Option(10, "-k", "--k", help="How many neighbours to show (1-1000)."),
    family: str | None = typer.Option(None, "--family", "-f", help="Only neighbours of this family."),
    task: str | None = typer.Option(None, "--task", "-t", help="Only neighbours with this task."),
    source: str | None = typer.Option(None, "--source", "-s", help="Only neighbours from this source (or 'cache')."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype of a .py model: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Trace again, and store nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """The known architectures nearest to a model, and the family it most likely belongs to."""
    from narcli.search.similar import check_k, find_similar

    run(check_k, k)
    options = scan_options(model, input_shape, timeout, no_cache, input_dtype)
    console = stderr_console()
    results = run(find_similar, target, k, family, task, source, options,
                   report=lambda line: console.print(f"[dim]{safe(line)}[/]"))
    if as_json:
        print(json.dumps({"target": target, "results": [r.to_json() for r in results]}, indent=2))
        return
    from narcli.cli.render_search import print_similar

    print_similar(stdout(), results)


def compare_command(
    a: str = typer.Argument(..., help="First model: zoo name, model file or cache:NAME."),
    b: str = typer.Argument(..., help="Second model."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype of a .py model: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Two architectures side by side: figures, op counts, motifs, cosine."""
    from narcli.search.compare import compare

    result = run(compare, a, b, scan_options(model, input_shape, timeout, False, input_dtype))
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        return
    from narcli.cli.render_search import print_comparison

    print_comparison(stdout(), result)


def export_command(
    target: str = typer.Argument(..., help="Zoo name, model file or cache:NAME."),
    out: Path = typer.Option(Path("."), "--out", "-o", help="Folder to write NAME.graph.json and NAME.dot into."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype of a .py model: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    as_json: bool = typer.Option(False, "--json", help="Print the written paths as JSON."),
) -> None:
    """Write a model's canonical graph as JSON and Graphviz DOT (`dot -Tsvg NAME.dot`)."""
    from narcli.search.export import export_graphs

    written = run(export_graphs, target, out, scan_options(model, input_shape, timeout, False, input_dtype))
    if as_json:
        print(json.dumps([str(p) for p in written], indent=2))
        return
    for path in written:
        print(printable(f"wrote {path}"))


def check_command(
    paths: list[str] | None = typer.Argument(None, help="Model files (default: [tool.nar] check-paths)."),
    threshold: float | None = typer.Option(None, "--threshold",
                                           help="Cosine at or above which a model is a known one (default 0.99)."),
    on_error: str | None = typer.Option(None, "--on-error", help="A file that cannot be checked: fail (default) or "
                                        "warn; also [tool.nar] check-on-error."),
    strict: bool = typer.Option(False, "--strict", hidden=True, help="The same as --on-error fail."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype of a .py model: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """For pre-commit: fail when a model file is (nearly) a known zoo architecture."""
    from narcli.scan.scanner import check_target_text
    from narcli.search.check import check_models

    for path in paths or []:
        run(check_target_text, path)  # before Path(''), which means '.'
    if strict and on_error not in (None, "fail"):
        fail("--strict is --on-error fail; give one of them", 2)
    report = run(check_models, [Path(p) for p in paths or []], threshold, "fail" if strict else on_error,
                 scan_options(model, input_shape, timeout, False, input_dtype))
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        from narcli.cli.render_search import print_check

        print_check(stdout(), report)
    raise typer.Exit(report.exit_code)


@index_app.command("build")
def index_build(
    bundled: bool = typer.Option(False, "--bundled", help="Rewrite the index shipped with nar (maintainers)."),
    as_json: bool = typer.Option(False, "--json", help="Print the indexes as JSON."),
) -> None:
    """Rebuild the zoo index and the index of your scanned models."""
    from narcli.search.neighbours import rebuild_indexes

    console = stderr_console()
    rows = run(rebuild_indexes, bundled, report=lambda line: console.print(f"[dim]{safe(line)}[/]"))
    _print_indexes(rows, as_json)


@index_app.command("info")
def index_info_command(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Where the indexes are, what they hold, and whether they are current."""
    from narcli.search.neighbours import index_info

    _print_indexes(run(index_info), as_json)


def _print_indexes(rows: list[dict], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from narcli.cli.render_search import print_indexes

    print_indexes(stdout(), rows)



def motifs_command(
    target: str = typer.Argument(..., help="A zoo model name, or a .py, .onnx or .pt2 file."),
    steps: int = typer.Option(1, "--steps", help="Neighbour-encoding steps before finding repeats."),
    max_size: int = typer.Option(64, "--max-size", help="Nodes in one motif at most."),
    limit: int = typer.Option(20, "--limit", help="Show at most this many motif types (0: all)."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype of a .py model: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show the repeated motifs a model is built from (e.g. a bottleneck block x 12)."""
    from narcli.search.motif_report import motif_report

    if steps < 0 or max_size < 1 or limit < 0:
        fail("--steps must be >= 0, --max-size >= 1 and --limit >= 0", 2)
    reports = run(motif_report, target, steps=steps, max_size=max_size,
                  options=scan_options(model, input_shape, timeout, False, input_dtype))
    if as_json:
        print(json.dumps(reports, indent=2))
        return
    from narcli.cli.render_motifs import print_motifs

    print_motifs(stdout(), reports, limit)
