"""Trace an `nn.Module` into a `RawGraph`: run-time recording first, then torch.export, then torch.fx.

Models are built and run on the `meta` device, so no weights are allocated. Every tracer reports
operator calls through `torch_ops.describe_call`, so the three agree on names and attributes.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from narcli.errors import TraceError
from narcli.graph.canonical import RawGraph, RawOp
from narcli.trace.torch_ops import TensorArg, call_macs, describe_call, describe_module, module_macs

# Run-time recording is ~10x faster than torch.export and gives the same canonical graph.
TRACERS = ("runtime", "export", "fx")
# tensor properties read in a forward, and the call each stands for: `x.data` in old code is the
# tensor itself (as `detach`), `x.T` a transpose. Others keep their own name (`real`, `imag`).
PROPERTY_CALLS = {"data": "detach", "T": "t", "H": "t", "mT": "transpose", "mH": "transpose"}


def property_call(name: str) -> str:
    """The operator name a read of tensor property `name` is recorded as."""
    return PROPERTY_CALLS.get(name, name)


def trace_module(model: nn.Module, inputs: list[torch.Tensor],
                 tracers: tuple[str, ...] = TRACERS) -> tuple[RawGraph, str]:
    """Raw graph of `model` on `inputs` and the name of the tracer that produced it.

    Raises TraceError naming what each tracer said when none of them succeeds.
    """
    model.eval()
    failures = []
    # tensors a forward creates without a device (`torch.arange(n)`) must be meta like the rest
    on_meta = torch.device("meta") if inputs and all(t.is_meta for t in inputs) else contextlib.nullcontext()
    for name in tracers:
        try:
            with warnings.catch_warnings(), on_meta, _no_distribution_checks():
                warnings.simplefilter("ignore")
                raw = _TRACERS[name](model, inputs)
            if not raw.ops:  # an empty graph is no architecture: never store one
                raise TraceError("the forward ran no tensor operation")
            return raw, name
        except Exception as exc:  # each tracer fails in its own way; the next one may succeed
            failures.append((name, exc))
    name, first = failures[0]  # the preferred tracer's complaint says the most
    raise TraceError(f"could not trace the model ({name}: {_one_line(first)})") from first


@contextlib.contextmanager
def _no_distribution_checks() -> Any:
    """`torch.distributions` checks its arguments' values (`loc` is finite, ...); meta tensors have no
    values, and the run-time tracer answers such checks with False, so they would always fail."""
    from torch.distributions import Distribution

    before = Distribution._validate_args
    Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(before)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, torch.Tensor):
        try:
            return tuple(int(s) for s in value.shape)
        except TypeError:  # symbolic sizes
            return None
    if isinstance(value, (list, tuple)):
        for item in value:
            shape = _shape(item)
            if shape is not None:
                return shape
    return None


def _has_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    return False


# -- torch.export -------------------------------------------------------------------------------
def _trace_export(model: nn.Module, inputs: list[torch.Tensor]) -> RawGraph:
    return raw_from_program(torch.export.export(model, tuple(inputs), strict=False))


def raw_from_program(program: Any) -> RawGraph:
    """RawGraph of an `ExportedProgram` (from tracing, or loaded from a `.pt2` archive)."""
    from torch.export.graph_signature import InputKind

    graph = program.graph
    nodes = {n.name: n for n in graph.nodes}
    param_shapes: dict[str, tuple[int, ...]] = {}
    data_inputs = []
    for spec in program.graph_signature.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        shape = _shape(nodes[name].meta.get("val"))
        if spec.kind == InputKind.PARAMETER and shape is not None:
            param_shapes[name] = shape
        elif spec.kind == InputKind.USER_INPUT:
            data_inputs.append((name, shape))
    raw = _raw_from_fx(graph, data_inputs, param_shapes, lambda n: n.meta.get("val"), _export_scope)
    for name, _ in data_inputs:
        value = nodes[name].meta.get("val")
        if isinstance(value, torch.Tensor):
            raw.input_dtypes[name] = str(value.dtype).replace("torch.", "")
    return raw


def _export_scope(node: torch.fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return path if isinstance(path, str) else ""


def _target_name(target: Any) -> str:
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return schema.name
    return getattr(target, "__name__", str(target))


def _raw_from_fx(graph: torch.fx.Graph, data_inputs: list, param_shapes: dict,
                 value_of: Callable[[torch.fx.Node], Any], scope_of: Callable[[torch.fx.Node], str],
                 modules: dict[str, nn.Module] | None = None) -> RawGraph:
    """RawGraph of an FX graph whose nodes carry their output value (`value_of`)."""
    ops: list[RawOp] = []
    outputs: list[str] = []

    def arg_view(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return TensorArg(a.name, _shape(value_of(a)), a.name in param_shapes)
        if isinstance(a, (list, tuple)):
            return type(a)(arg_view(x) for x in a)
        return a

    for node in graph.nodes:
        if node.op == "output":
            outputs = [n.name for n in node.all_input_nodes]
            continue
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        value = value_of(node)
        inputs = [n.name for n in node.all_input_nodes]
        macs = None
        if node.op == "call_module":
            module = modules[node.target]
            described = describe_module(module)
            op, attrs = described if described else (f"unknown:{type(module).__name__}", {})
            own = [f"{node.target}.{p}" for p, _ in module.named_parameters()]
            inputs += [p for p in own if p in param_shapes]
            macs = module_macs(module, [_shape(value_of(n)) for n in node.args if isinstance(n, torch.fx.Node)])
        else:
            name = _target_name(node.target)
            if node.target is getattr and len(node.args) == 2 and isinstance(node.args[1], str):
                name = property_call(node.args[1])  # `x.data`, `x.T` read in the forward
            if node.target is operator.getitem and isinstance(value, torch.Tensor) \
                    and isinstance(value_of(node.args[0]), torch.Tensor):
                name = "select"  # indexing a tensor, not unpacking a tuple
            args = [arg_view(a) for a in node.args]
            kwargs = {k: arg_view(v) for k, v in node.kwargs.items()}
            op, attrs = describe_call(name, args, kwargs)
            macs = call_macs(name, args, kwargs)
        if not _has_tensor(value):
            op = "size"  # shape arithmetic, not data
        ops.append(RawOp(op, inputs, [node.name], attrs, _shape(value),
                         [_shape(value_of(n)) for n in node.all_input_nodes], scope_of(node), macs))
    return RawGraph(data_inputs, ops, outputs, param_shapes)


# -- torch.fx symbolic tracing --------------------------------------------------------------------
def _trace_fx(model: nn.Module, inputs: list[torch.Tensor]) -> RawGraph:
    module = torch.fx.symbolic_trace(model)
    values: dict[str, Any] = {}

    # a plain Interpreter: fx's ShapeProp prints a traceback to stderr whenever a node fails
    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            result = super().run_node(n)
            values[n.name] = result
            return result

    Recorder(module).run(*inputs)
    modules = dict(module.named_modules())
    param_shapes: dict[str, tuple[int, ...]] = {}
    seen: set[int] = set()
    # the model's own parameters: the traced module keeps only those forward reads
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) not in seen:  # tied weights count once
            seen.add(id(param))
            param_shapes[name] = tuple(param.shape)
    data_inputs = [(n.name, _shape(values.get(n.name)))
                   for n in module.graph.nodes if n.op == "placeholder"]
    total = sum(math.prod(shape) for shape in param_shapes.values())
    for n in module.graph.nodes:
        if n.op == "get_attr" and n.target in param_shapes:
            param_shapes[n.name] = param_shapes[n.target]
    raw = _raw_from_fx(module.graph, data_inputs, param_shapes, lambda n: values.get(n.name),
                       lambda n: n.target if n.op == "call_module" else "", modules)
    raw.param_count = total  # param_shapes names some parameters twice (their get_attr nodes)
    return raw


# -- run-time recording ---------------------------------------------------------------------------
def _trace_runtime(model: nn.Module, inputs: list[torch.Tensor]) -> RawGraph:
    ids: dict[int, str] = {}
    keep: list[Any] = []  # holds every seen tensor so that ids are never reused
    param_shapes: dict[str, tuple[int, ...]] = {}
    for name, param in model.named_parameters():
        ids[id(param)] = name
        param_shapes[name] = tuple(param.shape)
    data_inputs = []
    for i, tensor in enumerate(inputs):
        ids[id(tensor)] = f"input{i}"
        data_inputs.append((f"input{i}", tuple(tensor.shape)))
    ops: list[RawOp] = []
    scope: list[str] = [""]
    names = {id(m): n for n, m in model.named_modules()}

    def value_id(t: torch.Tensor) -> str:
        if id(t) not in ids:
            ids[id(t)] = f"v{len(ids)}"
            keep.append(t)
        return ids[id(t)]

    def view(a: Any) -> Any:
        if isinstance(a, torch.Tensor):
            return TensorArg(value_id(a), tuple(a.shape), ids.get(id(a)) in param_shapes)
        if isinstance(a, (list, tuple)):
            return type(a)(view(x) for x in a)
        return a

    flat = _flat_tensors

    class Recorder(MetaAnswers):
        def record(self, func: Callable, args: tuple, kwargs: dict, result: Any) -> None:
            outs = flat(result)
            if not outs:
                return  # sizes, dims, flags: not data
            name = getattr(func, "__name__", str(func))
            if name == "__get__":  # a property read (`x.data`, `x.T`) reaches the mode as its getter
                name = property_call(getattr(getattr(func, "__self__", None), "__name__", "get"))
            if name == "__getitem__":
                name = "index" if any(isinstance(t, torch.Tensor) for t in flat(args[1:])) else "select"
            arg_views = [view(a) for a in args]
            kwarg_views = {k: view(v) for k, v in kwargs.items()}
            op, attrs = describe_call(name, arg_views, kwarg_views)
            ins = [value_id(t) for t in flat(list(args) + list(kwargs.values()))]
            ops.append(RawOp(op, ins, [value_id(t) for t in outs], attrs, tuple(outs[0].shape),
                             [tuple(t.shape) for t in flat(list(args))], scope[-1],
                             call_macs(name, arg_views, kwarg_views)))

    def enter(module: nn.Module, _args: Any) -> None:
        scope.append(names.get(id(module), scope[-1]))

    def leave(module: nn.Module, _args: Any, _out: Any) -> None:
        if len(scope) > 1:
            scope.pop()

    pre = nn.modules.module.register_module_forward_pre_hook(enter)
    post = nn.modules.module.register_module_forward_hook(leave)
    recorder = Recorder()
    try:
        with recorder, _masks_select_everything():
            result = model(*inputs)
    finally:
        pre.remove()
        post.remove()
    if not ops:
        if inspect.isgenerator(result) or inspect.isasyncgen(result) or inspect.iscoroutine(result):
            result.close()  # nothing of it ran: its tensors would be computed only when iterated
            raise TraceError(f"forward returned a {type(result).__name__}, not tensors, and ran no tensor operation")
        raise TraceError(f"forward ran no tensor operation (it returned {type(result).__name__})")
    return RawGraph(data_inputs, ops, [value_id(t) for t in flat(result)], param_shapes,
                    guessed_values=recorder.guesses)


def _flat_tensors(a: Any) -> list[torch.Tensor]:
    if isinstance(a, torch.Tensor):
        return [a]
    if isinstance(a, (list, tuple)):
        return [t for x in a for t in _flat_tensors(x)]
    if isinstance(a, dict):
        return [t for x in a.values() for t in _flat_tensors(x)]
    return []


class MetaAnswers(TorchFunctionMode):
    """Lets a model run on meta tensors: answers value reads with a guess (counted in `guesses`),
    runs bf16-only kernels in bf16, and moves CPU constants made inside forward to meta."""

    def __init__(self) -> None:
        super().__init__()
        self.guesses = 0

    def record(self, func: Callable, args: tuple, kwargs: dict, result: Any) -> None:
        """Called with every call's result; the tracer records it."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if args and isinstance(args[0], torch.Tensor) and args[0].is_meta and func in _VALUE_READS:
            answer = _VALUE_READS[func](args[0], len(args), kwargs)
            if answer is not None:
                self.guesses += 1
                return answer
        if getattr(func, "__name__", "") in _BF16_ONLY and any(
                isinstance(a, torch.Tensor) and a.is_meta and a.dtype == torch.float32 for a in args):
            result = _in_bf16(func, args, kwargs)
        else:
            try:
                result = func(*args, **kwargs)
            except RuntimeError as exc:
                if "expected device" not in str(exc) or not any(t.is_meta for t in _flat_tensors(args)):
                    raise
                # a constant made on the CPU inside forward meets a meta activation: move it
                args, kwargs = _to_meta(args), _to_meta(kwargs)
                result = func(*args, **kwargs)
        self.record(func, args, kwargs, result)
        return result


