"""The `nar` command line: each command parses its arguments and calls one library function.

Heavy libraries (torch, onnx, sqlite-utils) are imported inside the functions that need them, so
`nar --help` and cache hits start fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from narcli import __version__
from narcli.errors import NarError

app = typer.Typer(
    name="nar",
    help="Neural architecture retrieval: trace models into canonical graphs and find their kin.",
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(help="Inspect or clear the scan cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")

_state = {"debug": False}


def _stdout() -> Any:
    from rich.console import Console

    return Console()


def _fail(message: str, code: int) -> None:
    from rich.console import Console
    from rich.markup import escape

    # soft wrap: the error stays one line however narrow the terminal
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]error:[/bold red] {escape(message)}")
    raise typer.Exit(code)


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a library function, turning errors into one line and an exit code (unless --debug)."""
    try:
        return fn(*args, **kwargs)
    except NarError as exc:
        if _state["debug"]:
            trace = getattr(exc, "child_traceback", "")
            if trace:
                print(trace, file=sys.stderr)
            raise
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:
        if _state["debug"]:
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", 1)


def _version(value: bool) -> None:
    if value:
        print(f"nar {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
) -> None:
    _state["debug"] = debug


@app.command()
def scan(
    path: Path = typer.Argument(..., help="A .py, .onnx or .pt2 file, or a directory to scan."),
    model: Optional[str] = typer.Option(None, "--model", "-m",
                                        help="Model class or factory in a .py file, e.g. 'resnet(depth=18)'."),
    input_shape: Optional[list[str]] = typer.Option(None, "--input-shape", "-i",
                                                    help="Example input shape, e.g. 1,3,224,224 (repeat for several inputs)."),
    input_dtype: Optional[list[str]] = typer.Option(None, "--input-dtype",
                                                    help="Input dtype: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Trace again, and do not store the result."),
    as_json: bool = typer.Option(False, "--json", help="Print the full record as JSON."),
    graph: bool = typer.Option(False, "--graph", help="Include the canonical graph (implies --json)."),
) -> None:
    """Trace a model into its canonical architecture graph and summarise it (cached)."""
    from narcli.scan import ScanOptions

    if timeout <= 0:
        _fail("--timeout must be positive", 2)
    as_json = as_json or graph
    options = ScanOptions(model=model, input_shapes=input_shape, input_dtypes=input_dtype,
                          timeout=timeout, use_cache=not no_cache)
    if path.is_dir():
        _scan_directory(path, options, as_json)
        return
    from narcli.scan import scan_file

    records, graphs = _run(scan_file, path, options, want_graphs=graph)
    if as_json:
        models = []
        for i, record in enumerate(records):
            item = record.to_json()
            if graph and i < len(graphs) and graphs[i] is not None:
                item["graph"] = graphs[i].to_dict()
            models.append(item)
        print(json.dumps({"path": str(path), "models": models}, indent=2))
        return
    from narcli.render import print_records

    print_records(_stdout(), records)


def _scan_directory(path: Path, options: Any, as_json: bool) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from narcli.scan import scan_directory

    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeRemainingColumn(), transient=True,
                  console=_stderr_console()) as progress:
        task = progress.add_task("scanning", total=None)

        def on_file(current: Path, done: int, total: int) -> None:
            progress.update(task, total=total, completed=done, description=f"scanning {current.name}")

        results = _run(scan_directory, path, options, on_file=on_file)
    if as_json:
        print(json.dumps({"path": str(path), "files": [
            {"path": str(r.path), "models": [m.to_json() for m in r.records],
             "error": r.error, "skipped": r.skipped} for r in results]}, indent=2))
    else:
        from narcli.render import print_directory

        print_directory(_stdout(), results)
    if any(r.error for r in results):
        raise typer.Exit(1)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


@cache_app.command("info")
def cache_info(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Where the cache is and what it holds."""
    from narcli.cache import Cache

    info = _run(Cache().info)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    from narcli.render import print_cache_info

    print_cache_info(_stdout(), info)


@cache_app.command("clear")
def cache_clear(yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Delete every cached scan and graph."""
    from narcli.cache import Cache

    cache = Cache()
    if not yes and sys.stdin.isatty():
        typer.confirm(f"Delete everything cached in {cache.path}?", abort=True)
    removed = _run(cache.clear)
    print(f"removed {removed['scans']} scans, {removed['models']} models, {removed['graphs']} graphs")


def main() -> None:
    app()
