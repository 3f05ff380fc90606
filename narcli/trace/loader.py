"""Load models from a user's `.py` file (by path), built on the `meta` device.

This runs in the child process of `isolation`; it imports torch.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli.errors import LoadError, NoModelError, UsageError

SKIPPED_FUNCTIONS = {"main", "train", "evaluate", "run", "cli", "setup"}


SPEC_HELP = "expected NAME or NAME(arg=value, ...), with literals or calls of names defined in the file"


@dataclass
class SpecCall:
    """A call inside a `--model` spec, e.g. the `GPTConfig(n_layer=4)` of `GPT(GPTConfig(n_layer=4))`;
    its name is looked up in the model file when the model is built."""

    name: str
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def parse_model_spec(spec: str) -> tuple[str, tuple, dict[str, Any]]:
    """`"resnet(depth=18)"` -> `("resnet", (), {"depth": 18})`. Arguments are literals, or calls of
    names (`GPT(GPTConfig(n_layer=4))`), parsed with `ast` and never evaluated."""
    if len(spec) > 10_000:
        raise UsageError(f"bad --model: {len(spec):,} characters is not a model spec")
    try:
        tree = ast.parse(spec.strip(), mode="eval").body
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        raise UsageError(f"bad --model {_short(spec)}: {SPEC_HELP}") from None
    if isinstance(tree, ast.Name):
        return tree.id, (), {}
    if not isinstance(tree, ast.Call):
        raise UsageError(f"bad --model {_short(spec)}: {_not_allowed(tree)}; {SPEC_HELP}")
    call = _spec_value(tree, spec)
    return call.name, call.args, call.kwargs


def _spec_value(node: ast.AST, spec: str) -> Any:
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise UsageError(f"bad --model {_short(spec)}: {_not_allowed(node.func)}; {SPEC_HELP}")
        if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            raise UsageError(f"bad --model {_short(spec)}: * and ** unpacking are not supported; "
                             f"write the arguments out")
        return SpecCall(node.func.id, tuple(_spec_value(a, spec) for a in node.args),
                        {k.arg: _spec_value(k.value, spec) for k in node.keywords})
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_spec_value(e, spec) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_spec_value(k, spec): _spec_value(v, spec) for k, v in zip(node.keys, node.values)}
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise UsageError(f"bad --model {_short(spec)}: {_not_allowed(node)}; {SPEC_HELP}") from None


def _not_allowed(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return "attribute access is not allowed"
    if isinstance(node, ast.Lambda):
        return "lambdas are not allowed"
    if isinstance(node, (ast.BinOp, ast.BoolOp, ast.Compare, ast.UnaryOp)):
        return "operators are not allowed"
    if isinstance(node, ast.Name):
        return f"a bare name ({node.id}) as an argument: call it, {node.id}(), or quote it"
    return f"{type(node).__name__.lower()} expressions are not allowed"


def _short(spec: str) -> str:
    return repr(spec if len(spec) <= 80 else spec[:77] + "...")


def _defined_here(module: Any, name: str, path: Path) -> Any:
    """The class or function `name` defined in the model file itself (never an imported name)."""
    target = vars(module).get(name)
    if target is None:
        return None
    if not (inspect.isclass(target) or inspect.isfunction(target)) or \
            getattr(target, "__module__", None) != module.__name__:
        raise UsageError(f"--model: {name} is not a class or function defined in {path.name}; "
                         f"only those can be called")
    return target


def _resolve(value: Any, module: Any, path: Path) -> Any:
    """Build the nested calls of a spec's arguments (config objects, blocks) from the file's names."""
    if isinstance(value, SpecCall):
        target = _defined_here(module, value.name, path)
        if target is None:
            raise UsageError(f"--model: no {value.name!r} in {path.name}")
        return target(*(_resolve(a, module, path) for a in value.args),
                      **{k: _resolve(v, module, path) for k, v in value.kwargs.items()})
    if isinstance(value, (list, tuple, set)):
        return type(value)(_resolve(v, module, path) for v in value)
    if isinstance(value, dict):
        return {k: _resolve(v, module, path) for k, v in value.items()}
    return value


def import_file(path: Path) -> Any:
    """Import a model file the way its project does (`trace.packages`): under its dotted name when it
    is part of a package, so relative and absolute self-imports work, with its import root, its
    folder, the project root and the working directory on sys.path; a lone script by path."""
    from narcli.trace.packages import install_hint, is_local_module, package_layout

    layout = package_layout(path)
    for root in reversed(layout.search_path()):
        if str(root) in sys.path:
            sys.path.remove(str(root))
        sys.path.insert(0, str(root))
    top = layout.module.split(".")[0] if layout.module else None
    clash = top is not None and top in sys.modules and not _under(sys.modules[top], layout.import_root)
    try:
        if layout.module and not clash:
            module = importlib.import_module(layout.module)
        else:
            module = _import_by_path(path)
    except SyntaxError as exc:
        where = f"{path}:{exc.lineno}" if exc.lineno else str(path)  # a binary file has no line
        raise LoadError(f"{where}: syntax error: {exc.msg}") from exc
    except ModuleNotFoundError as exc:
        if exc.name and not is_local_module(exc.name, layout):
            raise LoadError(f"{path}: needs the module {exc.name!r}, which is not installed here "
                            f"(try: {install_hint(exc.name)})") from exc
        raise LoadError(f"{path}: importing it raised ModuleNotFoundError: {exc}") from exc
    except LoadError:
        raise
    except BaseException as exc:
        raise LoadError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from exc
    return module


def _under(module: Any, root: Path) -> bool:
    locations = [getattr(module, "__file__", None), *list(getattr(module, "__path__", []) or [])]
    return any(loc and Path(loc).resolve().is_relative_to(root) for loc in locations)


def _import_by_path(path: Path) -> Any:
    name = f"nar_user_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise LoadError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
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
    from torch import nn

    module = import_file(path)
    if spec:
        name, args, kwargs = parse_model_spec(spec)
        target = _defined_here(module, name, path)
        if target is None:
            found = ", ".join(n for n, _ in _candidates(module, nn.Module)) or "none"
            raise LoadError(f"{path}: no {name!r} in the file (models found: {found})")
        shown = spec.strip()
        if not args and not kwargs:  # `--model GPT`: fill in the config the way a bare scan does
            config = _default_config(module, target, _required(target))
            if config:
                args, shown = (SpecCall(config),), f"{name}({config}())"
        model = _construct(target, args, kwargs, shown, path, module)
        if not isinstance(model, nn.Module):
            raise LoadError(f"{path}: {spec} returned {type(model).__name__}, not an nn.Module")
        return [(shown, model)]

    built: list[tuple[str, Any, str]] = []  # (name shown, model, the file's attribute it came from)
    needs_args: list[str] = []
    for name, target in _candidates(module, nn.Module):
        required = _required(target)
        config = _default_config(module, target, required)
        if required and config is None:
            if inspect.isclass(target):
                needs_args.append(f"{name}({', '.join(required)})")
            continue
        args = (SpecCall(config),) if config else ()
        shown = f"{name}({config}())" if config else name  # what was assumed, shown as the model's name
        try:
            model = _construct(target, args, {}, shown, path, module)
        except LoadError:
            if inspect.isclass(target):
                raise
            continue  # a helper function that is not a model factory
        if isinstance(model, nn.Module):
            built.append((shown, model, name))
    # a module class without a forward of its own (a container, a mixin) is a helper, not a model;
    # so is one without weights (a channel shuffle, an activation) beside models that need arguments
    runnable = [b for b in built if type(b[1]).forward is not nn.Module.forward]
    built = runnable or built
    weighted = [b for b in built if any(True for _ in b[1].parameters())]
    built = weighted or ([] if needs_args else built)
    if not built:
        if needs_args:
            raise LoadError(f"{path}: every model needs constructor arguments ({'; '.join(needs_args)}); "
                            f"pick one with --model 'NAME(arg=value, ...)'")
        raise NoModelError(f"{path}: no nn.Module subclass or model factory found")
    # a block that another candidate contains is part of a model, not a model of its own
    inner = {type(m) for _, model, _ in built for m in list(model.modules())[1:]}
    top = [(shown, m) for shown, m, attr in built if type(m) not in inner or not inspect.isclass(getattr(module, attr))]
    return top or [(shown, m) for shown, m, _ in built]


def _candidates(module: Any, base: type) -> list[tuple[str, Any]]:
    """Module subclasses and zero-argument functions defined in the file itself, in file order."""
    found = []
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj) and issubclass(obj, base) and not inspect.isabstract(obj) or inspect.isfunction(obj) and name not in SKIPPED_FUNCTIONS and not name.startswith("test"):
            found.append((name, obj))
    return found


def _default_config(module: Any, target: Any, required: list[str]) -> str | None:
    """The config class to build `target` with when its one required argument is a config object:
    a class of the file that is not a model and constructs with defaults (by annotation, else the
    file's only class whose name says config)."""
    if len(required) != 1 or not inspect.isclass(target):
        return None
    from torch import nn

    configs = {n: c for n, c in vars(module).items()
               if inspect.isclass(c) and getattr(c, "__module__", None) == module.__name__
               and not issubclass(c, nn.Module) and not _required(c)}
    try:
        annotation = inspect.signature(target).parameters[required[0]].annotation
    except (TypeError, ValueError, KeyError):
        annotation = inspect.Parameter.empty
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)
    if name in configs:
        return name
    named = [n for n in configs if any(word in n.lower() for word in ("config", "args", "cfg", "params"))]
    return named[0] if len(named) == 1 else None


def _construct(target: Any, args: tuple, kwargs: dict, what: str, path: Path, module: Any) -> Any:
    from narcli.trace.meta import build_on_meta

    try:
        return build_on_meta(lambda: target(*(_resolve(a, module, path) for a in args),
                                            **{k: _resolve(v, module, path) for k, v in kwargs.items()}))
    except UsageError:
        raise
    except TypeError as exc:
        raise LoadError(f"{path}: {what} could not be constructed: {exc}") from exc
    except Exception as exc:
        raise LoadError(f"{path}: constructing {what} raised {type(exc).__name__}: {exc}") from exc
