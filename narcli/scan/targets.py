"""What a model named on the command line is: the one place a target string gets its meaning.

Every command and the TUI pass the text they were given to `resolve_target`, then `match` on the
typed result. Resolving reads no model and imports no torch: it only decides which kind of thing the
text names (a zoo name, a cached scan, a model file, a model folder, a checkpoint or a directory).
The stages that answer for a kind (scanning, the zoo, the cache) do the work.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from narcli.errors import UsageError
from narcli.scan.scanner import ScanOptions, check_target_text, looks_like_a_name

CACHE_PREFIX = "cache:"  # `cache:NAME` names a model in the scan cache
ZOO_KEY_PREFIX = "zoo:"  # an index item that is a zoo graph (beside cached models in the user index)


def cache_name(name: str) -> str:
    """The text that names a cached model on the command line (`nar cache list` shows these)."""
    return f"{CACHE_PREFIX}{name}"


def is_cache_name(text: str) -> bool:
    return text.startswith(CACHE_PREFIX)


def zoo_key(graph_hash: str) -> str:
    return f"{ZOO_KEY_PREFIX}{graph_hash}"


def zoo_hash(key: str) -> str | None:
    """The graph hash of an index key made by `zoo_key`, else None."""
    return key[len(ZOO_KEY_PREFIX):] if key.startswith(ZOO_KEY_PREFIX) else None


@dataclass(frozen=True)
class ZooName:
    """A model of the zoo, by name or id (`resnet50`, `timm/resnet50`)."""

    text: str
    what = "a zoo name"


@dataclass(frozen=True)
class CachedName:
    """`cache:NAME`: a model scanned before, by model name, file name, `file:model` or cache id."""

    text: str
    name: str
    what = "a cached scan"


@dataclass(frozen=True)
class _OnDisk:
    """A target that is a path, scanned with the command's options."""

    text: str
    path: Path
    options: ScanOptions = field(default_factory=ScanOptions)


class ModelFile(_OnDisk):
    """A .py, .onnx or .pt2 file (or `pkg.module:Class`, which names a file and a model in it)."""

    what = "a model file"


class ModelFolder(_OnDisk):
    """A Hugging Face or timm model folder: a `config.json` that a library builds the model from."""

    what = "a model folder"


class Checkpoint(_OnDisk):
    """Weights without code (.safetensors, .pt, .bin): they stand for the zoo model they identify."""

    what = "a checkpoint"


class Directory(_OnDisk):
    """A folder of model files: only commands that take many models answer for it."""

    what = "a directory"


Target = ZooName | CachedName | ModelFile | ModelFolder | Checkpoint | Directory


def resolve_target(text: str, options: ScanOptions | None = None) -> Target:
    """The kind of thing `text` names. Unusable text (empty, a NUL byte) and `pkg.module:Class` with
    `--model` as well are usage errors; whether a file exists is for the stage that reads it to say."""
    from narcli.trace.checkpoint import CHECKPOINT_SUFFIXES, is_checkpoint_path
    from narcli.trace.model_folders import is_model_folder
    from narcli.trace.packages import resolve_module_target

    check_target_text(text)
    options = options or ScanOptions()
    if is_cache_name(text):  # a cached model's name, even where a file `cache.py` exists
        name = text[len(CACHE_PREFIX):].strip()
        if not name:
            raise UsageError(f"empty name after {CACHE_PREFIX}")
        _refuse_scan_options(text, options, "a cached scan keeps the inputs it was traced with")
        return CachedName(text, name)
    in_file = file_and_model(text)
    try:  # a package whose module is called `py` (pkg.py:Class) is still that, where the file is not there
        found = resolve_module_target(text) if in_file is None or not in_file[0].exists() else None
    except FileNotFoundError as exc:
        if in_file is None:
            raise UsageError(f"{text}: {exc}") from None
        found = None
    found = found or in_file  # pkg.module:Class, or path/to/file.py:Class as `nar scan` and the browser show it
    if found is not None:
        path, spec = found
        if options.model and options.model != spec:
            raise UsageError(f"{text} names the model already; drop --model {options.model!r}")
        return ModelFile(text, path, replace(options, model=spec))
    path = Path(os.path.expanduser(text))  # `~nobody/x` stays a path that does not exist
    if is_checkpoint_path(path) or (not path.exists() and path.suffix.lower() in CHECKPOINT_SUFFIXES):
        return Checkpoint(text, path, options)  # a missing one too: its reader says so, not the zoo
    if not path.exists() and looks_like_a_name(text):
        _refuse_scan_options(text, options, "a zoo model is stored traced")
        return ZooName(text)
    if path.is_dir():
        return ModelFolder(text, path, options) if is_model_folder(path) else Directory(text, path, options)
    return ModelFile(text, path, options)


