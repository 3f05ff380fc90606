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


class NarError(Exception):
    """An error whose message is fit to show a user as-is."""

    exit_code = 1


class UsageError(NarError):
    """The command line or its arguments are wrong."""

    exit_code = 2


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
