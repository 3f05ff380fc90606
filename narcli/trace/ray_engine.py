"""The Ray engine: pool tasks spread over a Ray cluster (or a local Ray), under the pool's rules.

Each CPU slot is a Ray actor holding a `pool.Slot`: one long-lived worker process of its own that
runs the tasks (so user code never runs in the driver, nor in the actor), with the per-task
timeout that kills its whole process tree, replacement after a crash and recycling. The driver
keeps two calls queued per actor, hands each outcome to `on_result` as it arrives (so the caller,
the one writer of its database, commits as it goes and an interrupted run resumes), and re-queues
once the tasks of an actor that vanished (a node lost, an actor killed for memory).

Ray is optional (`pip install 'nar[ray]'`) and imported only here, only when asked for.
"""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from narcli.errors import NarError
from narcli.trace.pool import Slot, TaskResult

RAY_HINT = "the Ray engine needs Ray, which is not installed here: pip install 'nar[ray]'"
QUEUED_PER_SLOT = 2  # calls waiting on each actor, so it never idles while the driver answers
RETRIES = 1  # times a task whose actor vanished is tried again before it is recorded as failed
STOP_MARGIN = 120.0  # an actor silent this long past the timeout of every call it holds is killed


CONNECT_TIMEOUT = 5.0  # seconds to reach a cluster's head before saying it cannot be reached


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """NarError unless a TCP connection to `address` (`host:port`, `ray://host:port`) opens within
    `timeout`: Ray itself retries an unreachable head for ever, and holds off SIGTERM meanwhile.
    `auto` and an address without a port are left to Ray (it looks them up itself)."""
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not host or not port.isdigit():
        return
    if not 0 < int(port) < 65536:
        raise NarError(f"--address {address}: port {port} is not a TCP port (1-65535)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        reason = f"no answer in {timeout:g} s" if isinstance(exc, TimeoutError) else \
            (exc.strerror or type(exc).__name__).lower()
        raise NarError(f"cannot reach the Ray cluster at {address} ({reason}); check the "
                       "address (host:port of the head node, e.g. 10.0.0.1:6379) and that `ray start --head` "
                       "runs there") from None


def import_ray() -> Any:
    """The `ray` module, or a NarError that says how to get it."""
    try:
        import ray
    except ImportError:
        raise NarError(RAY_HINT) from None
    return ray


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None) -> Iterator[Any]:
    """Ray, joined at `address` or started here (with `num_cpus`, default: every core) and shut down
    afterwards; a session already open in this process is used as it is."""
    ray = import_ray()
    if address:
        check_reachable(address)
    if ray.is_initialized():
        yield ray
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR",
                               "configure_logging": True}
    if address:
        options["address"] = address
    else:
        options["num_cpus"] = num_cpus or os.cpu_count() or 1
        # the driver's code (this package, its plugins) is on the local workers' path already
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    on_sigterm = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(**options)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = f"the Ray cluster at {address}" if address else "a local Ray"
        raise NarError(f"could not start or join {where}: {str(exc).strip().splitlines()[0] if str(exc) else exc}") \
            from None
    finally:
        # ray.init installs its own SIGTERM handler (sys.exit): put back the caller's, so `kill` stops
        # a build as Ctrl-C does, at once, rather than after Ray's exit path
        if threading.current_thread() is threading.main_thread() and on_sigterm is not None:
            signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield ray
    finally:
        ray.shutdown()


def cluster_cpus(ray: Any) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class SlotActor:
    """A Ray actor around one `Slot` (wrapped by `ray.remote` when used, so Ray stays optional)."""

    def __init__(self, fn: Callable[..., Any], log_path: str, tasks_per_worker: int, max_rss: int):
        import multiprocessing

        if not os.path.isdir(os.path.dirname(os.path.abspath(log_path))):  # another node: no such folder
            from narcli.fsutil import private_dir

            # a folder only this user can write: a predictable name in a shared /tmp could be planted
            folder = private_dir(os.path.join(tempfile.gettempdir(), f"nar-{os.getuid()}"))
            log_path = os.path.join(folder, f"ray-worker-{os.getpid()}.log")
        # the actor process runs Ray's threads: a fork of it could inherit a held lock, so spawn (a
        # fork server would start workers faster, but its workers' parent is not the actor, which
        # the worker's guard takes for its parent having died)
        self.slot = Slot(fn, log_path, tasks_per_worker, max_rss, multiprocessing.get_context("spawn"))

    def run(self, key: str, args: tuple, timeout: float) -> TaskResult:
        return self.slot.run(key, args, timeout)

    def node(self) -> str:
        return socket.gethostname()

    def close(self) -> None:
        self.slot.close()


