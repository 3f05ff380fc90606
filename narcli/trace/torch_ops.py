"""Name and attributes of one PyTorch operator call, shared by every PyTorch tracer.

ATen ops, `torch.nn.functional` calls and Tensor methods mostly share names and argument order,
so one function describes them all. Tensors appear here as `TensorArg`s, never real tensors, so
this module imports no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from narcli.graph.vocab import (
    FOLDED,
    MODULE_ALIASES,
    NON_DATA,
    RECURRENT_CALLS,
    RECURRENT_STEPS,
    bare_name,
    canonical_torch,
    conv_type,
)

Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument: its value id, shape, and whether it is a trainable parameter."""

    value: str
    shape: Shape | None
    is_param: bool = False


def _ints(value: Any, rank: int) -> list[int]:
    if isinstance(value, (list, tuple)):
        out = [int(v) for v in value]
        return out * rank if len(out) == 1 and rank > 1 else out
    return [int(value)] * rank


def _arg(args: list[Any], kwargs: dict[str, Any], pos: int, name: str, default: Any) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[pos] if len(args) > pos and args[pos] is not None else default


def conv_attrs(weight: Shape, stride: Any, padding: Any, dilation: Any, groups: int,
               transposed: bool = False) -> tuple[str, dict[str, Any]]:
    """Canonical type and attributes of a convolution from its weight shape and hyper-parameters."""
    rank = len(weight) - 2
    groups = int(groups)
    if transposed:
        in_ch, out_ch = int(weight[0]), int(weight[1]) * groups
    else:
        out_ch, in_ch = int(weight[0]), int(weight[1]) * groups
    attrs: dict[str, Any] = {
        "in_channels": in_ch,
        "out_channels": out_ch,
        "kernel": [int(k) for k in weight[2:]],
        "stride": _ints(stride, rank),
        "dilation": _ints(dilation, rank),
        "groups": groups,
    }
    if not isinstance(padding, str):
        attrs["padding"] = _ints(padding, rank)
    return conv_type(rank, groups, in_ch, out_ch, transposed), attrs


def _pool(name: str, args: list[Any], kwargs: dict[str, Any], rank: int) -> tuple[str, dict[str, Any]]:
    kernel = _ints(_arg(args, kwargs, 1, "kernel_size", 1), rank)
    stride = _arg(args, kwargs, 2, "stride", kernel) or kernel
    return name, {"kernel": kernel, "stride": _ints(stride, rank)}


def _adaptive(kind: str, args: list[Any], kwargs: dict[str, Any], rank: int) -> tuple[str, dict[str, Any]]:
    size = _ints(_arg(args, kwargs, 1, "output_size", 1), rank)
    if all(s == 1 for s in size):
        return f"global_{kind}_pool", {}
    return f"adaptive_{kind}_pool{rank}d", {}


def recurrent_attrs(matrices: list[Shape], step: bool) -> dict[str, Any]:
    """What a recurrence's MACs follow from: its weight matrices (`w_ih`, `w_hh` and any projection
    of every layer and direction) are each applied once per time step. `matrix_size` is their
    element count; `hidden` and `input_size` come from the first layer."""
    matrices = [m for m in matrices if len(m) == 2]
    if len(matrices) < 2:
        return {}
    attrs: dict[str, Any] = {"matrix_size": int(sum(m[0] * m[1] for m in matrices)),
                             "input_size": int(matrices[0][1]), "hidden": int(matrices[1][1])}
    if step:
        attrs["step"] = 1  # one time step per call; unrolled calls are folded into one node
    return attrs


def _flat_tensors(values: Any) -> list[TensorArg]:
    out = []
    for value in values:
        if isinstance(value, TensorArg):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(_flat_tensors(value))
    return out


def only_adds_unit_dims(index: Any) -> bool:
    """Whether indexing with `index` (`x[:, :, None, None]`, `x[None]`, `x[..., None]`) selects every
    element and only inserts size-1 dimensions: a view, which torch.export records as `unsqueeze`."""
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or (isinstance(i, slice) and i == slice(None)) for i in items)


