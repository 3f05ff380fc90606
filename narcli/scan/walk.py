"""A directory scanned: the model files and folders under it (what `nar scan DIR` and `nar check DIR`
visit, what they skip and why), each scanned on its own so one bad file is one failed row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from narcli.errors import CacheError, LoadError, NarError, NoModelError, shorten
from narcli.scan.cache import Cache, ModelRecord
from narcli.scan.scanner import KINDS, MAX_BYTES, ScanOptions, scan_file

SKIPPED_DIRS = {".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", "site-packages",
                ".tox", ".mypy_cache", ".pytest_cache", "build", "dist"}


@dataclass
class FileResult:
    """The outcome for one file: its records, or why it has none."""

    path: Path
    records: list[ModelRecord] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None


# -- work done in the child process (imports torch) -----------------------------------------------
def model_targets(root: Path) -> list[tuple[Path, str | None]]:
    """What a directory scan visits under `root`, in path order: model files, and model folders
    (a `config.json` of transformers or timm), each with None, or with why it is skipped.

    Environments, caches and hidden folders are not entered. A `.py` file inside a model folder is
    never imported (`enclosing_model_folder`, the check every walk shares): the folder is scanned
    from its config, which refuses custom code; its ONNX and `.pt2` files, data only, are scanned.
    """
    from narcli.trace.model_folders import enclosing_model_folder, folder_code_refusal, holds_model_config

    root = Path(root)
    real_root = root.resolve()
    found: list[tuple[Path, str | None]] = []

    def visit(folder: Path, owner: Path | None) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        if owner is None and holds_model_config(folder):
            owner = folder
            found.append((folder, None))
        for path in entries:
            if path.is_symlink() and path.is_dir():
                continue  # a link can loop, or lead out of the tree the user named
            if path.is_dir():
                if path.name not in SKIPPED_DIRS and not path.name.startswith("."):
                    visit(path, owner)
            elif path.is_file() and path.suffix.lower() in KINDS:
                skip = folder_code_refusal(path, owner) if owner is not None and path.suffix.lower() == ".py" else None
                target = path.resolve() if path.is_symlink() else None
                if target is not None and real_root not in target.parents:  # a file link out of the tree
                    skip = f"a link to {target}, outside {root}; not read (name it to scan it)"
                found.append((path, skip))

    visit(root, enclosing_model_folder(root))  # a folder inside a model folder is part of it
    return found


def model_files(root: Path) -> list[Path]:
    """Model files and folders a directory scan would trace (nothing skipped)."""
    return [path for path, skip in model_targets(root) if skip is None]


def mentions_torch(path: Path) -> bool:
    try:
        if path.stat().st_size > MAX_BYTES["py"]:
            return True  # not read here: scanning it says why it is refused
        text = path.read_text(errors="replace")
    except OSError:
        return True
    return "torch" in text or "nn.Module" in text


def scan_directory(root: Path, options: ScanOptions | None = None, cache: Cache | None = None,
                   on_file: Callable[[Path, int, int], None] | None = None) -> list[FileResult]:
    """Scan every model file under `root`; one file's failure is recorded, not raised."""
    options = options or ScanOptions()
    files = model_targets(root)
    if not files:
        raise LoadError(f"{root}: no model files under it (.py, .onnx, .pt2), no model config "
                        f"(config.json) and no checkpoint (.safetensors, .pt, .bin)")
    results = []
    for i, (path, skip) in enumerate(files):
        if on_file:
            on_file(path, i, len(files))
        if skip is not None:
            results.append(FileResult(path, skipped=skip))
            continue
        if path.suffix == ".py" and not mentions_torch(path):
            results.append(FileResult(path, skipped="does not use torch"))
            continue
        try:
            records, _ = scan_file(path, replace(options, remember=False), cache)  # every model, as named
            results.append(FileResult(path, records))
        except NoModelError:
            results.append(FileResult(path, skipped="no models"))
        except CacheError:
            raise  # every other file would fail the same way
        except NarError as exc:
            results.append(FileResult(path, error=str(exc)))
        except Exception as exc:  # noqa: BLE001 - RecursionError, OverflowError, MemoryError, a reader's bug:
            # one bad file is one failed row, never a failed run
            text = " ".join(str(exc).split())
            results.append(FileResult(path, error=f"{path}: could not be scanned ({type(exc).__name__}"
                                                  f"{': ' + shorten(text, 200) if text else ''})"))
    if on_file:
        on_file(root, len(files), len(files))
    return results