def run_on_meta(call: Callable[[], Any]) -> Any:
    """`call()` with meta tensors made to run as the run-time tracer runs them (nothing recorded)."""
    with torch.no_grad(), torch.device("meta"), MetaAnswers(), _masks_select_everything():
        return call()


# Ops whose meta kernels insist on bfloat16 (MoE experts in transformers): run in bf16, answer float32.
_BF16_ONLY = {"_grouped_mm", "grouped_mm"}


def _in_bf16(func: Callable, args: tuple, kwargs: dict) -> Any:
    def cast(a: Any) -> Any:
        return a.to(torch.bfloat16) if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a

    result = func(*[cast(a) for a in args], **kwargs)
    return result.to(torch.float32) if isinstance(result, torch.Tensor) else result


# Meta tensors have no values. When the model reads one (`if mask.all():`, `n = x.sum().item()`),
# run-time recording answers with zeros / False and goes on down that branch; export would trace
# it symbolically, which is much slower, and the branch taken rarely changes the architecture.
def _no_indices(t: torch.Tensor, nargs: int, kwargs: dict) -> Any:
    """`nonzero` / one-argument `where` of a meta tensor: as if nothing were selected."""
    if kwargs.get("as_tuple") or nargs == 1 and kwargs.get("_where"):
        return tuple(torch.empty(0, dtype=torch.long, device="meta") for _ in range(t.dim()))
    return torch.empty((0, t.dim()), dtype=torch.long, device="meta")