def describe_call(name: str, args: list[Any], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Canonical type (or a FOLDED / NON_DATA name) and key attributes of one operator call."""
    name = bare_name(name)
    if name == "select" and len(args) == 2 and only_adds_unit_dims(args[1]):
        return "unsqueeze", {}  # indexing (`__getitem__`) that only adds dimensions
    if name in RECURRENT_CALLS or name in RECURRENT_STEPS:
        # (input, hx, weights...): the weights are the flat parameter list of a call, or a cell's
        # w_ih, w_hh and biases
        weights = [t.shape for t in _flat_tensors(list(args[2:]) + list(kwargs.values())) if t.shape is not None]
        return canonical_torch(name), recurrent_attrs(weights, name in RECURRENT_STEPS)
    tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, TensorArg)]
    params = [t for t in tensors if t.is_param and t.shape is not None]

    if name in ("conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d",
                "conv_transpose2d", "conv_transpose3d"):
        weight = args[1].shape if len(args) > 1 and isinstance(args[1], TensorArg) else None
        if weight is None:
            return f"unknown:{name}", {}
        if name in ("convolution", "_convolution"):
            transposed = bool(_arg(args, kwargs, 6, "transposed", False))
            groups = _arg(args, kwargs, 8, "groups", 1)
            return conv_attrs(weight, _arg(args, kwargs, 3, "stride", 1),
                              _arg(args, kwargs, 4, "padding", 0),
                              _arg(args, kwargs, 5, "dilation", 1), groups, transposed)
        if name.startswith("conv_transpose"):
            return conv_attrs(weight, _arg(args, kwargs, 3, "stride", 1),
                              _arg(args, kwargs, 4, "padding", 0),
                              _arg(args, kwargs, 7, "dilation", 1),
                              _arg(args, kwargs, 6, "groups", 1), transposed=True)
        return conv_attrs(weight, _arg(args, kwargs, 3, "stride", 1),
                          _arg(args, kwargs, 4, "padding", 0), _arg(args, kwargs, 5, "dilation", 1),
                          _arg(args, kwargs, 6, "groups", 1))

    if name in ("linear", "addmm"):
        # linear(x, W[out, in], b); addmm(b, x, W[in, out])
        pos = 1 if name == "linear" else 2
        w = tensors[pos].shape if len(tensors) > pos else None
        if w is None or len(w) != 2:
            return "linear", {}
        out_f, in_f = (w[0], w[1]) if name == "linear" else (w[1], w[0])
        return "linear", {"in_features": int(in_f), "out_features": int(out_f)}

    if name in ("embedding", "embedding_bag"):
        tables = [t.shape for t in params if len(t.shape) == 2]
        if tables:
            return "embedding", {"in_features": int(tables[0][0]), "out_features": int(tables[0][1])}
        return "embedding", {}

    if name in ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                "max_pool2d_with_indices", "max_pool1d_with_indices", "max_pool3d_with_indices"):
        rank = int(name.split("pool")[1][0])
        return _pool(name.split("_with")[0], args, kwargs, rank)
    if name.startswith("adaptive_") or name == "_adaptive_avg_pool2d":
        rank = int(name.split("pool")[1][0])
        return _adaptive("max" if "max" in name else "avg", args, kwargs, rank)

    if name in ("layer_norm", "native_layer_norm", "rms_norm"):
        shape = _arg(args, kwargs, 1, "normalized_shape", [])
        return canonical_torch(name), {"features": int(math.prod(_ints(shape, 1)))}
    if name in ("group_norm", "native_group_norm"):
        feats = [t.shape[0] for t in params if len(t.shape) == 1]
        attrs = {"groups": int(_arg(args, kwargs, 1, "num_groups", 1))}
        if feats:
            attrs["features"] = int(feats[0])
        return "group_norm", attrs
    if name in ("batch_norm", "instance_norm", "_native_batch_norm_legit_no_training",
                "native_batch_norm", "_native_batch_norm_legit"):
        feats = [t.shape[0] for t in params if len(t.shape) == 1]
        return canonical_torch(name), ({"features": int(feats[0])} if feats else {})

    if name in ("multi_head_attention_forward",):
        return "attention", {}
    return canonical_torch(name), {}


def torch_layer_kind(layer: Any) -> str:
    """The torch.nn layer a module is or derives from, else its own class name: `Conv2d` for an
    NFNet's `WSConv2d(nn.Conv2d)` and for the `ParametrizedConv2d` that weight norm swaps in."""
    for cls in type(layer).__mro__:
        if cls.__module__.startswith("torch.nn.modules.") and cls.__name__ != "Module":
            return cls.__name__
    return type(layer).__name__


def describe_module(module: Any) -> tuple[str, dict[str, Any]] | None:
    """Canonical type and attributes of a leaf `nn.Module`, or None when it is not a known leaf."""
    cls = torch_layer_kind(module)
    weight = getattr(module, "weight", None)
    if cls.startswith(("Conv", "LazyConv")) and weight is not None:
        return conv_attrs(tuple(weight.shape), module.stride, module.padding, module.dilation,
                          module.groups, transposed="Transpose" in cls)
    if cls in ("MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d"):
        rank = int(cls[-2])
        kernel = _ints(module.kernel_size, rank)
        return MODULE_ALIASES[cls], {"kernel": kernel, "stride": _ints(module.stride or kernel, rank)}
    if cls.startswith("Adaptive"):
        kind = "max" if "Max" in cls else "avg"
        return _adaptive(kind, [None, module.output_size], {}, int(cls[-2]))
    if cls not in MODULE_ALIASES:
        return None
    op = MODULE_ALIASES[cls]
    if cls in ("LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"):
        matrices = [tuple(p.shape) for n, p in module.named_parameters() if n.startswith("weight")]
        return op, recurrent_attrs(matrices, cls.endswith("Cell"))
    if op in FOLDED or op in NON_DATA:
        return op, {}
    attrs: dict[str, Any] = {}
    if weight is not None and hasattr(weight, "shape") and len(weight.shape) == 2:
        if op == "linear":
            attrs = {"in_features": int(weight.shape[1]), "out_features": int(weight.shape[0])}
        elif op == "embedding":
            attrs = {"in_features": int(weight.shape[0]), "out_features": int(weight.shape[1])}
    elif op.endswith("_norm") and weight is not None and hasattr(weight, "shape"):
        attrs = {"features": int(math.prod(weight.shape))}
    return op, attrs


def einsum_macs(equation: str, shapes: list[Shape | None]) -> int | None:
    """Multiply-accumulates of `einsum(equation, *operands)` with operands of `shapes`: for two
    operands, the product of every index's size (each output element sums over the contracted
    indices); more operands contract left to right. None when the shapes do not fit the equation."""
    if len(shapes) < 2 or any(s is None for s in shapes) or not isinstance(equation, str):
        return None
    spec = equation.replace(" ", "")
    inputs_text, _, output_text = spec.partition("->")
    terms = inputs_text.split(",")
    if len(terms) != len(shapes):
        return None
    sizes: dict[str, int] = {}
    letters: list[str] = []
    for term, shape in zip(terms, shapes):
        if "..." in term:  # the broadcast dims get their own letters, aligned from the right
            head, _, tail = term.partition("...")
            extra = len(shape) - len(head) - len(tail)
            term = head + "".join(chr(0x100 + extra - k) for k in range(extra, 0, -1)) + tail
        if len(term) != len(shape):
            return None
        for letter, size in zip(term, shape):
            sizes[letter] = max(sizes.get(letter, 1), int(size))
        letters.append(term)
    if "->" in spec:
        wanted = set(output_text.replace("...", "")) | {c for c in sizes if ord(c) >= 0x100}
    else:
        wanted = {c for c in sizes if sum(t.count(c) for t in letters) == 1}
    total, left = 0, set(letters[0])
    for k, right in enumerate(letters[1:], start=1):
        both = left | set(right)
        total += math.prod(sizes[c] for c in both)
        later = set("".join(letters[k + 1:])) | wanted
        left = {c for c in both if c in later}
    return total


_SDPA_CALLS = {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
               "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention_for_cpu",
               "_scaled_dot_product_cudnn_attention"}


def call_macs(name: str, args: list[Any], kwargs: dict[str, Any]) -> int | None:
    """MACs only the call itself can tell (the einsum equation is not in the graph); None: counted
    from the node's shapes as usual."""
    name = bare_name(name)
    if name in ("baddbmm", "addbmm"):  # the added input multiplies nothing
        first, second = (_arg(args, kwargs, 1, "batch1", None), _arg(args, kwargs, 2, "batch2", None))
        if isinstance(first, TensorArg) and isinstance(second, TensorArg) and first.shape and second.shape \
                and len(first.shape) == 3 and len(second.shape) == 3:
            return math.prod(first.shape) * int(second.shape[-1])
        return None
    if name in _SDPA_CALLS:  # q, k, v may come as keywords (diffusers' attention dispatch)
        q, k, v = (_arg(args, kwargs, i, key, None) for i, key in enumerate(("query", "key", "value")))
        if all(isinstance(t, TensorArg) and t.shape and len(t.shape) >= 2 for t in (q, k, v)):
            return math.prod(q.shape[:-1]) * int(k.shape[-2]) * (int(q.shape[-1]) + int(v.shape[-1]))
        return None
    if name != "einsum" or not args or not isinstance(args[0], str):
        return None
    operands = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else list(args[1:])
    if not all(isinstance(t, TensorArg) for t in operands):
        return None
    return einsum_macs(args[0], [t.shape for t in operands])


def module_macs(module: Any, in_shapes: list[Shape | None]) -> int | None:
    """MACs of a leaf module whose inputs' layout only the module knows: nn.MultiheadAttention's
    `batch_first`. None: counted from the node's shapes as usual."""
    from narcli.graph.canonical import multi_head_attention_macs

    if type(module).__name__ != "MultiheadAttention" or len(in_shapes) < 1 or not in_shapes[0]:
        return None
    q = in_shapes[0]
    k = in_shapes[1] if len(in_shapes) > 1 and in_shapes[1] else q
    if len(q) != 3 or len(k) != 3:
        return None
    if getattr(module, "batch_first", False):
        q, k = (q[1], q[0], q[2]), (k[1], k[0], k[2])
    return multi_head_attention_macs(int(q[0]), int(k[0]), int(q[1]), int(q[2]))
