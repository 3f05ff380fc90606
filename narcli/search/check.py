"""`nar check`: flag model files whose architecture is (nearly) a known zoo architecture; for
pre-commit. Configured by `[tool.nar]` in the nearest pyproject.toml:

    [tool.nar]
    check-threshold = 0.99            # cosine at or above which a model counts as a known one
    check-paths = ["models/**/*.py"]  # what `nar check` with no paths scans
    check-on-error = "fail"           # a file that cannot be checked fails the hook ("warn": let it through)

    [tool.nar.files."models/cifar/**"]  # scan settings for the files a glob matches
    input-shape = "1,3,32,32"

A model is known when its graph equals a zoo architecture's (at any input size), when it is one
with only its stem and head adapted, or when its embedding is within the threshold (`known.py`).
"""

from __future__ import annotations

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
    known: Any = None  # a known.Known: which rule made the model a known one
    allowed: bool = False  # known, but [tool.nar.files] says allow-known: reported, not failing
    settings: list[str] = field(default_factory=list)  # the [tool.nar.files] globs that applied
    respelled: bool = False  # not known, and `cosine` is its CIFAR-style stem's, spelled as ImageNet code does

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        if self.cosine is not None:
            data["cosine"] = round(self.cosine, 4)
        data["known"] = self.known.to_json() if self.known is not None else None
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
        allowed = [r for r in self.results if r.allowed]
        if allowed:
            parts.append(f"{len(allowed)} known but allowed")
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
            except RecursionError:
                raise UsageError(f"{candidate}: not readable TOML (nested too deeply)") from None
            except OSError as exc:
                raise UsageError(f"{candidate}: cannot be read ({exc.strerror or exc})") from None
            tool = data.get("tool", {})
            if not isinstance(tool, dict):
                raise UsageError(f"{candidate}: [tool] must be a table, not {type(tool).__name__}")
            config = tool.get("nar", {})
            if not isinstance(config, dict):
                raise UsageError(f"{candidate}: [tool.nar] must be a table of settings, not {type(config).__name__} "
                                 "(e.g. [tool.nar] check-paths = [\"models/**/*.py\"])")
            return config, candidate
    return {}, None


