"""Every file and lock nar creates, created safely. Imports nothing from narcli but `errors`, so
every stage may import it; `tests/test_security.py` checks that no other module writes a file.

The rule: nar never writes through a symlink. A file is written to a temporary file created
exclusively (`O_EXCL`: a name planted there makes the create fail, nothing is followed) beside its
destination, then renamed onto the name, so readers never see half a file; a destination that is a
symlink is refused rather than replaced. A lock file is opened with `O_NOFOLLOW`, never truncated
before it is locked, and must be a regular file of ours. Locks live in private directories (mode
0700, owned by us, not a symlink), where no other user can plant a name.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from narcli.errors import NarError, shorten

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePathError(NarError):
    """A destination nar will not write: a symlink, a directory, someone else's folder."""


def _is_symlink(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def check_destination(path: Path | str) -> Path:
    """`path` if nar may create or replace a regular file there; UnsafePathError when it is a symlink
    (nar never writes through one: its target may be any file of yours) or a directory."""
    path = Path(path)
    if _is_symlink(path):
        raise UnsafePathError(f"{shorten(path, 160)} is a symlink; nar never writes through one (its target could "
                              "be any file): remove it or write elsewhere")
    if path.is_dir():
        raise UnsafePathError(f"{shorten(path, 160)} is a directory, not a file nar can write; remove it or write "
                              "elsewhere")
    return path


def _new_file_mode(path: Path) -> int:
    """The mode a plain `open(path, 'w')` would give: the existing file's, else 0o666 less the umask
    (mkstemp makes 0600, which would hide a shared index from its readers)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        pass
    umask = 0o022
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                umask = int(line.split()[1], 8)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_writer(path: Path | str, mode: str = "w", encoding: str | None = "utf-8",
                  newline: str | None = None) -> Iterator[IO[Any]]:
    """A file handle whose contents replace `path` when the block ends without an error (and are
    dropped otherwise). The temporary file `.NAME.XXXX.PID.tmp` is created exclusively in `path`'s
    folder; the PID lets a cleaner tell a dead writer's leftovers from a live one's."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_writer writes a whole file ('w' or 'wb'), not {mode!r}")
    path = check_destination(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=f".{os.getpid()}.tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # not on Windows
            os.fchmod(fd, _new_file_mode(path))
        binary = mode == "wb"
        with os.fdopen(fd, mode, encoding=None if binary else encoding, newline=None if binary else newline) as handle:
            fd = -1  # the handle owns it now
            yield handle
        check_destination(path)  # planted while we wrote: still never replaced
        os.replace(tmp, path)  # renames onto the name; a symlink there would be replaced, not followed
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path | str, text: str, newline: str | None = None) -> Path:
    with atomic_writer(path, "w", newline=newline) as handle:
        handle.write(text)
    return Path(path)


def write_bytes(path: Path | str, data: bytes) -> Path:
    with atomic_writer(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def fresh_file(path: Path | str) -> IO[bytes]:
    """`path` opened for writing as a new file of its own (for a temporary that the caller renames
    later): whatever name is there (a dead writer's leftover, a planted symlink) is removed first,
    never followed, and the create is exclusive."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # removes a symlink itself, not its target
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, _new_file_mode(Path(path)))
    return os.fdopen(fd, "wb")


def _open_no_follow(path: Path, flags: int, what: str, ours: bool = True) -> int:
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError as exc:
        if _is_symlink(path):
            raise UnsafePathError(f"{shorten(path, 160)} is a symlink; nar never opens its {what} through one: "
                                  "remove it") from None
        raise exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (ours and hasattr(os, "getuid") and info.st_uid != os.getuid()):
        os.close(fd)
        raise UnsafePathError(f"{shorten(path, 160)} is not a regular file of yours; nar will not use it as its "
                              f"{what}: remove it")
    return fd


def open_lock_file(path: Path | str, create: bool = True) -> int:
    """A descriptor on the lock file `path`, for `flock`: created 0600 when missing (or opened
    read-only, `create=False`), never through a symlink, never truncated, and only a regular file
    (owned by us when we may write it; a reader of a shipped index may open the installer's). The
    caller closes it, which releases the lock."""
    flags = (os.O_RDWR | os.O_CREAT) if create else os.O_RDONLY
    return _open_no_follow(Path(path), flags, "lock", ours=create)


def open_append(path: Path | str) -> int:
    """A descriptor appending to the log `path` (created when missing), never through a symlink;
    os.devnull is the usual "no log"."""
    if str(path) == os.devnull:
        return os.open(os.devnull, os.O_WRONLY | _CLOEXEC)
    return _open_no_follow(Path(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, "log")


def private_dir(path: Path | str) -> Path:
    """`path` as a directory only we can use: created with mode 0700 when missing, and refused
    (UnsafePathError) when it is a symlink, not a directory, someone else's, or open to others
    (another user could have planted names in it)."""
    path = Path(path)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    problem = ("a symlink" if stat.S_ISLNK(info.st_mode) else
               "not a directory" if not stat.S_ISDIR(info.st_mode) else
               f"owned by uid {info.st_uid}" if hasattr(os, "getuid") and info.st_uid != os.getuid() else
               f"open to others (mode {stat.S_IMODE(info.st_mode):o})" if info.st_mode & 0o077 else None)
    if problem:
        raise UnsafePathError(f"{shorten(path, 160)} is {problem}, not a private directory of yours; nar keeps its "
                              "locks only in one (remove it)")
    return path


def database_files(path: Path | str) -> list[Path]:
    """A SQLite database file and the journal files SQLite keeps beside it."""
    path = Path(path)
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def connect_sqlite(path: Path | str, **kwargs: Any) -> Any:
    """`sqlite3.connect` on a database nar writes, refused when the database or its journal files are
    symlinks (SQLite would follow them and give another program's file nar's tables)."""
    import sqlite3

    path = Path(path)
    for name in database_files(path):
        if _is_symlink(name):
            raise UnsafePathError(f"{shorten(name, 160)} is a symlink; nar never writes a database through one: "
                                  "remove it or point nar elsewhere")
    return sqlite3.connect(path, **kwargs)


def shown_path(path: str | Path) -> str:
    """A stored (absolute) path as a user reads it: relative to the current directory when it lies
    under it, else as stored. Text that is not an absolute path (a zoo source name) is left alone."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        return str(Path(text).relative_to(Path.cwd()))
    except (ValueError, OSError):
        return text
