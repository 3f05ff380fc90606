"""Which engine runs a batch of tasks: the local pool (`pool.py`) or Ray (`ray_engine.py`), with the
checks that refuse an engine that cannot run before anything is written."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from typing import Any

from narcli.errors import NarError, UsageError
from narcli.trace.pool import TaskResult, run_pool


def check_engine(engine: str, address: str | None) -> None:
    """Refuse an engine that cannot run here before anything is opened or written."""
    if engine not in ("local", "ray"):
        raise UsageError(f"unknown engine {engine!r}; choose local or ray")
    if address and engine != "ray":
        raise UsageError("--address names a Ray cluster; use it with --engine ray")
    if engine == "ray":
        from narcli.trace.ray_engine import check_reachable, import_ray

        try:
            import_ray()
        except NarError as exc:
            raise UsageError(str(exc)) from None
        if address:
            check_reachable(address)  # a head that cannot be reached: one line now, not Ray's retries for ever


def engine_session(engine: str, address: str | None, jobs: int | None) -> Any:
    """One Ray session around several runs (actors come and go per run); nothing locally."""
    if engine != "ray":
        return contextlib.nullcontext()
    from narcli.trace.ray_engine import ray_session

    return ray_session(address, jobs)


def run_tasks(fn: Callable[..., Any], tasks: Iterable[tuple[str, tuple]], on_result: Callable[[TaskResult], None],
              *, engine: str = "local", address: str | None = None, jobs: int | None = 1, timeout: float = 300.0,
              tasks_per_worker: int = 200, max_rss: int = 8 << 30, log_path: str = os.devnull) -> None:
    """`run_pool` on this machine (`engine="local"`), or the same on Ray (`"ray"`, see ray_engine.py:
    a local Ray, or the cluster at `address`; `jobs` None there means one slot per CPU it has)."""
    check_engine(engine, address)
    if engine == "ray":
        from narcli.trace.ray_engine import run_ray

        run_ray(fn, tasks, on_result, address=address, jobs=jobs, timeout=timeout,
                tasks_per_worker=tasks_per_worker, max_rss=max_rss, log_path=log_path)
        return
    run_pool(fn, tasks, on_result, jobs=jobs or 1, timeout=timeout,
             tasks_per_worker=tasks_per_worker, max_rss=max_rss, log_path=log_path)
