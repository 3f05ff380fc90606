"""Run many tasks in long-lived worker processes, each task with its own timeout.

A task that hangs or crashes costs only its worker, which is replaced; the others go on. Workers
are recycled after `tasks_per_worker` tasks or when they grow past `max_rss` bytes, so leaks in the
code they run stay bounded.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from narcli.errors import NarError
from narcli.fsutil import open_append
from narcli.trace.isolation import guard_child, kill_group, kill_tree, process_context


@dataclass
class TaskResult:
    key: str
    ok: bool
    value: Any = None
    reason: str = ""  # short and groupable: "timeout", "crash (SIGSEGV)", "trace: RuntimeError"
    message: str = ""  # first line of the error, for the record
    seconds: float = 0.0


def _worker(conn: Any, fn: Callable[..., Any], log_path: str, parent: int) -> None:
    guard_child(parent)  # its own process group, killed with it; dies with the parent
    # library chatter (warnings, prints) goes to the log, not over the parent's progress bar
    try:  # never through a symlink planted at the log's name; then the chatter is lost, not the build
        fd = open_append(log_path)
    except (OSError, NarError):
        fd = open_append(os.devnull)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    faulthandler.enable(file=sys.stderr)  # a segfault's Python stack goes to the log too
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    while True:
        try:
            # forked siblings hold copies of our pipe, so a dead parent shows as a new ppid, not EOF
            if not conn.poll(1.0):
                if os.getppid() != parent:
                    return
                continue
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        key, args = task
        start = time.perf_counter()
        try:
            value = fn(*args)
            reply = (key, True, value, "", "")
        except BaseException as exc:  # anything the task raised is its result, not ours
            stage = getattr(exc, "stage", "")
            reason = f"{stage}: {type(exc).__name__}" if stage else type(exc).__name__
            text = str(exc).strip().splitlines()
            message = f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
            print(f"--- {key}\n{traceback.format_exc()}", file=sys.stderr, flush=True)
            reply = (key, False, None, reason, message)
        kill_tree(os.getpid())  # nothing a task started outlives it, however it detached
        try:
            conn.send(reply + (time.perf_counter() - start,))
        except Exception as exc:  # an unpicklable result
            conn.send((key, False, None, "result", f"{type(exc).__name__}: {exc}"[:300],
                       time.perf_counter() - start))


class _Worker:
    def __init__(self, ctx: Any, fn: Callable[..., Any], log_path: str):
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child_conn, fn, log_path, os.getpid()), daemon=True)
        self.process.start()
        child_conn.close()
        self.key: str | None = None
        self.started = 0.0
        self.done = 0

    def give(self, key: str, args: tuple) -> None:
        self.key, self.started = key, time.perf_counter()
        self.conn.send((key, args))

    def receive(self) -> TaskResult:
        """The outcome of the task given, once its pipe is readable; a dead worker's is a crash
        (and `process` is then None: the worker is finished)."""
        try:
            key, ok, value, reason, message, seconds = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            result = TaskResult(self.key or "", False, reason=_death(self.process.exitcode),
                                message="the worker process died", seconds=time.perf_counter() - self.started)
            self.stop(kill=True)
            self.process = None
            return result
        self.done += 1
        return TaskResult(key, ok, value, reason, message, seconds)

    def time_out(self, timeout: float) -> TaskResult:
        """Kill the worker (and everything below it) over a task past its time; its outcome."""
        seconds = time.perf_counter() - self.started
        self.stop(kill=True)
        self.process = None
        return TaskResult(self.key or "", False, reason="timeout", message=f"took longer than {timeout:g} s",
                          seconds=seconds)

    def spent(self, tasks_per_worker: int, max_rss: int) -> bool:
        """Due for replacement: enough tasks done, or grown too large (leaks stay bounded)."""
        return self.done >= tasks_per_worker or self.rss() > max_rss

    def rss(self) -> int:
        try:
            with open(f"/proc/{self.process.pid}/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError, AttributeError):
            return 0

    def stop(self, kill: bool = False) -> None:
        if self.process is None:
            return
        if kill:
            kill_group(self.process)
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(5)
        kill_group(self.process)  # and anything it left running
        self.process.join(5)
        self.conn.close()


class Slot:
    """One worker process that runs tasks one at a time, synchronously, under the same rules as
    `run_pool` (a timeout that kills its process tree, replacement after a crash, recycling); what
    a Ray actor holds on each CPU it is given (`ray_engine.py`)."""

    def __init__(self, fn: Callable[..., Any], log_path: str = os.devnull, tasks_per_worker: int = 200,
                 max_rss: int = 8 << 30, context: Any = None):
        self.fn, self.log_path = fn, log_path
        self.tasks_per_worker, self.max_rss = tasks_per_worker, max_rss
        self.ctx = context or process_context()
        self.worker: _Worker | None = None

    def run(self, key: str, args: tuple, timeout: float) -> TaskResult:
        if self.worker is None:
            self.worker = _Worker(self.ctx, self.fn, self.log_path)
        worker = self.worker
        worker.give(key, args)
        if worker.conn.poll(timeout):
            result = worker.receive()
            if worker.process is not None and worker.spent(self.tasks_per_worker, self.max_rss):
                worker.stop()
                worker.process = None
        else:
            result = worker.time_out(timeout)
        if worker.process is None:
            self.worker = None
        return result

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"crash ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"crash (signal {-exitcode})"
    return f"crash (exit {exitcode})"


def run_pool(fn: Callable[..., Any], tasks: Iterable[tuple[str, tuple]], on_result: Callable[[TaskResult], None],
             *, jobs: int = 1, timeout: float = 300.0, tasks_per_worker: int = 200,
             max_rss: int = 8 << 30, log_path: str = os.devnull) -> None:
    """Call `fn(*args)` for each `(key, args)` task in `jobs` workers; `on_result` sees every outcome.

    `on_result` runs in this process, in completion order. Tasks are taken from `tasks` only when a
    worker is free, so a generator may decide its next task from the results so far (a time
    budget, a retry). A KeyboardInterrupt stops the workers and propagates; tasks in flight are lost.
    """
    if jobs < 1:
        raise NarError("--jobs must be at least 1")
    ctx = process_context()
    pending = iter(tasks)
    more = True
    idle: list[_Worker] = []
    busy: dict[Any, _Worker] = {}
    alive: list[_Worker] = []
    try:
        while more or busy:
            while more and len(busy) < jobs:
                task = next(pending, None)
                if task is None:
                    more = False
                    break
                worker = idle.pop() if idle else _Worker(ctx, fn, log_path)
                if worker not in alive:
                    alive.append(worker)
                key, args = task
                worker.give(key, args)
                busy[worker.conn] = worker
            if not busy:
                continue
            now = time.perf_counter()
            next_deadline = min(w.started + timeout for w in busy.values())
            ready = wait(list(busy), timeout=max(0.0, min(next_deadline - now, 1.0)))
            for conn in ready:
                worker = busy.pop(conn)
                result = worker.receive()
                if worker.process is None or worker.spent(tasks_per_worker, max_rss):
                    alive.remove(worker)
                    worker.stop()  # a crashed worker was stopped already (process None)
                else:
                    idle.append(worker)
                on_result(result)
            now = time.perf_counter()
            for conn, worker in list(busy.items()):
                if now - worker.started > timeout:
                    del busy[conn]
                    alive.remove(worker)
                    on_result(worker.time_out(timeout))
    finally:
        for worker in alive:
            worker.stop(kill=bool(busy))

