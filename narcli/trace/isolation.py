"""Run a function in a child process with a timeout, so user code that hangs or crashes can't take nar down.

What the guarantee is (Linux): the user's code runs in a process tree that nar kills whole.

- `run_isolated` starts a *supervisor* child that leads its own session and is a **child
  subreaper** (`PR_SET_CHILD_SUBREAPER`): a process started below it that detaches (double fork,
  `setsid`, a daemon) is re-parented to the supervisor, not to init, so it stays in the tree. The
  supervisor runs no user code; it forks the *worker* that does, waits for it, then kills every
  descendant (`kill_tree`, read from /proc, stopped then killed, round after round until none is
  left), so nothing the code started outlives the call, even when the worker crashes.
- On timeout nar asks the supervisor (SIGTERM) to kill its tree and itself; one that does not
  answer within a second is stopped and its tree killed from nar the same way. When nar exits or is killed,
  the kernel signals the supervisor (`PR_SET_PDEATHSIG`) and a thread watching for a new parent
  backs it up; either way it kills its tree.
- Not covered: code that kills nar's own processes first, or asks something outside the tree to
  start a process (systemd, cron, ssh, a server it talks to). Only a container or a VM stops those.
  Elsewhere than Linux there is no /proc and no subreaper: the process group is killed, which
  misses processes that left it with `setsid`.
"""

from __future__ import annotations

import contextlib
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
_PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS = 200  # a fork bomb is stopped in a few rounds; this only bounds a pathological case


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError, ValueError):
        return False


def _process_table() -> dict[int, list[int]]:
    """parent pid -> pids of its living (not zombie) children, from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every living process below `pid` (children, their children, ...), from /proc."""
    table = _process_table()
    found, todo = [], list(table.get(pid, []))
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(table.get(current, []))
    return found


def kill_tree(pid: int) -> None:
    """Kill every descendant of `pid` (not `pid` itself). `pid` must be a living subreaper (or
    stopped): what a killed process leaves behind is re-parented to it and found in the next round.
    Each round stops the processes first, so none can fork while its siblings are being killed."""
    for _ in range(KILL_ROUNDS):
        found = descendants(pid)
        if not found:
            return
        for how in (signal.SIGSTOP, signal.SIGKILL):
            for child in found:
                try:
                    os.kill(child, how)
                except (ProcessLookupError, PermissionError):
                    pass


def _kill_own_group(*_: Any) -> None:
    kill_tree(os.getpid())
    os.killpg(os.getpgrp(), signal.SIGKILL)


def guard_child(parent: int) -> None:
    """In a freshly started child: lead a new session, keep every process started below it in its
    tree (subreaper), and kill that tree when `parent` goes away."""
    try:  # a forked asyncio loop's wakeup socket is the parent's: a signal here must not wake it
        signal.set_wakeup_fd(-1)
    except ValueError:  # not the main thread
        pass
    try:
        os.setsid()
    except OSError:  # already a session leader
        pass
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM)):
        try:
            signal.signal(signal.SIGTERM, _kill_own_group)
        except ValueError:
            pass
    if os.getppid() != parent:  # the parent died before the guard was set
        _kill_own_group()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.25)
        _kill_own_group()

    threading.Thread(target=watch, name="nar-parent-watch", daemon=True).start()


