"""What every command shares: consoles, the one-line error, running a library call, option checks."""

from __future__ import annotations

import sys
from typing import Any

import typer

from narcli.errors import NarError

# set by the app's callback before any command runs
state = {"debug": False}


def stdout() -> Any:
    from rich.console import Console

    return Console()


def stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def fail(message: str, code: int) -> None:
    from rich.console import Console
    from rich.markup import escape

    # soft wrap: the error stays one line however narrow the terminal
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]error:[/bold red] {escape(message)}")
    raise typer.Exit(code)


def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a library function, turning errors into one line and an exit code (unless --debug)."""
    try:
        return fn(*args, **kwargs)
    except NarError as exc:
        if state["debug"]:
            trace = getattr(exc, "child_traceback", "")
            if trace:
                print(trace, file=sys.stderr)
            raise
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:
        if state["debug"]:
            raise
        fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", 1)


def open_zoo() -> Any:
    from narcli.zoo.store import Zoo

    return Zoo()


def scan_options(model: str | None, input_shape: list[str] | None, timeout: float, no_cache: bool,
                 input_dtype: list[str] | None = None) -> Any:
    from narcli.scan.scanner import ScanOptions

    if timeout <= 0:
        fail("--timeout must be positive", 2)
    return ScanOptions(model=model, input_shapes=input_shape, input_dtypes=input_dtype, timeout=timeout,
                       use_cache=not no_cache)
