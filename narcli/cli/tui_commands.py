"""`nar tui`: the interactive browser (textual is imported only here)."""

from __future__ import annotations

import typer

from narcli.cli.common import run


def tui_command(
    target: str | None = typer.Argument(None, help="A zoo name or cached model to open first."),
) -> None:
    """Browse the zoo and your scans: search, structure, similar models, predictions, compare, export."""
    from narcli.tui.app import run as run_app

    run(run_app, target)