def kill_group(process: Any, grace: float = 1.0) -> None:
    """Kill a guarded child and everything it started. Call before `join()`: until the child is
    reaped its pid cannot be reused, so the group id is still ours.

    The child is asked first (SIGTERM: its guard kills its tree, then its group) and given `grace`
    seconds, so it never sits stopped: a child stopped here would stay stopped for ever if nar
    were killed in that moment, holding nar's output pipes open. Only a child that does not answer
    (its handler blocked by a long call, or replaced) is stopped, to stay alive as a subreaper while
    its tree is killed from here."""
    if process.is_alive():
        try:
            os.kill(process.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        process.join(grace)
    if process.is_alive():
        try:
            os.kill(process.pid, signal.SIGSTOP)
            kill_tree(process.pid)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass  # no such group: the child had not called setsid yet, or it and its children are gone
    if process.is_alive():
        process.kill()


def _child(conn: Any, fn: Callable[..., Any], args: tuple, parent: int | None,
           world: tuple[dict[str, str], int] | None = None) -> None:
    """The supervisor: guarded, it forks the worker that runs `fn`, waits for it, then kills
    whatever the worker's code started and leaves with the worker's status.

    `parent` None: started by the fork server, which is its parent (and exits when nar does)."""
    if world is not None:
        _take_parents_world(*world)
    guard_child(os.getppid() if parent is None else parent)
    if not hasattr(os, "fork"):
        _work(conn, fn, args)
        return
    supervisor = os.getpid()
    worker = os.fork()
    if worker == 0:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))  # dies with the supervisor
        if os.getppid() != supervisor:  # the supervisor died before that was set
            os._exit(1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            _work(conn, fn, args)
        finally:
            _release_semaphores()
            os._exit(0)
    conn.close()  # the worker holds the only copy now: its death shows as EOF in the parent
    while True:
        try:
            _, status = os.waitpid(worker, 0)
            break
        except InterruptedError:
            continue
    kill_tree(os.getpid())
    if os.WIFSIGNALED(status):  # leave the way the worker did, so the parent can say how it died
        try:
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL has no handler to reset
            pass
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _release_semaphores() -> None:
    """Unlink the named semaphores the model's code created (torch.fx's interpreter makes tqdm
    create one). `os._exit` skips multiprocessing's exit handlers, and a spawned child's leftovers
    make the resource tracker print "leaked semaphore objects" under the one-line error."""
    from multiprocessing import util

    try:
        util._run_finalizers(0)  # exit priority >= 0: what a normal exit would run; no public way
    except Exception:  # never let cleanup hide the result already sent
        pass


def _work(conn: Any, fn: Callable[..., Any], args: tuple) -> None:
    # user code that prints must not corrupt our stdout (e.g. `--json`)
    os.dup2(2, 1)
    if not os.environ.get("NAR_DEBUG"):
        # torch logs the tracebacks of failed attempts it recovers from (fake tensors, fx fallbacks),
        # and libraries warn about their own deprecations (`torch.jit.script` under a newer torch);
        # the error that matters reaches the user as one line, the rest is noise
        logging.disable(logging.CRITICAL)
        import warnings

        warnings.simplefilter("ignore")
    try:
        message: tuple = ("ok", fn(*args))
    except NarError as exc:
        message = ("error", type(exc).__name__, str(exc), "")
    except BaseException as exc:  # report anything the user's code raised, with its traceback
        message = ("error", "NarError", f"{type(exc).__name__}: {exc}", traceback.format_exc())
    # released before the parent hears back: hearing, it kills this tree at once, and on a busy
    # machine that came before the release, so the tracker still printed "leaked semaphore"
    _release_semaphores()
    try:
        conn.send(message)
    except BaseException as exc:  # a result that cannot be sent (pickled)
        conn.send(("error", "NarError", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    finally:
        conn.close()


def process_context(server: bool = False) -> Any:
    """How to start a child: fork where that is safe, else spawn; with `server` (on Linux), through
    a fork server instead, unless this is the process's first child and a fork is safe.

    A fork copies only the calling thread: a lock another thread held at that moment (torch's
    thread pools, a progress display's refresh thread, a test runner's I/O thread) stays locked in
    the child forever, and the child hangs on first use of it. A spawned or forked child imports
    torch and its libraries itself (6 s here, each time). The fork server is one process started
    once, with those imported, no thread of its own and no op run; it forks each child in a few
    milliseconds, so a folder of models, a pre-commit run or the browser pays for the imports
    once. A first child is still forked where that is safe: one `nar scan` needs no second
    interpreter, and its child stays nar's own (measured with nar, as by `bench_scan.py`)."""
    linux = sys.platform.startswith("linux")
    fork_safe = linux and "torch" not in sys.modules and _thread_count() == 1
    if server and linux and (_started_a_child or not fork_safe):
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(SERVER_PRELOAD)  # an import that fails there is done again in the child
        return ctx
    return multiprocessing.get_context("fork" if fork_safe else "spawn")


_started_a_child = False  # by run_isolated, in this process


SERVER_PRELOAD = ["narcli.trace.isolation", "narcli.trace.server_imports"]


class _ParentFd:
    """One of this process's file descriptors, handed to a child of the fork server: that child
    would otherwise write to the server's stderr, the one nar had when the server started."""

    def __init__(self, fd: int):
        self.fd = fd

    def __reduce__(self) -> tuple:
        from multiprocessing import reduction

        return _opened, (reduction.DupFd(self.fd),)  # valid only while a child is being started


def _opened(duplicate: Any) -> int:
    return duplicate.detach()


def _take_parents_world(env: dict[str, str], stderr: int) -> None:
    """In a child of the fork server: the starting process's environment and stderr, as a
    spawned child has them (multiprocessing itself carries the working directory and sys.path)."""
    os.environ.clear()
    os.environ.update(env)
    os.dup2(stderr, 2)
    os.close(stderr)
    # multiprocessing hands each child the write end of the pipe whose closing tells the server
    # that nar is gone; held here, it would keep the server, and so this child, alive after nar
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is not None:
        with contextlib.suppress(OSError):
            os.close(alive)
        server._forkserver_alive_fd = None


def _thread_count() -> int:
    # threads that run Python code, however they were started: execnet's I/O thread under
    # pytest-xdist is started with `_thread`, which threading.active_count() does not see. Native
    # pools without Python code (OpenBLAS, started by importing numpy) survive a fork: they
    # register their own fork handlers.
    return len(sys._current_frames())


def run_isolated(fn: Callable[..., Any], args: tuple, timeout: float, what: str) -> Any:
    """`fn(*args)` in a child process. NarErrors raised there are raised here as they were.

    IsolationError when the child runs past `timeout` seconds or dies without answering.
    """
    global _started_a_child
    ctx = process_context(server=True)
    _started_a_child = True
    receive, send = ctx.Pipe(duplex=False)

    def start(context: Any) -> Any:
        if context.get_start_method() == "forkserver":
            guard: tuple = (None, (dict(os.environ), _ParentFd(2)))
        else:
            guard = (os.getpid(),)
        child = context.Process(target=_child, args=(send, fn, args, *guard), daemon=True)
        child.start()
        return child

    try:
        child = start(ctx)
    except (OSError, EOFError):  # the fork server died (its imports crashed): this child is spawned
        if ctx.get_start_method() != "forkserver":
            raise
        child = start(multiprocessing.get_context("spawn"))
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
