"""What every command shares: consoles, the one-line error, running a library call, option checks."""

from __future__ import annotations

import sys
from typing import Any

import typer

from narcli.errors import NarError, printable, shorten, storage_trouble

# set by the app's callback before any command runs
state = {"debug": False}


def safe(text: object) -> str:
    """A string from outside (a file name, an op type, a model name, an error message) for a place
    that reads Rich markup: shown as the text it is, control characters escaped."""
    from rich.markup import escape

    return escape(printable(text))


def console(**options: Any) -> Any:
    """A Rich console that shows any control character that reaches it escaped, as the last line
    of defence behind `safe()`: whatever a renderer missed cannot drive the terminal."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        def render(self, renderable: Any, options: Any = None) -> Any:
            for segment in super().render(renderable, options):
                text = segment.text
                if segment.control is None and not text.isprintable() and text != "\n":
                    segment = Segment(printable(text, newlines=True), segment.style)
                yield segment

    return SafeConsole(**options)


def stdout() -> Any:
    return console()


def stderr_console() -> Any:
    return console(stderr=True)


def fail(message: str, code: int) -> None:
    # soft wrap: the error stays one line however narrow the terminal
    console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]error:[/bold red] {safe(message)}")
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
    except OSError as exc:  # the file system said no: a name too long, a file where a folder should be
        trouble = storage_trouble(exc)
        if state["debug"] or not (exc.strerror or trouble):
            raise
        where = f"{shorten(exc.filename, 120)}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or trouble}", 1)
    except Exception as exc:
        if state["debug"]:
            raise
        fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", 1)


def open_zoo() -> Any:
    from narcli.zoo.store import Zoo

    return run(Zoo)  # a NAR_HOME that is a file, a damaged user zoo: one line, not a traceback


def check_range(option: str, value: float | None, low: float, high: float | None = None) -> None:
    """`errors.check_range` as the command line's one-line usage error."""
    from narcli.errors import check_range as checked

    run(checked, option, value, low, high)



