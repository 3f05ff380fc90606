"""The `nar` Typer app: global options, and every command group registered in `nar --help` order.

Each command parses its arguments and calls one library function. Heavy libraries (torch, onnx,
sqlite-utils) are imported inside the functions that need them, so `nar --help` and cache hits
start fast.
"""

from __future__ import annotations

import typer

from narcli import __version__
from narcli.cli import bench_commands, learn_commands, predict_commands, scan_commands, search_commands, tui_commands, zoo_commands
from narcli.cli.common import state

app = typer.Typer(
    name="nar",
    help="Neural architecture retrieval: trace models into canonical graphs and find their kin.",
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


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
    state["debug"] = debug
    if debug:
        import os

        os.environ["NAR_DEBUG"] = "1"  # children running user code keep their library logging
    else:  # what nar's dependencies warn about is theirs to fix, not a user's to read (issue 31)
        import warnings

        warnings.simplefilter("ignore")


# commands first, then groups: the order `nar --help` lists them in
app.command("scan")(scan_commands.scan)
app.command("motifs")(search_commands.motifs_command)
app.command("similar")(search_commands.similar_command)
app.command("compare")(search_commands.compare_command)
app.command("check")(search_commands.check_command)
app.command("export")(search_commands.export_command)
app.command("predict")(predict_commands.predict_command)
app.command("tui")(tui_commands.tui_command)
app.command("bench")(bench_commands.bench_command)
app.command("calibrate")(bench_commands.calibrate_command)
app.command("plugins")(zoo_commands.plugins_command)
app.add_typer(scan_commands.cache_app, name="cache")
app.add_typer(zoo_commands.zoo_app, name="zoo")
app.add_typer(learn_commands.eval_app, name="eval")
app.add_typer(learn_commands.train_app, name="train")
app.add_typer(search_commands.index_app, name="index")


def _terminated(signum: int, _frame: object) -> None:
    # unwind instead of dying on the spot, so `finally` blocks kill the children running user code
    raise SystemExit(128 + signum)


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, _terminated)
    app()
