"""Model folders: a Hugging Face transformers or timm `config.json` (with or without weights), built
from the config on the meta device. No weights are read and no code from the folder runs: a config
that needs its own modeling code (`auto_map`, `trust_remote_code`) is refused.

`folder_kind` reads the config with the standard library (the parent uses it to route and to say
what to install); `build_folder_model` runs in the tracing child and imports the library.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
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
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
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
    except RecursionError:  # thousands of nested brackets: no real config, and it must not abort a scan
        raise LoadError(f"{path}: not a model config (JSON nested too deep)") from None
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


# Arguments that make a library read a file or fetch weights instead of shaping the architecture:
# timm's `checkpoint_path` is a torch.load of any file named, `pretrained` and a pretrained config's
# file / url / hub id fetch weights. nar reads no weights, so they are dropped before building.
LOADING_ARGS = frozenset({"pretrained", "checkpoint", "checkpoint_path", "pretrained_cfg", "pretrained_cfg_overlay",
                          "pretrained_model_args", "cache_dir"})
LOADING_SUFFIXES = ("_path", "_file", "_url", "_dir", "checkpoint")
WEIGHT_SOURCES = frozenset({"file", "url", "hf_hub_id", "hf_hub_filename", "state_dict", "source"})


def without_loading_args(args: Any, where: str) -> dict[str, Any]:
    """`args` (a config's model arguments) without those that name a file or weights to load."""
    if not isinstance(args, dict):
        raise LoadError(f"{where}: model arguments must be a JSON object, not {type(args).__name__}")
    return {k: v for k, v in args.items()
            if str(k).lower() not in LOADING_ARGS and not str(k).lower().endswith(LOADING_SUFFIXES)}


def without_weight_sources(pretrained_cfg: Any) -> dict[str, Any]:
    """A timm pretrained config without the fields that say where its weights are."""
    return {k: v for k, v in pretrained_cfg.items() if k not in WEIGHT_SOURCES} if isinstance(pretrained_cfg, dict) else {}


def no_pretrained_loading(config: Any, seen: set[int] | None = None) -> None:
    """Turn off, in a transformers config and every config nested in it, what would load weights while
    the model is built: `use_pretrained_backbone`, and file arguments in `model_args` (timm_wrapper)
    or `backbone_kwargs`."""
    from transformers import PretrainedConfig

    seen = set() if seen is None else seen
    if id(config) in seen:
        return
    seen.add(id(config))
    if getattr(config, "use_pretrained_backbone", False):
        config.use_pretrained_backbone = False
    for field in ("model_args", "backbone_kwargs"):
        if isinstance(getattr(config, field, None), dict):
            setattr(config, field, without_loading_args(getattr(config, field), field))
    for value in list(vars(config).values()):
        if isinstance(value, PretrainedConfig):
            no_pretrained_loading(value, seen)


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
    with _hub_offline():
        return _build_timm(folder) if kind == "timm" else _build_transformers(folder)


@contextlib.contextmanager
def _hub_offline() -> Iterator[None]:
    """Nothing is fetched while a folder's model is built: a config can name a hub repo to read a
    backbone's config or weights from (transformers 5 does so for `backbone` without
    `backbone_config`). Restored after, for the worker's next task."""
    import os
    import sys

    previous = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"  # read when huggingface_hub is first imported
    constants = sys.modules.get("huggingface_hub.constants")
    was = getattr(constants, "HF_HUB_OFFLINE", None)
    if constants is not None:  # imported already: it reads its global at each call
        constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = previous
        constants = sys.modules.get("huggingface_hub.constants")
        if constants is not None:  # as huggingface_hub would have read the environment
            constants.HF_HUB_OFFLINE = was if was is not None else str(
                previous or os.environ.get("TRANSFORMERS_OFFLINE")).upper() in {"1", "ON", "YES", "TRUE"}


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
        if "offline mode" in str(exc):  # our _hub_offline, not the user's setting: say what it wanted
            raise LoadError(f"{folder / CONFIG}: it needs a download from the Hugging Face Hub (a backbone named "
                            "without its config?); nar fetches nothing while building a model folder") from None
        raise LoadError(f"{folder / CONFIG}: transformers cannot read it: {str(exc).splitlines()[0][:200]}") from None
    no_pretrained_loading(config)
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
        pretrained_cfg = raw.get("pretrained_cfg") or {}
        model_args = without_loading_args(raw.get("model_args") or {}, f"{folder / CONFIG}: model_args")
        if "num_classes" in raw:
            model_args.setdefault("num_classes", raw["num_classes"])
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a config timm's reader chokes on
        raise LoadError(f"{folder / CONFIG}: timm cannot read it ({type(exc).__name__}: {str(exc)[:120]})") from None
    pretrained_cfg = without_weight_sources(pretrained_cfg)
    model_args = without_loading_args(model_args, f"{folder / CONFIG}: model_args")
    model = build_on_meta(lambda: timm.create_model(name, pretrained=False, pretrained_cfg=pretrained_cfg,
                                                    **model_args))
    size = tuple((getattr(model, "pretrained_cfg", None) or {}).get("input_size") or (3, 224, 224))
    return name, model, [torch.empty((1, *size), device="meta")], ["pixel_values"]