def _threshold(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 <= float(value) <= 1.0:
        raise UsageError(f"{where}: check-threshold must be a cosine between -1 and 1, not {value!r}")
    return float(value)


def check_models(paths: list[Path], threshold: float | None = None, on_error: str | None = None, options: Any = None,
                 root: Path | None = None) -> CheckReport:
    """Scan each file, find its nearest zoo architectures; flag those that are known (`known.py`)."""
    from narcli.scan.walk import mentions_torch, model_targets
    from narcli.scan.targets import CachedName, Checkpoint, Directory, ModelFile, ZooName, cannot, resolve_target
    from narcli.search.neighbours import zoo_index
    from narcli.search.project_paths import check_patterns, expand_globs, file_settings, settings_for
    from narcli.trace.model_folders import enclosing_model_folder, folder_code_refusal
    from narcli.zoo.store import Zoo

    root = root or Path.cwd()
    config, config_path = find_config(root)
    base = config_path.parent if config_path else root
    if threshold is not None:
        chosen, origin = _threshold(threshold, "--threshold"), "--threshold"
    elif "check-threshold" in config:
        chosen, origin = _threshold(config["check-threshold"], str(config_path)), str(config_path)
    else:
        chosen, origin = DEFAULT_THRESHOLD, "default"
    rules = file_settings(config, config_path)
    refused: list[tuple[Path, str]] = []
    named, paths = list(paths), []
    for path in named:  # what a user typed: a zoo or cached name is not a file to check
        target = resolve_target(str(path))
        if isinstance(target, Directory):  # every model file under it, as `nar scan DIR` finds them
            found = model_targets(path)
            refused += [(p, why) for p, why in found if why is not None]
            paths += [p for p, why in found if why is None]
            continue
        paths.append(path)
        if isinstance(target, (ZooName, CachedName)):
            raise cannot("check", target, "it checks model files before they are committed: name .py, .onnx or "
                                          ".pt2 files (`nar similar` answers for a known model)")
        if isinstance(target, Checkpoint):
            raise cannot("check", target, "weights carry no code to check: `nar scan` on it names the zoo model "
                                          "they belong to")
        if isinstance(target, ModelFile) and target.options.model:  # pkg.module:Class
            raise cannot("check", target, f"it checks files as they are committed: name {target.path}")
    if not named:
        if not config.get("check-paths"):
            raise UsageError(f"no files to check: {CONFIG_HELP}")
        patterns = check_patterns(config["check-paths"], config_path)
        expanded = expand_globs(patterns, base)
        paths, refused = expanded.paths, expanded.refused
        if not paths and not refused:
            raise UsageError(f"{config_path}: check-paths {patterns} matched no files under {base}; "
                             "fix the globs (they are relative to pyproject.toml)")
    if on_error is None:
        on_error = config.get("check-on-error", "fail")
        if on_error not in ON_ERROR:
            raise UsageError(f"{config_path}: check-on-error must be \"fail\" or \"warn\", not {on_error!r}")
    elif on_error not in ON_ERROR:
        raise UsageError(f"--on-error must be fail or warn, not {on_error!r}")
    report = CheckReport(chosen, origin, on_error)
    report.results += [Checked(str(path), skipped=why) for path, why in refused]
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
        overrides, used = settings_for(path, base, rules)
        allow_known = overrides.pop("allow_known", False)
        try:
            queries = _file_queries(path, options, overrides)
        except NarError as exc:
            report.results.append(Checked(str(path), error=str(exc), settings=used))
            continue
        except (RecursionError, OverflowError, MemoryError, ValueError) as exc:  # one file, one row
            report.results.append(Checked(str(path), error=f"{type(exc).__name__}: {exc}"[:300], settings=used))
            continue
        index = index or zoo_index()
        for query in queries:
            checked = _verdict(path, query, index, zoo, chosen, used)
            if checked.flagged and allow_known:  # a known design kept on purpose: say so, let it through
                checked.flagged, checked.allowed = False, True
            report.results.append(checked)
    return report


def _file_queries(path: Path, options: Any, overrides: dict[str, Any]) -> list[Any]:
    """The file's queries, scanned with its `[tool.nar.files]` settings over the command line's."""
    from dataclasses import replace

    from narcli.scan.scanner import ScanOptions
    from narcli.search.query import file_queries

    options = replace(options or ScanOptions(), remember=False)  # every model of the file as it is named
    if overrides:
        if "input_dtypes" in overrides and "input_shapes" not in overrides and not options.input_shapes:
            raise UsageError(f"{path}: [tool.nar.files] gives input-dtype without input-shape")
        options = replace(options, **overrides)
    return file_queries(path, options)


CANDIDATES = 10  # nearest zoo architectures compared layer by layer for the `adapted` rule


def _verdict(path: Path, query: Any, index: Any, zoo: Any, threshold: float, used: list[str]) -> Checked:
    from narcli.search.known import Known, adapted_changes
    from narcli.search.similar import nearest_by_spelling

    # as `nar similar` searches: a CIFAR-style stem is also compared in its ImageNet spelling
    spelled = nearest_by_spelling(index, query, CANDIDATES)
    nearest = [(key, cosine) for key, cosine, _ in spelled]
    if not nearest:
        return Checked(str(path), query.name, error="the zoo index is empty", settings=used)
    cosines = dict(nearest)
    models = zoo.models_by_hash([query.graph_hash] + [h for h, _ in nearest])
    known = None
    if models.get(query.graph_hash):
        m = models[query.graph_hash][0]
        known = Known("same-graph", m.id, m.family, cosines.get(query.graph_hash, 1.0), [])
    graph = _query_graph(query) if known is None else None
    if graph is not None:
        adapted = []  # fewest changed layers first, then the source a bare name resolves to, then cosine
        for graph_hash, cosine in nearest:
            group = models.get(graph_hash)
            changed = adapted_changes(graph, zoo.graph(group[0])) if group else None
            if changed is not None:
                adapted.append((len(changed), zoo.rank(group[0].source), -cosine, Known("adapted", group[0].id, group[0].family, cosine, changed)))
        known = min(adapted, key=lambda a: a[:3])[3] if adapted else None
    graph_hash, cosine = nearest[0]
    respelled = spelled[0][2]  # the nearest is nearest to the second spelling
    if known is None and cosine >= threshold and models.get(graph_hash):
        m = models[graph_hash][0]
        known = Known("embedding", m.id, m.family, cosine, [], respelled)
    top = models.get(graph_hash, [])
    shown = known.zoo_id if known else (top[0].id if top else graph_hash)
    family = known.family if known else (top[0].family if top else "")
    score = known.cosine if known else cosine
    return Checked(str(path), query.name, shown, family, score, known is not None, known=known, settings=used,
                   respelled=respelled and known is None)


def _query_graph(query: Any) -> Any:
    """The query's canonical graph: handed over by a scan that stored nothing, else from the cache."""
    if query.extra.get("graph") is not None:
        return query.extra["graph"]
    if not query.graph_key:
        return None
    from narcli.scan.cache import Cache

    return Cache().graph(query.graph_key)
