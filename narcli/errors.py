"""User-facing errors: each carries one line that the CLI prints instead of a traceback."""


def shorten(text: object, limit: int = 80) -> str:
    """`text` for an error line: whole when short, else its head and tail around an ellipsis (a
    100,000-character name must not become a 100,000-character error)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit // 2]}…{text[-(limit // 2):]}"


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
