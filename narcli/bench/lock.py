"""One measurement at a time per device on a machine: timings taken while another measurement runs
on the same CPU (or GPU) are contaminated (issue 30: 2,299 ms against 29.7 ms measured alone), and
nothing in the numbers says so. `measuring(device)` holds an exclusive lock for the device while a
`nar bench` or a whole `nar calibrate` runs; a second one is refused at once, with the pid of the
first, instead of storing timings nobody should trust.

The lock is `flock` on a file in the temporary directory, so it spans every NAR_HOME of the machine
and is released by the kernel when its holder dies (no stale locks after a kill -9). It is
re-entrant within one process (a calibration measures many models). Where fcntl does not exist
(Windows), nothing is locked.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from narcli.errors import NarError

_held: dict[str, tuple[int, int]] = {}  # device -> (descriptor, depth) of the locks this process holds


def lock_path(device: str) -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", device)
    return Path(tempfile.gettempdir()) / f"nar-measure-{uid}-{name}.lock"


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
    path = lock_path(device)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
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
