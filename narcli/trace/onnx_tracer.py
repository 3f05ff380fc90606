"""Read an ONNX model into a `RawGraph`, with shapes from ONNX shape inference."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from narcli.errors import LoadError
from narcli.graph.canonical import RawGraph, RawOp
from narcli.graph.vocab import MODULE_ALIASES, canonical_onnx, pool_type
from narcli.trace.inputs import DTYPES
from narcli.trace.torch_ops import conv_attrs, einsum_macs, recurrent_attrs

# Initializers that are running statistics, not trainable parameters: (op type, input index).
_STATISTICS = {("BatchNormalization", 3), ("BatchNormalization", 4)}


def load_onnx(path: Path) -> Any:
    """The ONNX model at `path`, shape-inferred; LoadError when it is not a readable ONNX model."""
    import onnx
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError) as exc:
        raise LoadError(f"{path}: not a readable ONNX model ({type(exc).__name__})") from exc
    if not model.graph.node:
        raise LoadError(f"{path}: ONNX model has no operators (truncated or not an ONNX file?)")
    check_structure(model.graph, path)
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference is a bonus: graphs with custom ops still trace without it
        pass
    return model


MAX_DIM = 1 << 40  # sizes beyond this are corrupt, and would overflow the MAC counts
# a parameter count beyond this (9e15, where float64 stops counting exactly) is no real model, and
# would overflow the 64-bit integers the stores keep counts in
MAX_PARAMS = 1 << 53


def check_structure(graph: Any, path: Path) -> None:
    """LoadError for a graph no exporter writes: a cycle, a value produced twice, a size that is
    negative or absurd. (ONNX's own checker is stricter about things we do not need, like opsets.)"""
    def bad_dims(dims: Any) -> bool:
        return any(d < 0 or d > MAX_DIM for d in dims)

    for tensor in graph.initializer:
        if bad_dims(tensor.dims):
            raise LoadError(f"{path}: initializer {tensor.name!r} has an impossible shape {list(tensor.dims)}")
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim if d.HasField("dim_value")]
        if bad_dims(dims):
            raise LoadError(f"{path}: value {info.name!r} has an impossible shape {dims}")
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for name in node.output:
            if name and name in producer:
                raise LoadError(f"{path}: value {name!r} is produced by two operators")
            if name:
                producer[name] = i
    # Kahn's algorithm: every operator must be reachable in dependency order
    waiting = [sum(1 for v in set(node.input) if v in producer) for node in graph.node]
    users: dict[int, list[int]] = {}
    for i, node in enumerate(graph.node):
        for v in set(node.input):
            if v in producer:
                users.setdefault(producer[v], []).append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for j in users.get(i, []):
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    if done < len(graph.node):
        stuck = next(graph.node[i] for i, n in enumerate(waiting) if n > 0)
        raise LoadError(f"{path}: the ONNX graph has a cycle (through {stuck.op_type} {stuck.name!r}); "
                        "ONNX graphs must be acyclic")


def trace_onnx(model: Any) -> RawGraph:
    """RawGraph of a loaded ONNX model."""
    from onnx import TensorProto, helper

    graph = model.graph
    initializers = {t.name: tuple(int(d) for d in t.dims) for t in graph.initializer}
    floating = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE}
    statistics = {node.input[i] for node in graph.node for op, i in _STATISTICS
                  if node.op_type == op and len(node.input) > i}
    tensors = list(graph.initializer)
    for node in graph.node:  # exporters sometimes inline weights as Constant nodes
        value = _attr(node, "value") if node.op_type == "Constant" else None
        if value is not None and hasattr(value, "dims"):
            value.name = node.output[0]
            initializers[value.name] = tuple(int(d) for d in value.dims)
            tensors.append(value)
    param_shapes = {t.name: initializers[t.name] for t in tensors
                    if t.data_type in floating and len(t.dims) >= 1 and t.name not in statistics}
    _check_param_count(param_shapes)

    shapes: dict[str, tuple[int, ...] | None] = dict(initializers)
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        dims = info.type.tensor_type.shape.dim
        if info.type.tensor_type.HasField("shape"):
            shapes[info.name] = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in dims)

    data_inputs = [(i.name, shapes.get(i.name)) for i in graph.input
                   if i.name not in initializers]
    ops = []
    for node in graph.node:
        op, attrs = _describe(node, shapes, param_shapes)
        inputs = [v for v in node.input if v]
        in_shapes = [shapes.get(v) for v in inputs]
        equation = _attr(node, "equation") if node.op_type == "Einsum" else None
        ops.append(RawOp(op, inputs, list(node.output), attrs,
                         shapes.get(node.output[0]) if node.output else None, in_shapes, _scope(node.name),
                         einsum_macs(equation.decode() if isinstance(equation, bytes) else equation, in_shapes)
                         if equation else None))
    dtypes = {}
    for i in graph.input:
        if i.name not in initializers and i.type.tensor_type.elem_type:
            try:
                name = helper.tensor_dtype_to_string(i.type.tensor_type.elem_type).split(".")[-1].lower()
            except (KeyError, ValueError):  # a type number this onnx does not know
                name = f"onnx-type-{i.type.tensor_type.elem_type}"
            dtypes[i.name] = DTYPES.get(name, name)  # ONNX FLOAT -> float32, as --input-dtype says it
    # exporters merge initializers with equal values (fresh LayerNorm weights, say), so a
    # parameter is counted at each use rather than once
    return RawGraph(data_inputs, ops, [o.name for o in graph.output], param_shapes,
                    count_params_per_use=True, input_dtypes=dtypes)


