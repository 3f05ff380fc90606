"""`nar scan` and `nar cache`: trace model files into the cache, inspect or clear it."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from narcli.cli.common import fail, run, stderr_console, stdout
from narcli.cli.options import TARGET_KINDS, InputDtypeOption, InputShapeOption, JsonOption, ModelOption, NoCacheOption, TimeoutOption, scan_options
from narcli.errors import printable

cache_app = typer.Typer(help="Inspect or clear the scan cache.", no_args_is_help=True)


def scan(
    target: Annotated[str, typer.Argument(help=f"What to scan: {TARGET_KINDS}, or a directory of model files.",
                                          show_default=False)],
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    timeout: TimeoutOption = 120.0,
    no_cache: NoCacheOption = False,
    as_json: JsonOption = False,
    graph: bool = typer.Option(False, "--graph", help="Include the canonical graph (implies --json)."),
) -> None:
    """Trace a model into its canonical architecture graph and summarise it (cached)."""
    from narcli.cli.render_scan import DirectoryProgress, print_scan_report
    from narcli.search.scan_report import ScannedDirectory, scan_target

    as_json = as_json or graph
    options = run(scan_options, model, input_shape, timeout, no_cache, input_dtype)
    with DirectoryProgress(stderr_console()) as progress:
        report = run(scan_target, target, options, want_graphs=graph, on_file=progress.on_file)
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_scan_report(stdout(), report)
    if isinstance(report, ScannedDirectory) and report.failed:
        raise typer.Exit(1)


@cache_app.command("info")
def cache_info(as_json: JsonOption = False) -> None:
    """Where the cache is, what it holds, and the health of every store nar keeps under NAR_HOME."""
    from narcli.search.stores import cache_info as stores_info
    from narcli.search.stores import problem_line

    info = run(stores_info)
    if as_json:
        print(json.dumps(info, indent=2))
    else:
        from narcli.cli.render_scan import print_cache_info

        print_cache_info(stdout(), info)
    problem = problem_line(info)
    if problem:
        fail(problem, 1)


@cache_app.command("list")
def cache_list(as_json: JsonOption = False) -> None:
    """Every cached model with its unique name (cache:ID), file, input and size, oldest first."""
    from narcli.scan.cache import Cache, short_id
    from narcli.scan.targets import cache_name

    records = run(lambda: Cache().records())
    if as_json:
        print(json.dumps([r.to_json() | {"cache_name": cache_name(short_id(r.id))} for r in records], indent=2))
        return
    from narcli.cli.render_scan import print_cached

    print_cached(stdout(), records)


@cache_app.command("clear")
def cache_clear(yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Delete every cached scan and graph, and repair every damaged store under NAR_HOME."""
    from narcli.scan.cache import Cache
    from narcli.search.stores import clear_caches

    cache = run(Cache)
    if not yes:
        if not sys.stdin.isatty():  # a "no" on a pipe must never read as consent
            fail(f"nar cache clear deletes everything cached in {cache.path}; without a terminal to ask on, "
                 "pass -y to confirm", 2)
        typer.confirm(f"Delete everything cached in {printable(cache.path)}?", abort=True)
    removed = run(clear_caches)
    for line in removed["repaired"]:
        print(printable(line))
    if "damaged" in removed:
        print(printable(f"the cache was damaged ({removed['damaged']}); deleted {cache.path}"))
        return
    print(f"removed {removed['scans']} scans, {removed['models']} models, {removed['graphs']} graphs")
