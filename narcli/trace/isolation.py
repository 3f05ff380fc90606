"""Run a function in a child process with a timeout, so user code that hangs or crashes can't take nar down.

The child is the leader of its own session, so everything it starts (a subprocess the user's code
launches, say) shares its process group, and a timeout kills the whole group. The child also dies
with nar: on Linux the kernel sends it SIGTERM when nar exits (`PR_SET_PDEATHSIG`), and on every
platform a thread watches for a new parent process; either way it kills its group.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from narcli import errors
from narcli.errors import IsolationError, NarError


_PR_SET_PDEATHSIG = 1


def _kill_own_group(*_: Any) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)


def guard_child(parent: int) -> None:
    """In a freshly started child: lead a new session, and kill it all when `parent` goes away."""
    try:
        os.setsid()
    except OSError:  # already a session leader
        pass
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
            signal.signal(signal.SIGTERM, _kill_own_group)
        except (OSError, AttributeError, ValueError):
            pass
    if os.getppid() != parent:  # the parent died before the guard was set
        _kill_own_group()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.25)
        _kill_own_group()

    threading.Thread(target=watch, name="nar-parent-watch", daemon=True).start()


def kill_group(process: Any) -> None:
    """Kill a guarded child and everything it started. Call before `join()`: until the child is
    reaped its pid cannot be reused, so the group id is still ours."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass  # no such group: the child had not called setsid yet, or it and its children are gone
    if process.is_alive():
        process.kill()


def _child(conn: Any, fn: Callable[..., Any], args: tuple, parent: int) -> None:
    guard_child(parent)
    # user code that prints must not corrupt our stdout (e.g. `--json`)
    os.dup2(2, 1)
    if not os.environ.get("NAR_DEBUG"):
        # torch logs the tracebacks of failed attempts it recovers from (fake tensors, fx fallbacks);
        # the error that matters reaches the user as one line, the rest is noise
        logging.disable(logging.CRITICAL)
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
    child = ctx.Process(target=_child, args=(send, fn, args, os.getpid()), daemon=True)
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
        kill_group(child)  # the child itself may have exited; what it started may not have
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