def _check_param_count(param_shapes: dict[str, tuple[int, ...]]) -> None:
    """LoadError naming the tensor when the parameters add up beyond MAX_PARAMS."""
    sizes = {name: math.prod(shape) for name, shape in param_shapes.items()}
    if sizes and sum(sizes.values()) > MAX_PARAMS:
        name = max(sizes, key=sizes.__getitem__)
        raise LoadError(f"initializer {name!r} of shape {list(param_shapes[name])} makes {sum(sizes.values()):.3g} "
                        f"parameters, beyond any real model (at most 2^53); the file is damaged or forged")


def _attr(node: Any, name: str, default: Any = None) -> Any:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _check_conv(node: Any, weight: list[int]) -> None:
    """Refuse a convolution no runtime could run (the ONNX checker does not look at attribute
    values): a LoadError naming the node and the attribute."""
    rank = len(weight) - 2

    def bad(what: str) -> None:
        raise LoadError(f"ONNX node {node.name or node.output[0]!r} ({node.op_type}): {what}")

    if rank < 1:
        bad(f"its weight has shape {list(weight)}; a convolution's weight has at least 3 dimensions")
    group = _attr(node, "group", 1)
    if not isinstance(group, int) or group < 1 or weight[0] % group:
        bad(f"group={group!r} must be a positive divisor of its {weight[0]} output channels")
    for name, low, length in (("strides", 1, rank), ("dilations", 1, rank), ("pads", 0, 2 * rank),
                              ("kernel_shape", 1, rank)):
        value = _attr(node, name, None)
        if value is None:
            continue
        value = list(value) if isinstance(value, (list, tuple)) else [value]
        if len(value) != length or any(not isinstance(v, int) or v < low for v in value):
            bad(f"{name}={value} must be {length} integers of at least {low}")
    kernel = _attr(node, "kernel_shape", None)
    if kernel is not None and list(kernel) != list(weight[2:]):
        bad(f"kernel_shape={list(kernel)} does not match its weight's {list(weight[2:])}")


def _describe(node: Any, shapes: dict, params: dict) -> tuple[str, dict[str, Any]]:
    kind = node.op_type
    if kind in ("Conv", "ConvTranspose") and len(node.input) > 1 and shapes.get(node.input[1]):
        weight = shapes[node.input[1]]
        rank = len(weight) - 2
        _check_conv(node, weight)
        pads = _attr(node, "pads", [0] * (2 * rank))
        return conv_attrs(weight, _attr(node, "strides", 1), list(pads[:rank]),
                          _attr(node, "dilations", 1), _attr(node, "group", 1),
                          transposed=kind == "ConvTranspose")
    if kind == "Gemm" and len(node.input) > 1:
        weight = shapes.get(node.input[1])
        if node.input[1] not in params or not weight:
            return "matmul", {}
        out_f, in_f = weight if _attr(node, "transB", 0) else weight[::-1]
        return "linear", {"in_features": int(in_f), "out_features": int(out_f)}
    if kind == "Gather" and len(node.input) > 1:
        if node.input[0] in params and len(params[node.input[0]]) == 2:
            table = params[node.input[0]]
            return "embedding", {"in_features": int(table[0]), "out_features": int(table[1])}
        return ("gather" if shapes.get(node.input[1]) else "slice"), {}
    if kind in ("MaxPool", "AveragePool"):
        kernel = [int(k) for k in _attr(node, "kernel_shape", [1])]
        stride = [int(s) for s in _attr(node, "strides", [1] * len(kernel))]
        return pool_type("max" if kind == "MaxPool" else "avg", len(kernel)), \
            {"kernel": kernel, "stride": stride}
    if kind in ("LSTM", "GRU", "RNN") and len(node.input) > 2:
        w, r = shapes.get(node.input[1]), shapes.get(node.input[2])  # [directions, gates*hidden, in|hidden]
        if w and r and len(w) == 3 and len(r) == 3:
            # Y is [time, directions, batch, hidden]: count one direction's matrices per step
            return MODULE_ALIASES[kind], recurrent_attrs([tuple(w[1:]), tuple(r[1:])], step=False)
        return MODULE_ALIASES[kind], {}
    if kind in ("Resize", "Upsample"):
        mode = _attr(node, "mode", b"nearest")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        return ("upsample_nearest" if mode == "nearest" else "upsample_linear"), {}
    if kind in ("LayerNormalization", "BatchNormalization", "InstanceNormalization",
                "GroupNormalization", "RMSNormalization", "SimplifiedLayerNormalization"):
        scale = shapes.get(node.input[1]) if len(node.input) > 1 else None
        attrs = {"features": int(math.prod(scale))} if scale else {}
        if kind == "GroupNormalization":
            attrs["groups"] = int(_attr(node, "num_groups", 1))
        return canonical_onnx(kind, node.domain), attrs
    return canonical_onnx(kind, node.domain), {}


def _scope(name: str) -> str:
    """`/layer1/layer1.0/conv1/Conv` -> `layer1.0.conv1` (the legacy exporter's naming)."""
    parts = [p for p in name.split("/") if p][:-1]
    if not parts:
        return ""
    scope = parts[0]
    for part in parts[1:]:
        scope = part if part.startswith(scope + ".") else f"{scope}.{part}"
    return scope
