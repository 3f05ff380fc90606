"""Files a project's `[tool.nar]` names: `check-paths` globs expanded without leaving the project,
and per-path scan settings (`[tool.nar.files."GLOB"]`).

A glob is matched against paths relative to the folder of pyproject.toml. The walk follows
symbolic links to folders (a project may link its own code around) but resolves every folder and
file it reaches: anything that lands outside the project is refused, never imported, and a folder
reached twice (a symlink loop, or two links to one place) is walked once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli.errors import UsageError, shorten

MAGIC = re.compile(r"[*?\[]")
# keys of a [tool.nar.files."GLOB"] table, and the scan option each one sets
FILE_SETTINGS = {"input-shape": "input_shapes", "input-dtype": "input_dtypes", "model": "model", "timeout": "timeout",
                 "allow-known": "allow_known"}  # the last is nar check's, not the scan's


@dataclass
class Expanded:
    paths: list[Path] = field(default_factory=list)
    refused: list[tuple[Path, str]] = field(default_factory=list)  # (path as reached, why it is not used)


def _segment_regex(segment: str) -> str:
    """One path segment of a glob as a regex: `*` and `?` never cross `/`, `[...]` is a class."""
    out, i = [], 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            start = i + 1 + (segment[i + 1:i + 2] == "!")
            end = segment.find("]", start + 1)  # a `]` right after `[` or `[!` is a member
            if end < 0:
                out.append(re.escape(c))
            else:
                body = segment[start:end].replace("\\", "\\\\")
                out.append(("[^" if start > i + 1 else "[") + body + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """`models/**/*.py` as a regex over `/`-separated relative paths; `**` is any number of folders
    (none included), and wildcards do not match names that start with a dot (as `glob` does)."""
    parts = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
    regex = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex += "(?:[^/.][^/]*(?:/|$))*" if last else "(?:[^/.][^/]*/)*"
            continue
        hidden = "" if part.startswith(".") or not MAGIC.search(part) else "(?!\\.)"
        regex += hidden + _segment_regex(part) + ("" if last else "/")
    return re.compile(regex + r"\Z")


def _literal_prefix(pattern: str) -> list[str]:
    parts = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
    prefix = []
    for part in parts[:-1]:
        if MAGIC.search(part) or part == "**":
            break
        prefix.append(part)
    return prefix


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def expand_globs(patterns: list[str], base: Path) -> Expanded:
    """Every file under `base` that one of `patterns` matches, each real file once, in name order."""
    root = base.resolve()
    found: dict[Path, Path] = {}  # real path -> path as reached
    refused: dict[Path, str] = {}
    for pattern in patterns:
        regex = glob_regex(pattern)
        start = base.joinpath(*_literal_prefix(pattern))
        if not start.is_dir():
            continue
        seen: set[tuple[int, int]] = set()
        # wildcards never match a dot-name, so hidden folders (.git, .venv) hold nothing to find
        dotted = any(part.startswith(".") for part in pattern.split("/") if part not in (".", ".."))
        for folder, dirs, files in os.walk(start, followlinks=True, onerror=lambda exc: None):
            here = Path(folder)
            real = here.resolve()
            if not _inside(real, root):
                refused[here] = f"a link to {real}, outside the project; nothing under it is checked"
                dirs[:] = []
                continue
            stat = real.stat()
            if (stat.st_dev, stat.st_ino) in seen:  # a loop, or a second way into one folder
                dirs[:] = []
                continue
            seen.add((stat.st_dev, stat.st_ino))
            dirs[:] = sorted(d for d in dirs if dotted or not d.startswith("."))
            for name in sorted(files):
                path = here / name
                if not regex.match(path.relative_to(base).as_posix()):
                    continue
                target = path.resolve()
                if not _inside(target, root):
                    refused[path] = f"a link to {target}, outside the project; not imported"
                elif target.is_file():
                    found.setdefault(target, path)
    return Expanded(sorted(found.values()), sorted(refused.items()))


def check_patterns(value: Any, config_path: Path | None, key: str = "check-paths") -> list[str]:
    """A glob or a list of globs from pyproject.toml, none reaching outside the project."""
    patterns = [value] if isinstance(value, str) else value
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
        raise UsageError(f"{config_path}: {key} must be a glob or a list of globs, not {shorten(repr(value))}")
    outside = [p for p in patterns if Path(p).is_absolute() or ".." in Path(p).parts or p.startswith("~")]
    if outside:
        raise UsageError(f"{config_path}: {key} {outside} reach outside the project; globs are relative "
                         f"to the folder of pyproject.toml and stay inside it (no absolute paths, no '..')")
    return patterns


def file_settings(config: dict[str, Any], config_path: Path | None) -> list[tuple[re.Pattern[str], str, dict[str, Any]]]:
    """`[tool.nar.files."GLOB"]` tables: (glob regex, glob, scan option overrides), in file order."""
    tables = config.get("files", {})
    if not isinstance(tables, dict):
        raise UsageError(f"{config_path}: [tool.nar.files] must be a table of globs, each a table of settings "
                         f"such as input-shape = \"1,3,32,32\"; not {shorten(repr(tables))}")
    out = []
    for pattern, settings in tables.items():
        check_patterns(pattern, config_path, f"[tool.nar.files] glob {pattern!r}:")
        if not isinstance(settings, dict) or not settings:
            raise UsageError(f"{config_path}: [tool.nar.files.{pattern!r}] must be a table of settings "
                             f"({', '.join(FILE_SETTINGS)}), not {shorten(repr(settings))}")
        unknown = sorted(set(settings) - set(FILE_SETTINGS))
        if unknown:
            raise UsageError(f"{config_path}: [tool.nar.files.{pattern!r}] has unknown settings {unknown}; "
                             f"known: {', '.join(FILE_SETTINGS)}")
        overrides: dict[str, Any] = {}
        for key, value in settings.items():
            option = FILE_SETTINGS[key]
            if key in ("input-shape", "input-dtype"):
                values = [value] if isinstance(value, str) else value
                if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
                    raise UsageError(f"{config_path}: [tool.nar.files.{pattern!r}] {key} must be a string or "
                                     f"a list of strings, not {shorten(repr(value))}")
                overrides[option] = values
            elif key == "allow-known":
                if not isinstance(value, bool):
                    raise UsageError(f"{config_path}: [tool.nar.files.{pattern!r}] allow-known must be true or false")
                overrides[option] = value
            elif key == "model":
                if not isinstance(value, str) or not value.strip():
                    raise UsageError(f"{config_path}: [tool.nar.files.{pattern!r}] model must be a non-empty string")
                overrides[option] = value
            else:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
                    raise UsageError(f"{config_path}: [tool.nar.files.{pattern!r}] timeout must be seconds "
                                     f"between 0 and 86400, not {shorten(repr(value))}")
                overrides[option] = float(value)
        out.append((glob_regex(pattern), pattern, overrides))
    return out


def settings_for(path: Path, base: Path, rules: list[tuple[re.Pattern[str], str, dict[str, Any]]]) -> tuple[dict[str, Any], list[str]]:
    """The scan option overrides of every rule whose glob matches `path` (later rules win), and those globs."""
    try:
        relative = path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return {}, []
    merged: dict[str, Any] = {}
    used = []
    for regex, pattern, overrides in rules:
        if regex.match(relative):
            merged.update(overrides)
            used.append(pattern)
    return merged, used
