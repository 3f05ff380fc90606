"""Load models from a user's `.py` file (by path) or a `.pt2` archive, built on the `meta` device.

This runs in the child process of `isolation`; it imports torch.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.errors import LoadError, NoModelError, UsageError

SKIPPED_FUNCTIONS = {"main", "train", "evaluate", "run", "cli", "setup"}


def parse_model_spec(spec: str) -> tuple[str, tuple, dict[str, Any]]:
    """`"resnet(depth=18)"` -> `("resnet", (), {"depth": 18})`; arguments must be literals."""
    try:
        tree = ast.parse(spec.strip(), mode="eval").body
    except SyntaxError:
        raise UsageError(f"bad --model {spec!r}: expected NAME or NAME(arg=value, ...)") from None
    if isinstance(tree, ast.Name):
        return tree.id, (), {}
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)):
        raise UsageError(f"bad --model {spec!r}: expected NAME or NAME(arg=value, ...)")
    try:
        args = tuple(ast.literal_eval(a) for a in tree.args)
        kwargs = {k.arg: ast.literal_eval(k.value) for k in tree.keywords if k.arg}
    except ValueError:
        raise UsageError(f"bad --model {spec!r}: arguments must be literals (numbers, strings, lists)") from None
    return tree.func.id, args, kwargs


def import_file(path: Path) -> Any:
    """Import a Python file by path; its folder goes on sys.path so its sibling modules import."""
    name = f"nar_user_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise LoadError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    except BaseException as exc:
        raise LoadError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from exc
    return module


def _required(fn: Callable) -> list[str]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return ["?"]
    return [p.name for p in sig.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def build_models(path: Path, spec: str | None) -> list[tuple[str, Any]]:
    """`(name, model)` pairs on the meta device: the one `spec` names, or every candidate in the file."""
    import torch
    from torch import nn

    module = import_file(path)
    if spec:
        name, args, kwargs = parse_model_spec(spec)
        target = getattr(module, name, None)
        if target is None:
            found = ", ".join(n for n, _ in _candidates(module, nn.Module)) or "none"
            raise LoadError(f"{path}: no {name!r} in the file (models found: {found})")
        model = _construct(target, args, kwargs, spec, path, torch)
        if not isinstance(model, nn.Module):
            raise LoadError(f"{path}: {spec} returned {type(model).__name__}, not an nn.Module")
        return [(spec.strip(), model)]

    built: list[tuple[str, Any]] = []
    needs_args: list[str] = []
    for name, target in _candidates(module, nn.Module):
        required = _required(target)
        if required:
            if inspect.isclass(target):
                needs_args.append(f"{name}({', '.join(required)})")
            continue
        try:
            model = _construct(target, (), {}, name, path, torch)
        except LoadError:
            if inspect.isclass(target):
                raise
            continue  # a helper function that is not a model factory
        if isinstance(model, nn.Module):
            built.append((name, model))
    if not built:
        if needs_args:
            raise LoadError(f"{path}: every model needs constructor arguments ({'; '.join(needs_args)}); "
                            f"pick one with --model 'NAME(arg=value, ...)'")
        raise NoModelError(f"{path}: no nn.Module subclass or model factory found")
    # a block that another candidate contains is part of a model, not a model of its own
    inner = {type(m) for _, model in built for m in list(model.modules())[1:]}
    top = [(n, m) for n, m in built if type(m) not in inner or not inspect.isclass(getattr(module, n))]
    return top or built


def _candidates(module: Any, base: type) -> list[tuple[str, Any]]:
    """Module subclasses and zero-argument functions defined in the file itself, in file order."""
    found = []
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj) and issubclass(obj, base) and not inspect.isabstract(obj) or inspect.isfunction(obj) and name not in SKIPPED_FUNCTIONS and not name.startswith("test"):
            found.append((name, obj))
    return found


def _construct(target: Any, args: tuple, kwargs: dict, what: str, path: Path, torch: Any) -> Any:
    from narcli.trace.meta import build_on_meta

    try:
        return build_on_meta(lambda: target(*args, **kwargs))
    except TypeError as exc:
        raise LoadError(f"{path}: {what} could not be constructed: {exc}") from exc
    except Exception as exc:
        raise LoadError(f"{path}: constructing {what} raised {type(exc).__name__}: {exc}") from exc


def load_exported_program(path: Path) -> Any:
    import torch

    try:
        return torch.export.load(str(path))
    except Exception as exc:
        raise LoadError(f"{path}: not a readable torch.export archive ({type(exc).__name__}: {exc})") from exc
