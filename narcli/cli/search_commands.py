"""`nar similar`, `nar compare`, `nar check`, `nar motifs` and `nar index`: questions asked of the zoo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from narcli.errors import printable
from narcli.cli.common import check_range, fail, run, stderr_console, stdout
from narcli.cli.options import FamilyFilterOption, InputDtypeOption, InputShapeOption, JsonOption, ModelOption, NoCacheOption, SourceFilterOption, TARGET_KINDS, TargetArgument, TaskFilterOption, TimeoutOption, reporter, scan_options

index_app = typer.Typer(help="Build or inspect the nearest-neighbour indexes.", no_args_is_help=True)


def similar_command(
    target: TargetArgument,
    k: int = typer.Option(10, "-k", "--k", help="How many neighbours to show (1-1000)."),
    family: FamilyFilterOption = None,
    task: TaskFilterOption = None,
    source: SourceFilterOption = None,
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    timeout: TimeoutOption = 120.0,
    no_cache: NoCacheOption = False,
    order: str = typer.Option("family", "--order", help="family: the 2 nearest, then the family the nearest ten "
                              "vote for, each family's models by cosine; cosine: by cosine alone (either way, a zoo model of "
                              "the very graph comes first)."),
    as_json: JsonOption = False,
) -> None:
    """The known architectures nearest to a model, and the family it most likely belongs to."""
    from narcli.search.similar import find_similar

    options = run(scan_options, model, input_shape, timeout, no_cache, input_dtype)
    console = stderr_console()
    results = run(find_similar, target, k, family, task, source, options,
                   report=reporter(console), order=order)
    if as_json:
        print(json.dumps({"target": target, "results": [r.to_json() for r in results]}, indent=2))
        return
    from narcli.cli.render_search import print_similar

    print_similar(stdout(), results)


def compare_command(
    a: Annotated[str, typer.Argument(help=f"The first model: {TARGET_KINDS}.", show_default=False)],
    b: Annotated[str, typer.Argument(help="The second model, of the same kinds.", show_default=False)],
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    model_b: Annotated[str | None, typer.Option("--model-b", help="The second model's --model (default: --model).")] = None,
    input_shape_b: Annotated[list[str] | None, typer.Option(
        "--input-shape-b", help="The second model's --input-shape (default: --input-shape).")] = None,
    input_dtype_b: Annotated[list[str] | None, typer.Option(
        "--input-dtype-b", help="The second model's --input-dtype (default: --input-dtype).")] = None,
    timeout: TimeoutOption = 120.0,
    as_json: JsonOption = False,
) -> None:
    """Two architectures side by side: figures, op counts, motifs, cosine.

    -m, -i and --input-dtype scan both files unless the second has its own (--model-b, --input-shape-b,
    --input-dtype-b); a zoo name or cache:NAME keeps the inputs it was traced with.
    """
    from narcli.search.compare import compare

    options = run(scan_options, model, input_shape, timeout, False, input_dtype)
    options_b = None
    if model_b or input_shape_b or input_dtype_b:
        options_b = run(scan_options, model_b or model, input_shape_b or input_shape, timeout, False,
                        input_dtype_b or input_dtype)
    result = run(compare, a, b, options, options_b)
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        return
    from narcli.cli.render_search import print_comparison

    print_comparison(stdout(), result)


def export_command(
    target: TargetArgument,
    out: Path = typer.Option(Path("."), "--out", "-o", help="Folder to write NAME.graph.json and NAME.dot into."),
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    timeout: TimeoutOption = 120.0,
    as_json: JsonOption = False,
) -> None:
    """Write a model's canonical graph as JSON and Graphviz DOT (`dot -Tsvg NAME.dot`)."""
    from narcli.search.export import export_graphs

    written = run(export_graphs, target, out, run(scan_options, model, input_shape, timeout, False, input_dtype))
    if as_json:
        print(json.dumps([str(p) for p in written], indent=2))
        return
    for path in written:
        print(printable(f"wrote {path}"))


def check_command(
    paths: list[str] | None = typer.Argument(None, help="Model files (default: \\[tool.nar] check-paths)."),
    threshold: float | None = typer.Option(None, "--threshold",
                                           help="Cosine at or above which a model is a known one (default 0.99)."),
    on_error: str | None = typer.Option(None, "--on-error", help="A file that cannot be checked: fail (default) or "
                                        "warn; also \\[tool.nar] check-on-error."),
    strict: bool = typer.Option(False, "--strict", hidden=True, help="The same as --on-error fail."),
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    timeout: TimeoutOption = 120.0,
    as_json: JsonOption = False,
) -> None:
    """For pre-commit: fail when a model file is (nearly) a known zoo architecture."""
    from narcli.scan.scanner import check_target_text
    from narcli.search.check import check_models

    for path in paths or []:
        run(check_target_text, path)  # before Path(''), which means '.'
    if strict and on_error not in (None, "fail"):
        fail("--strict is --on-error fail; give one of them", 2)
    report = run(check_models, [Path(p) for p in paths or []], threshold, "fail" if strict else on_error,
                 run(scan_options, model, input_shape, timeout, False, input_dtype))
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        from narcli.cli.render_search import print_check

        print_check(stdout(), report)
    raise typer.Exit(report.exit_code)


@index_app.command("build")
def index_build(
    bundled: bool = typer.Option(False, "--bundled", help="Rewrite the index shipped with nar (maintainers)."),
    as_json: JsonOption = False,
) -> None:
    """Rebuild the zoo index and the index of your scanned models."""
    from narcli.search.neighbours import rebuild_indexes

    console = stderr_console()
    rows = run(rebuild_indexes, bundled, report=reporter(console))
    _print_indexes(rows, as_json)


@index_app.command("info")
def index_info_command(as_json: JsonOption = False) -> None:
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
    target: TargetArgument,
    steps: int = typer.Option(1, "--steps", help="Neighbour-encoding steps before finding repeats."),
    max_size: int = typer.Option(64, "--max-size", help="Nodes in one motif at most."),
    limit: int = typer.Option(20, "--limit", help="Show at most this many motif types (0: all)."),
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    timeout: TimeoutOption = 120.0,
    as_json: JsonOption = False,
) -> None:
    """Show the repeated motifs a model is built from (e.g. a bottleneck block x 12)."""
    from narcli.search.motif_report import motif_report

    check_range("--limit", limit, 0)
    reports = run(motif_report, target, steps=steps, max_size=max_size,
                  options=run(scan_options, model, input_shape, timeout, False, input_dtype))
    if as_json:
        print(json.dumps(reports, indent=2))
        return
    from narcli.cli.render_motifs import print_motifs

    print_motifs(stdout(), reports, limit)
