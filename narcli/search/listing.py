"""`nar zoo list`: the zoo's models under the filters given, or one line on why none match."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from narcli.errors import NarError, UsageError


class NothingMatched(NarError):
    """A listing that matched no model (exit 1: the question was fine, the answer is empty)."""

    exit_code = 1


@dataclass
class ZooListing:
    models: list[Any]  # ZooModel, at most `limit`
    total: int  # how many matched
    failed: bool  # a listing of the models that failed to build

    def to_json(self) -> list[dict[str, Any]]:
        return [m.to_json() for m in self.models]


def list_zoo(zoo: Any, pattern: str | None = None, family: str | None = None, source: str | None = None,
             task: str | None = None, coarse: str | None = None, failed: bool = False, limit: int = 0) -> ZooListing:
    """The zoo models that match; `NothingMatched` naming the filters (and a filter value no model
    has, with the close ones) when none does."""
    if limit < 0:
        raise UsageError(f"--limit must be at least 0, not {limit!r}")
    models = zoo.models(pattern, family=family, source=source, task=task, coarse=coarse, failed=failed)
    if not models:
        filters = ", ".join(f"{k}={v}" for k, v in (("pattern", pattern), ("family", family), ("source", source),
                                                     ("task", task), ("coarse", coarse)) if v)
        problem = filter_problem(zoo, family, task, source)
        raise NothingMatched(f"no {'failed ' if failed else ''}zoo models match {filters or 'at all'}"
                             + (f" ({problem})" if problem else ""))
    return ZooListing(models[:limit] if limit > 0 else models, len(models), failed)


def filter_problem(zoo: Any, family: str | None, task: str | None, source: str | None) -> str | None:
    """Why a filter cannot match (a value no zoo model has, with the close values), or None."""
    if source and source.lower() == "cache":
        return None
    known: dict[str, set] = {"family": set(), "task": set(), "source": set()}
    for m in zoo.models():
        known["family"].add(m.family)
        known["task"].add(m.task)
        known["source"].add(m.source)
    for column, value in (("family", family), ("task", task), ("source", source)):
        if value and value.lower() not in {v.lower() for v in known[column] if v}:
            close = difflib.get_close_matches(value.lower(), sorted(v.lower() for v in known[column] if v), n=5, cutoff=0.6)
            extra = ", cache" if column == "source" else ""
            hint = f"; did you mean {', '.join(close)}?" if close else \
                "; see `nar zoo families`" if column == "family" else \
                f"; known: {', '.join(sorted(v for v in known[column] if v))}{extra}"
            return f"no zoo model has {column} {value!r}{hint}"
    return None
