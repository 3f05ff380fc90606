"""Model folders: a Hugging Face transformers or timm `config.json` (with or without weights), built
from the config on the meta device. No weights are read and no code from the folder runs: a config
that needs its own modeling code (`auto_map`, `trust_remote_code`) is refused.

`folder_kind` reads the config with the standard library (the parent uses it to route and to say
what to install); `build_folder_model` runs in the tracing child and imports the library.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from narcli.errors import LoadError

CONFIG = "config.json"
LIBRARIES = {"transformers": "transformers", "timm": "timm"}


def is_model_folder(path: Path) -> bool:
    return path.is_dir() and (path / CONFIG).is_file()


MODEL_CONFIG_KEYS = ("model_type", "architectures", "architecture", "auto_map")
MAX_CONFIG_BYTES = 16 << 20  # real configs are kilobytes; a bigger one is not read to find out


def holds_model_config(folder: Path) -> bool:
    """Whether `folder` is a model folder as far as running code goes: its config.json is a
    transformers or timm config, asks for custom code (`auto_map`), or cannot be read (the safe
    guess). A project's own training config (none of those keys) does not make a model folder."""
    config = folder / CONFIG
    try:
        if not config.is_file():
            return False
        if config.stat().st_size > MAX_CONFIG_BYTES:
            return True
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return True
    return not isinstance(data, dict) or any(key in data for key in MODEL_CONFIG_KEYS)


def enclosing_model_folder(path: Path, root: Path | None = None) -> Path | None:
    """The model folder whose code `path` is part of: the nearest folder holding a model config
    among `path`'s parents (up to and including `root` when given, else up to the filesystem root).

    This is the one check every walk (a scanned directory, `nar check`'s file lists and globs)
    applies before importing a `.py` file: code inside a model folder is never imported unless the
    user names that file on the command line."""
    path = Path(path).absolute()
    stop = Path(root).absolute() if root is not None else None
    for folder in path.parents:
        if holds_model_config(folder):
            return folder
        if stop is not None and folder == stop:
            break
    return None


def folder_code_refusal(path: Path, folder: Path) -> str:
    """Why a walk skips `path`: one line for the scan's list of skipped files."""
    return (f"part of the model folder {folder} (nar never imports a model folder's code; name the file "
            "itself to scan it)")


def read_config(folder: Path) -> dict[str, Any]:
    path = folder / CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LoadError(f"{path}: not a readable JSON config ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise LoadError(f"{path}: not a model config (a JSON object is expected)")
    return data


def folder_kind(folder: Path) -> str:
    """"transformers" or "timm", from the config's keys; LoadError when it is neither, or when the
    library it needs is not installed (one line naming what to install)."""
    import importlib.util

    config = read_config(folder)
    if isinstance(config.get("architecture"), str):
        kind = "timm"
    elif isinstance(config.get("model_type"), str) or isinstance(config.get("architectures"), list):
        kind = "transformers"
    else:
        raise LoadError(f"{folder / CONFIG}: neither a transformers config (model_type) nor a timm config "
                        "(architecture)")
    if kind == "transformers" and config.get("auto_map"):
        raise LoadError(f"{folder}: this model needs its own modeling code (auto_map in config.json); nar does "
                        "not run code from model folders: scan its .py file instead")
    if importlib.util.find_spec(LIBRARIES[kind]) is None:
        raise LoadError(f"{folder}: a {kind} model folder; building it needs {kind} "
                        f"(pip install {LIBRARIES[kind]})")
    return kind


def library_version(kind: str) -> str:
    """The installed version of the library that builds a folder of this kind (a cache key part)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(LIBRARIES[kind])
    except PackageNotFoundError:
        return "none"


def build_folder_model(folder: Path) -> tuple[str, Any, list[Any], list[str]]:
    """(model name, module to trace, meta inputs, input names) for a model folder (runs in the child)."""
    from narcli.trace.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
    kind = folder_kind(folder)
    return _build_timm(folder) if kind == "timm" else _build_transformers(folder)


def _build_transformers(folder: Path) -> tuple[str, Any, list[Any], list[str]]:
    import warnings

    import transformers
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from narcli.trace.transformers_build import build_transformers

    raw = read_config(folder)
    model_type = raw.get("model_type")
    if model_type is not None and model_type not in CONFIG_MAPPING_NAMES:
        raise LoadError(f"{folder / CONFIG}: unknown model_type {model_type!r} for transformers "
                        f"{transformers.__version__} (a newer transformers may know it)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False, local_files_only=True)
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise LoadError(f"{folder / CONFIG}: transformers cannot read it: {str(exc).splitlines()[0][:200]}") from None
    model_class = _model_class(raw, config)
    module, tensors, names, _ = build_transformers(model_class, config)
    return model_class.__name__, module, tensors, names


def _model_class(raw: dict[str, Any], config: Any) -> Any:
    """The class `architectures` names, else the base model of the config's type."""
    import transformers
    from transformers import AutoModel

    for name in raw.get("architectures") or []:
        found = getattr(transformers, str(name), None) if str(name).isidentifier() else None
        if isinstance(found, type):
            return found
    mapping = getattr(AutoModel, "_model_mapping", None)
    try:
        return mapping[type(config)]
    except (KeyError, TypeError):
        raise LoadError(f"transformers has no model class for model_type {getattr(config, 'model_type', '?')!r}"
                        ) from None


def _build_timm(folder: Path) -> tuple[str, Any, list[Any], list[str]]:
    import timm
    import torch

    from narcli.trace.meta import build_on_meta

    raw = read_config(folder)
    name = raw["architecture"]
    if not timm.is_model(name):
        raise LoadError(f"{folder / CONFIG}: unknown timm architecture {name!r} for timm {timm.__version__}")
    try:  # timm's own reading of a local config.json (1.0.15+): pretrained config and model arguments
        from timm.models._hub import load_model_config_from_path

        pretrained_cfg, name, model_args = load_model_config_from_path(folder)
    except ImportError:
        pretrained_cfg = dict(raw.get("pretrained_cfg") or {})
        model_args = dict(raw.get("model_args") or {})
        if "num_classes" in raw:
            model_args.setdefault("num_classes", raw["num_classes"])
    model = build_on_meta(lambda: timm.create_model(name, pretrained=False, pretrained_cfg=pretrained_cfg,
                                                    **model_args))
    size = tuple((getattr(model, "pretrained_cfg", None) or {}).get("input_size") or (3, 224, 224))
    return name, model, [torch.empty((1, *size), device="meta")], ["pixel_values"]
