"""`nar check`: flag model files whose architecture is (nearly) a known zoo architecture; for
pre-commit. Configured by `[tool.nar]` in the nearest pyproject.toml:

    [tool.nar]
    check-threshold = 0.99            # cosine at or above which a model counts as a known one
    check-paths = ["models/**/*.py"]  # what `nar check` with no paths scans
    check-on-error = "fail"           # a file that cannot be checked fails the hook ("warn": let it through)
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli.errors import NarError, UsageError

DEFAULT_THRESHOLD = 0.99
ON_ERROR = ("fail", "warn")  # what a file that cannot be checked does to the outcome; failing is the default:
# a hook that passes on what it could not read gives a false sense of safety
CONFIG_HELP = ("give model files (`nar check models/net.py`), or set check-paths in pyproject.toml: "
               "[tool.nar] check-paths = [\"models/**/*.py\"]")


@dataclass
class Checked:
    path: str
    name: str = ""
    nearest: str = ""  # the nearest zoo model
    family: str = ""
    cosine: float | None = None
    flagged: bool = False
    error: str = ""  # the scan's own error, when the file failed to scan
    skipped: str = ""  # why a file was not scanned (e.g. it never mentions torch)

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        if self.cosine is not None:
            data["cosine"] = round(self.cosine, 4)
        return data


@dataclass
class CheckReport:
    threshold: float
    threshold_from: str  # default | pyproject.toml path | --threshold
    on_error: str  # fail | warn
    results: list[Checked] = field(default_factory=list)

    @property
    def flagged(self) -> list[Checked]:
        return [r for r in self.results if r.flagged]

    @property
    def failed(self) -> list[Checked]:
        return [r for r in self.results if r.error]

    @property
    def exit_code(self) -> int:
        return 1 if self.flagged or (self.on_error == "fail" and self.failed) else 0

    @property
    def summary(self) -> str:
        """One line: how many were checked, known, not checkable (and what that did), skipped."""
        checked = [r for r in self.results if not r.error and not r.skipped]
        skipped = [r for r in self.results if r.skipped]
        parts = [f"{len(checked)} checked", f"{len(self.flagged)} known"]
        if self.failed:
            effect = "failing the check; --on-error warn lets them through" if self.on_error == "fail" else \
                "let through (--on-error warn)"
            parts.append(f"{len(self.failed)} could not be checked ({effect})")
        if skipped:
            parts.append(f"{len(skipped)} skipped")
        return f"nar check: {', '.join(parts)}: {'FAILED' if self.exit_code else 'passed'}"

    def to_json(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "threshold_from": self.threshold_from, "on_error": self.on_error, "strict": self.on_error == "fail",
                "exit_code": self.exit_code, "results": [r.to_json() for r in self.results]}


def find_config(start: Path) -> tuple[dict[str, Any], Path | None]:
    """`[tool.nar]` of the nearest pyproject.toml at or above `start`, and that file."""
    import tomllib

    for folder in [start, *start.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text())
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise UsageError(f"{candidate}: not valid TOML ({exc})") from None
            return data.get("tool", {}).get("nar", {}), candidate
    return {}, None


def _threshold(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= float(value) <= 1.0:
        raise UsageError(f"{where}: check-threshold must be a cosine between -1 and 1, not {value!r}")
    return float(value)


def check_models(paths: list[Path], threshold: float | None = None, on_error: str | None = None, options: Any = None,
                 root: Path | None = None) -> CheckReport:
    """Scan each file, find its nearest zoo architecture; flag those at or above the threshold."""
    from narcli.scan.scanner import mentions_torch
    from narcli.search.neighbours import zoo_index
    from narcli.search.query import file_queries
    from narcli.trace.model_folders import enclosing_model_folder, folder_code_refusal
    from narcli.zoo.store import Zoo

    root = root or Path.cwd()
    config, config_path = find_config(root)
    if threshold is not None:
        chosen, origin = _threshold(threshold, "--threshold"), "--threshold"
    elif "check-threshold" in config:
        chosen, origin = _threshold(config["check-threshold"], str(config_path)), str(config_path)
    else:
        chosen, origin = DEFAULT_THRESHOLD, "default"
    if not paths:
        patterns = config.get("check-paths")
        if not patterns:
            raise UsageError(f"no files to check: {CONFIG_HELP}")
        if isinstance(patterns, str):
            patterns = [patterns]
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise UsageError(f"{config_path}: check-paths must be a glob or a list of globs, not {patterns!r}")
        base = config_path.parent if config_path else root
        outside = [p for p in patterns if Path(p).is_absolute() or ".." in Path(p).parts or p.startswith("~")]
        if outside:
            raise UsageError(f"{config_path}: check-paths {outside} reach outside the project; globs are relative "
                             f"to {base} and stay inside it (no absolute paths, no '..')")
        paths = sorted({Path(p) for pattern in patterns for p in glob.glob(str(base / pattern), recursive=True)})
        if not paths:
            raise UsageError(f"{config_path}: check-paths {patterns} matched no files under {base}; "
                             "fix the globs (they are relative to pyproject.toml)")
    if on_error is None:
        on_error = config.get("check-on-error", "fail")
        if on_error not in ON_ERROR:
            raise UsageError(f"{config_path}: check-on-error must be \"fail\" or \"warn\", not {on_error!r}")
    elif on_error not in ON_ERROR:
        raise UsageError(f"--on-error must be fail or warn, not {on_error!r}")
    report = CheckReport(chosen, origin, on_error)
    index = None
    zoo = Zoo()
    for path in paths:
        # pre-commit hands over file lists nobody typed: code inside a model folder is never imported
        owner = enclosing_model_folder(path) if path.suffix.lower() == ".py" else None
        if owner is not None:
            report.results.append(Checked(str(path), skipped=folder_code_refusal(path, owner)))
            continue
        if path.suffix.lower() == ".py" and path.exists() and not mentions_torch(path):
            report.results.append(Checked(str(path), skipped="does not use torch"))
            continue
        try:
            queries = file_queries(path, options)
        except NarError as exc:
            report.results.append(Checked(str(path), error=str(exc)))
            continue
        index = index or zoo_index()
        for query in queries:
            nearest = index.query(query.vector, 1)
            if not nearest:
                report.results.append(Checked(str(path), query.name, error="the zoo index is empty"))
                continue
            graph_hash, cosine = nearest[0]
            models = zoo.models_by_hash([graph_hash]).get(graph_hash, [])
            report.results.append(Checked(str(path), query.name, models[0].id if models else graph_hash,
                                          models[0].family if models else "", cosine, cosine >= chosen))
    return report