def run_ray(fn: Callable[..., Any], tasks: Iterable[tuple[str, tuple]], on_result: Callable[[TaskResult], None],
            *, address: str | None = None, jobs: int | None = None, timeout: float = 300.0,
            tasks_per_worker: int = 200, max_rss: int = 8 << 30, log_path: str = os.devnull) -> None:
    """`run_pool`'s contract on Ray: `fn(*args)` for each task, `on_result` called here in completion
    order; `jobs` slots (default: one per CPU of the cluster). KeyboardInterrupt stops the actors
    and propagates; tasks in flight are lost, finished ones were already handed over."""
    if jobs is not None and jobs < 1:
        raise NarError("--jobs must be at least 1")
    queue = deque((key, args, 0) for key, args in tasks)
    if not queue:
        return
    with ray_session(address, jobs) as ray:
        slots = min(jobs or cluster_cpus(ray), len(queue))
        remote = ray.remote(num_cpus=1, max_restarts=0, scheduling_strategy="SPREAD")(SlotActor)

        def new_actor() -> Any:
            return remote.remote(fn, log_path, tasks_per_worker, max_rss)

        actors = [new_actor() for _ in range(slots)]
        held: dict[Any, list] = {actor: [] for actor in actors}  # the calls queued on each actor
        calls: dict[Any, tuple] = {}  # ref -> (actor, key, args, tries, given at)
        try:
            while queue or calls:
                for actor in list(held):
                    while queue and len(held[actor]) < QUEUED_PER_SLOT:
                        key, args, tries = queue.popleft()
                        ref = actor.run.remote(key, args, timeout)
                        held[actor].append(ref)
                        calls[ref] = (actor, key, args, tries, time.monotonic())
                ready, _ = ray.wait(list(calls), num_returns=1, timeout=1.0)
                for ref in ready:
                    actor, key, args, tries, _ = calls.pop(ref)
                    held[actor].remove(ref)
                    try:
                        on_result(ray.get(ref))
                    except ray.exceptions.RayError as exc:  # the actor is gone, and its queued calls with it
                        _replace(ray, actor, held, calls, queue, new_actor, on_result, exc)
                _stop_silent(ray, held, calls, queue, new_actor, on_result, timeout)
        finally:
            for actor in held:
                ray.kill(actor)  # its worker notices its parent gone and kills its own tree


def _replace(ray: Any, actor: Any, held: dict, calls: dict, queue: deque, new_actor: Callable[[], Any],
             on_result: Callable[[TaskResult], None], cause: BaseException | str) -> None:
    """Retire `actor`: its queued calls go back to the queue (or fail, past RETRIES); a new actor
    takes its place."""
    lost = [calls.pop(ref) for ref in held.pop(actor, []) if ref in calls]
    ray.kill(actor)
    reason = cause if isinstance(cause, str) else f"{type(cause).__name__}: {str(cause).strip().splitlines()[0][:200]}"
    for _, key, args, tries, given in lost:
        if tries < RETRIES:
            queue.appendleft((key, args, tries + 1))
        else:
            on_result(TaskResult(key, False, reason="crash (ray actor lost)", message=reason,
                                 seconds=time.monotonic() - given))
    held[new_actor()] = []


def _stop_silent(ray: Any, held: dict, calls: dict, queue: deque, new_actor: Callable[[], Any],
                 on_result: Callable[[TaskResult], None], timeout: float) -> None:
    """An actor whose oldest call is overdue by every timeout it holds plus a margin has stopped
    answering (its node hangs, or the network to it): replace it. The slot kills its own tasks at
    their timeout, so a live actor never gets here."""
    now = time.monotonic()
    for actor, refs in list(held.items()):
        if refs and now - calls[refs[0]][4] > QUEUED_PER_SLOT * timeout + STOP_MARGIN:
            _replace(ray, actor, held, calls, queue, new_actor, on_result, "the actor stopped answering")
