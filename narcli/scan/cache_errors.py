"""What a damaged or unwritable scan cache becomes: one line with the fix (`guarded` wraps every
public method of `cache.Cache`). Kept apart from the cache's reads and writes."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

from narcli.errors import CacheError, storage_trouble, trouble_phrase
from narcli.scan import sqlite_files

DAMAGE_FIX = "run `nar cache clear` (it deletes the file) and scan again"


def cannot_write(path: Path, trouble: str) -> str:
    fix = "free some space and run it again" if "full" in trouble else \
        "point NAR_HOME at a writable folder to scan new models"
    intact = "the cache is intact; nothing was lost" if "full" in trouble or "read-only" in trouble else \
        "the cache is intact"
    return f"cache {path} cannot be written: {trouble_phrase(trouble)} ({intact}); {fix}"


def guarded(method: Any) -> Any:
    """Turn a damaged database (a bad page, a file that is not SQLite) into one line with the fix,
    and a NAR_HOME that cannot hold the cache into one line naming it."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite_files.BadBlob as exc:
            raise CacheError(f"cache {self.path} is damaged (a stored value cannot be decoded: {exc}); "
                             f"{DAMAGE_FIX}") from None
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise CacheError(f"cache {self.path} is busy ({exc}); try again") from None
            trouble = storage_trouble(exc, self.path.parent)
            if trouble:  # the disk said no: the cache itself is intact, and nothing was written
                raise CacheError(cannot_write(self.path, trouble)) from None
            if "unable to open" in str(exc):
                raise CacheError(f"cache {self.path} cannot be opened ({exc}); check NAR_HOME") from None
            raise CacheError(f"cache {self.path} is damaged ({exc}); {DAMAGE_FIX}") from None
        except sqlite3.DatabaseError as exc:
            trouble = storage_trouble(exc, self.path.parent)
            if trouble:
                raise CacheError(cannot_write(self.path, trouble)) from None
            raise CacheError(f"cache {self.path} is damaged ({exc}); {DAMAGE_FIX}") from None
        except OSError as exc:  # making the folder, say
            trouble = storage_trouble(exc, self.path.parent)
            if trouble:
                raise CacheError(cannot_write(self.path, trouble)) from None
            raise
        except (FileExistsError, NotADirectoryError) as exc:
            raise CacheError(f"cache directory {self.path.parent} cannot be used ({exc.strerror}: "
                           f"{exc.filename}); point NAR_HOME at a directory") from None

    return wrapper