FILE_AND_MODEL = re.compile(r"^(?P<file>.+?\.py):\s*(?P<spec>[A-Za-z_].*)$", re.S | re.I)


def file_and_model(text: str) -> tuple[Path, str] | None:
    """`path/to/file.py:Class(args)` -> (the file, `Class(args)`): the name `nar scan` and `nar tui`
    show a model by. None when `text` is not of that form or is itself an existing path."""
    match = FILE_AND_MODEL.match(text.strip())
    if match is None or Path(os.path.expanduser(text)).exists():
        return None
    return Path(os.path.expanduser(match["file"])), match["spec"].strip()


def _refuse_scan_options(text: str, options: ScanOptions, why: str) -> None:
    if options.model or options.input_shapes or options.input_dtypes:
        given = "--model" if options.model else "--input-shape" if options.input_shapes else "--input-dtype"
        raise UsageError(f"{text}: {given} applies to model files only ({why})")


def cannot(command: str, target: Target, instead: str) -> UsageError:
    """The one-line refusal of a command for a kind of target it does not answer for (exit 2)."""
    return UsageError(f"nar {command} does not take {target.what} ({target.text}); {instead}")


@dataclass(frozen=True)
class CachedCandidate:
    """One model a `cache:NAME` may mean: a scanned record, or an embedding kept for one."""

    model_id: str
    name: str
    path: str  # absolute
    graph_key: str
    inputs: tuple = ()

    def names(self) -> tuple[str, ...]:
        file = Path(self.path).name
        return (self.name, file, f"{file}:{self.name}", self.path, f"{self.path}:{self.name}")


def cached_candidates(cache: Any) -> list[CachedCandidate]:
    """Every cached model with a stored graph, as `cache:NAME` looks them up."""
    return [CachedCandidate(r.id, r.name, str(Path(r.source).resolve()), r.graph_key, tuple(r.inputs))
            for r in cache.records() if r.graph_key]


def find_cached(name: str, candidates: list[CachedCandidate]) -> CachedCandidate:
    """The one candidate `name` (the text after `cache:`) means: by model name, file name, `file:model`
    or path, exactly (case-sensitive, then not); then by the unique name `nar cache list` shows (a
    model id prefix); then by graph key prefix. None found or several: a usage error that says why."""
    import difflib

    from narcli.scan.cache import short_id

    text = name.strip()
    wanted = str(Path(os.path.expanduser(text)).resolve()) if text.startswith(("/", "~", ".")) else text
    found = [c for c in candidates if wanted in c.names() or text in c.names()]
    found = found or [c for c in candidates if text.lower() in (n.lower() for n in c.names())]
    found = found or [c for c in candidates if short_id(c.model_id) == text.lower() or c.model_id.startswith(text.lower())]
    found = found or [c for c in candidates if c.graph_key.startswith(text.lower())]
    if not found:
        known = sorted({n.lower() for c in candidates for n in c.names()[:2]})
        close = difflib.get_close_matches(text.lower(), known, n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(cache_name(c) for c in close)}?" if close else \
            "; `nar scan FILE` or `nar similar FILE` caches a model first"
        raise UsageError(f"no cached model {name!r}{hint}")
    if len(found) > 1:
        from narcli.trace.inputs import InputSpec

        def described(c: CachedCandidate) -> str:
            inputs = ", ".join(str(InputSpec.from_json(i)) for i in c.inputs) if c.inputs else "?"
            return f"{cache_name(short_id(c.model_id))} ({c.path}:{c.name}, input {inputs})"

        shown = "; ".join(described(c) for c in found[:8])
        raise UsageError(f"{cache_name(name)} is ambiguous: {shown} (`nar cache list` shows every cached model)")
    return found[0]


def find_cached_record(name: str, cache: Any) -> Any:
    """The cached ModelRecord `cache:NAME` means (see `find_cached`)."""
    chosen = find_cached(name, cached_candidates(cache))
    record = cache.record(chosen.model_id)
    if record is None:  # removed by another process since it was listed
        raise UsageError(f"{cache_name(name)} is no longer in the cache (`nar cache list` shows what is)")
    return record