_VALUE_READS: dict[Any, Callable[[torch.Tensor, int, dict], Any]] = {
    torch.Tensor.__bool__: lambda t, n, kw: False,
    torch.Tensor.__contains__: lambda t, n, kw: False,  # `pad_id in input_ids`
    torch.Tensor.item: lambda t, n, kw: False if t.dtype == torch.bool else (0.0 if t.is_floating_point() else 0),
    torch.Tensor.__int__: lambda t, n, kw: 0,
    torch.Tensor.__float__: lambda t, n, kw: 0.0,
    torch.Tensor.__index__: lambda t, n, kw: 0,
    torch.Tensor.tolist: lambda t, n, kw: torch.zeros(t.shape, dtype=t.dtype, device="cpu").tolist(),
    torch.Tensor.nonzero: _no_indices,
    torch.nonzero: _no_indices,
    torch.argwhere: lambda t, n, kw: torch.empty((0, t.dim()), dtype=torch.long, device="meta"),
}


def _where(t: torch.Tensor, nargs: int, kwargs: dict) -> Any:
    return _no_indices(t, nargs, {"_where": True}) if nargs == 1 and not kwargs else None


_VALUE_READS[torch.where] = _where


def _to_meta(value: Any) -> Any:
    """`value` with every tensor inside it (tuples, lists, dicts) moved to the meta device."""
    if isinstance(value, torch.Tensor):
        return value if value.is_meta else value.to("meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_meta(v) for k, v in value.items()}
    return value


def _unique_consecutive(t: torch.Tensor, nargs: int, kwargs: dict) -> Any:
    """As if every element were equal (seq2seq heads check that each row has as many EOS tokens)."""
    if nargs > 1 or any(kwargs.get(k) for k in ("return_inverse", "return_counts")):
        return None
    flat_t = t.reshape(-1) if kwargs.get("dim") is None else t
    return flat_t[:1] if kwargs.get("dim") is None else flat_t.narrow(kwargs["dim"], 0, min(1, t.shape[kwargs["dim"]]))


_VALUE_READS[torch.unique_consecutive] = _unique_consecutive
_VALUE_READS[torch.Tensor.unique_consecutive] = _unique_consecutive


def _masks_select_everything() -> Any:
    """Boolean-mask indexing of meta tensors (`x[mask]`) as if every element were selected."""
    try:
        from torch.fx.experimental import _config
    except ImportError:
        return contextlib.nullcontext()
    if not hasattr(_config, "meta_nonzero_assume_all_nonzero"):
        return contextlib.nullcontext()
    return _config.patch(meta_nonzero_assume_all_nonzero=True)


_TRACERS = {"export": _trace_export, "fx": _trace_fx, "runtime": _trace_runtime}
