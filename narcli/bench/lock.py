"""One measurement at a time per device on a machine: timings taken while another measurement runs
on the same CPU (or GPU) are contaminated (issue 30: 2,299 ms against 29.7 ms measured alone), and
nothing in the numbers says so. `measuring(device)` holds an exclusive lock for the device while a
`nar bench` or a whole `nar calibrate` runs; a second one is refused at once, with the pid of the
first, instead of storing timings nobody should trust.

The lock is `flock` on `/tmp/nar-<uid>/measure-<device>.lock`. The place is fixed, not taken from
$TMPDIR or NAR_HOME, so every nar this user runs on the machine meets at the same lock whatever its
environment; the folder is private (0700, ours, not a symlink: `fsutil.private_dir`), so no other
user can plant a symlink at the lock's name or hold the lock to block us. Should the folder be
unusable (no /tmp, or someone else made it first), the lock moves to `$NAR_HOME/locks`, private
too. It guards this user's measurements; another user's nar cannot be kept out (nor block us).
The kernel releases it when its holder dies (no stale locks after a kill -9). It is re-entrant
within one process (a calibration measures many models). Where fcntl does not exist (Windows),
nothing is locked.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from narcli.errors import NarError
from narcli.fsutil import UnsafePathError, open_lock_file, private_dir

LOCK_ROOT = Path("/tmp")  # fixed on purpose: see above

_held: dict[str, tuple[int, int]] = {}  # device -> (descriptor, depth) of the locks this process holds


def lock_dir() -> Path:
    """The private folder of this user's measurement locks (created on first use)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    try:
        return private_dir(LOCK_ROOT / f"nar-{uid}")
    except (OSError, UnsafePathError):
        from narcli.scan.cache import nar_home

        home = nar_home()
        home.mkdir(parents=True, exist_ok=True)
        return private_dir(home / "locks")


def lock_path(device: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", device)
    return lock_dir() / f"measure-{name}.lock"


class MeasurementBusy(NarError):
    """Another measurement holds the device."""


@contextlib.contextmanager
def measuring(device: str) -> Iterator[None]:
    """Hold the machine-wide measurement lock of `device` ("cpu", "cuda:0"); MeasurementBusy when
    another process holds it."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    if device in _held:
        fd, depth = _held[device]
        _held[device] = (fd, depth + 1)
        try:
            yield
        finally:
            _held[device] = (fd, _held[device][1] - 1)
        return
    fd = open_lock_file(lock_path(device))  # no symlink followed, nothing truncated before we hold it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise MeasurementBusy(f"another nar is measuring on this machine's {device} (pid {holder}); timings taken "
                              "at the same time disturb each other and neither could be trusted: let it finish, "
                              "then run this again") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    _held[device] = (fd, 1)
    try:
        yield
    finally:
        del _held[device]
        os.close(fd)  # releases the lock
