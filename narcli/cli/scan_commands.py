"""`nar scan` and `nar cache`: trace model files into the cache, inspect or clear it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from narcli.cli.common import check_timeout, fail, open_zoo, run, stderr_console, stdout
from narcli.errors import printable

cache_app = typer.Typer(help="Inspect or clear the scan cache.", no_args_is_help=True)


def scan(
    target: str = typer.Argument(..., help="A .py, .onnx or .pt2 file, pkg.module:Class, a checkpoint (.safetensors, .pt, .bin), a Hugging Face / timm model folder (config.json), a directory to scan, or a zoo model name."),
    model: str | None = typer.Option(None, "--model", "-m",
                                        help="Model class or factory in a .py file, e.g. 'resnet(depth=18)'."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i",
                                                    help="Example input shape, e.g. 1,3,224,224 (repeat for several inputs)."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Trace again, and do not store the result."),
    as_json: bool = typer.Option(False, "--json", help="Print the full record as JSON."),
    graph: bool = typer.Option(False, "--graph", help="Include the canonical graph (implies --json)."),
) -> None:
    """Trace a model into its canonical architecture graph and summarise it (cached)."""
    from narcli.scan.scanner import ScanOptions

    check_timeout(timeout)
    from narcli.scan.scanner import module_target
    from narcli.search.targets import looks_like_a_name

    as_json = as_json or graph
    options = ScanOptions(model=model, input_shapes=input_shape, input_dtypes=input_dtype,
                          timeout=timeout, use_cache=not no_cache)
    found = run(module_target, target, options)  # refuses an empty or unusable target first
    path = Path(target)
    if found is not None:  # pkg.module:Class
        path, options = found
    elif not path.exists() and looks_like_a_name(target):
        _scan_zoo_name(target, as_json, graph)
        return
    from narcli.trace.checkpoint import is_checkpoint_path

    if is_checkpoint_path(path):
        _scan_checkpoint(path, options, as_json)
        return
    from narcli.trace.model_folders import is_model_folder

    if path.is_dir() and not is_model_folder(path):
        _scan_directory(path, options, as_json)
        return
    from narcli.scan.scanner import scan_file

    from narcli.search.predictions import performance_rows, summary_json, summary_line

    records, graphs = run(scan_file, path, options, want_graphs=graph)
    performance = [run(performance_rows, r) for r in records]  # a damaged bench.db: one line
    if as_json:
        models = []
        for i, record in enumerate(records):
            item = {**record.to_json(), "performance": summary_json(performance[i])}
            if graph and i < len(graphs) and graphs[i] is not None:
                item["graph"] = graphs[i].to_dict()
            models.append(item)
        print(json.dumps({"path": str(path), "models": models}, indent=2))
        return
    from narcli.cli.render_scan import print_records

    print_records(stdout(), records, [summary_line(rows) for rows in performance])


def _scan_checkpoint(path: Path, options: Any, as_json: bool) -> None:
    """`nar scan x.safetensors`: no code to trace; name the zoo architecture the tensors belong to."""
    if options.model or options.input_shapes:
        fail(f"{path}: --model and --input-shape apply to .py files only", 2)
    from narcli.search.identify import identify_checkpoint

    found = run(identify_checkpoint, path, 5, open_zoo())
    if as_json:
        print(json.dumps(found.to_json(), indent=2))
        return
    from narcli.cli.render_scan import print_identification

    print_identification(stdout(), found)


def _scan_zoo_name(name: str, as_json: bool, graph: bool) -> None:
    """`nar scan resnet50`: a zoo model needs no tracing; show its stored record."""
    zoo = open_zoo()
    model = run(zoo.resolve, name)
    record = model.to_record()
    if as_json:
        item = record.to_json()
        if graph:
            item["graph"] = run(zoo.graph, model).to_dict()
        print(json.dumps({"path": name, "models": [item]}, indent=2))
        return
    from narcli.cli.render_scan import print_records

    print_records(stdout(), [record])


def _scan_directory(path: Path, options: Any, as_json: bool) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from narcli.scan.scanner import scan_directory

    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeRemainingColumn(), transient=True,
                  console=stderr_console()) as progress:
        task = progress.add_task("scanning", total=None)

        def on_file(current: Path, done: int, total: int) -> None:
            progress.update(task, total=total, completed=done, description=f"scanning {current.name}")

        results = run(scan_directory, path, options, on_file=on_file)
    if as_json:
        print(json.dumps({"path": str(path), "files": [
            {"path": str(r.path), "models": [m.to_json() for m in r.records],
             "error": r.error, "skipped": r.skipped} for r in results]}, indent=2))
    else:
        from narcli.cli.render_scan import print_directory

        print_directory(stdout(), results)
    if any(r.error for r in results):
        raise typer.Exit(1)



@cache_app.command("info")
def cache_info(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
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
def cache_list(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Every cached model with its unique name (cache:ID), file, input and size, oldest first."""
    from narcli.scan.cache import Cache, short_id

    records = run(lambda: Cache().records())
    if as_json:
        print(json.dumps([r.to_json() | {"cache_name": f"cache:{short_id(r.id)}"} for r in records], indent=2))
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
