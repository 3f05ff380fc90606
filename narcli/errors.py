"""User-facing errors: each carries one line that the CLI prints instead of a traceback."""


def shorten(text: object, limit: int = 80) -> str:
    """`text` for an error line: whole when short, else its head and tail around an ellipsis (a
    100,000-character name must not become a 100,000-character error)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit // 2]}…{text[-(limit // 2):]}"


# C0 and C1 control characters and DEL, and the Unicode controls that reorder or hide text
# (bidirectional overrides and isolates, zero-width marks): what a terminal would act on rather than show
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]}
_CONTROLS.update({c: f"\\u{c:04x}" for c in [0x061C, 0x200B, 0x200E, 0x200F, *range(0x202A, 0x202F),
                                            *range(0x2066, 0x206A), 0xFEFF]})
_KEEP_NEWLINES = {k: v for k, v in _CONTROLS.items() if k != 0x0A}


def printable(text: object, newlines: bool = False) -> str:
    """`text` safe to put on a terminal: every control character shown as an escape (`\\x1b`), so a
    file name or an op type cannot clear the screen, set the window title or hide itself. With
    `newlines`, line breaks are kept (multi-line text we wrote ourselves)."""
    text = str(text)
    if text.isprintable():  # the usual case, and fast
        return text
    return text.translate(_KEEP_NEWLINES if newlines else _CONTROLS)


def storage_trouble(exc: BaseException, folder: object = None) -> str | None:
    """What stops a write, in words, when `exc` is the file system saying no: "a read-only file
    system", "a full disk", "not writable (permission denied)"; None for anything else (a damaged
    file, a bug). SQLite words it its own way, and some libraries (annoy) drop the errno, so the
    text is read too; `folder`, when given, is checked for a read-only mount."""
    import errno
    import os

    code = getattr(exc, "errno", None)
    text = str(exc).lower()
    if code == errno.EROFS or "read-only file system" in text or "readonly database" in text:
        return "a read-only file system"
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)) or "disk is full" in text or "no space left" in text:
        return "a full disk"
    if code in (errno.EACCES, errno.EPERM) or "permission denied" in text:
        return "not writable (permission denied)"
    if folder is not None and ("unable to open" in text or "readonly" in text):
        try:
            if os.statvfs(str(folder)).f_flag & getattr(os, "ST_RDONLY", 1):
                return "a read-only file system"
        except OSError:
            pass
        if not os.access(str(folder), os.W_OK):
            return "not writable (permission denied)"
    return None


def trouble_phrase(trouble: str) -> str:
    """`storage_trouble`'s words as the end of a sentence about a file: "it is on a full disk", "its
    folder is not writable (permission denied)"."""
    return f"it is on {trouble}" if "full" in trouble or "read-only" in trouble else f"its folder is {trouble}"


class NarError(Exception):
    """An error whose message is fit to show a user as-is."""

    exit_code = 1


class UsageError(NarError):
    """The command line or its arguments are wrong."""

    exit_code = 2


MAX_SEED = 2**32 - 1  # numpy's seeds
MAX_EPOCHS = 100_000  # every training recipe's bound: more is a typo


def check_range(option: str, value: float | None, low: float, high: float | None = None) -> None:
    """A usage error (exit 2) unless `low <= value <= high`: every numeric argument, from the command
    line or from Python, is checked alike before any work starts. None (not given) passes; nan and
    infinities do not."""
    import math

    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value) or value < low or (high is not None and value > high):
        bound = f"between {low:,} and {high:,}" if high is not None else f"at least {low:,}"
        raise UsageError(f"{option} must be {bound}, not {value!r}")


def check_training(seed: int, epochs: int) -> None:
    """The checks every training recipe shares: a seed numpy takes, and a sane number of epochs."""
    check_range("--seed", seed, 0, MAX_SEED)
    check_range("--epochs", epochs, 1, MAX_EPOCHS)


class LoadError(NarError):
    """A model file could not be read, imported or turned into a model."""


class TraceError(NarError):
    """A model was loaded but could not be traced into a graph."""


class IsolationError(NarError):
    """The child process running user code hung, crashed or died."""


class NoModelError(LoadError):
    """A file defines no model (a helper module in a scanned directory, say)."""


class ZooError(NarError):
    """The zoo database is missing, corrupt, busy, or has no such model."""


class CacheError(NarError):
    """The scan cache is damaged, busy, or cannot be created where NAR_HOME points."""


class StoreError(NarError):
    """A store nar keeps under NAR_HOME (measurements, device heads, the user's zoo, ...) is damaged;
    the message names the file and says that `nar cache clear` repairs it."""


def damaged_store(path: object, exc: BaseException | str, what: str = "") -> str:
    """The one line for a damaged store: the file, what is wrong (one line), and the fix."""
    reason = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    reason = " ".join(str(reason).split())[:200]
    return f"{what or 'store'} {path} is damaged ({reason}); run `nar cache clear -y` to repair it"
