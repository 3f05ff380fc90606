"""Run a function in a child process with a timeout, so user code that hangs or crashes can't take nar down."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from narcli import errors
from narcli.errors import IsolationError, NarError


def _child(conn: Any, fn: Callable[..., Any], args: tuple) -> None:
    # user code that prints must not corrupt our stdout (e.g. `--json`)
    os.dup2(2, 1)
    try:
        conn.send(("ok", fn(*args)))
    except NarError as exc:
        conn.send(("error", type(exc).__name__, str(exc), ""))
    except BaseException as exc:  # report anything the user's code raised, with its traceback
        conn.send(("error", "NarError", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    finally:
        conn.close()


def _context() -> Any:
    # Forking is fastest, but unsafe once torch has started its thread pools in this process.
    if sys.platform.startswith("linux") and "torch" not in sys.modules:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def run_isolated(fn: Callable[..., Any], args: tuple, timeout: float, what: str) -> Any:
    """`fn(*args)` in a child process. NarErrors raised there are raised here as they were.

    IsolationError when the child runs past `timeout` seconds or dies without answering.
    """
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(timeout):
            raise IsolationError(f"{what} timed out after {timeout:g} s (raise it with --timeout)")
        try:
            message = receive.recv()
        except (EOFError, OSError):
            child.join(5)
            raise IsolationError(f"{what} crashed the Python interpreter ({_death(child.exitcode)})") from None
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receive.close()
    if message[0] == "ok":
        return message[1]
    _, kind, text, trace = message
    error_class = getattr(errors, kind, NarError)
    exc = error_class(text)
    exc.child_traceback = trace  # type: ignore[attr-defined]
    raise exc


def _death(exitcode: int | None) -> str:
    if exitcode is None:
        return "no exit status"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"
