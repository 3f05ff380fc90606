"""Turn a tracer's raw operator list into a canonical `ArchGraph`.

Every tracer (torch.export, torch.fx, run-time recording, ONNX) emits the same `RawGraph`; the
rules that make graphs from different tracers agree live here, once:
- only data that flows from the model's inputs makes nodes (parameters, constants and shape
  arithmetic do not);
- glue that only moves data (`vocab.FOLDED`) is removed;
- common spellings of one operation are fused: `matmul` by a weight is `linear`, a bias `add`
  after it belongs to it, `matmul -> softmax -> matmul` is `attention`, several slices of one
  tensor are one `split`, a mean over all spatial positions is `global_avg_pool`;
- a batch norm right after a convolution or linear layer is folded into it (its parameters
  included), as ONNX exporters and inference graphs do;
- hand-written idioms take their canonical form (`idioms.py`: the rule table for activations,
  norms, global pools, 1×1 convs on 1×1 maps and patch embeddings).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.idioms import normalise_idioms
from narcli.graph.vocab import FOLDED, NON_DATA, OPS, RECURRENT

Shape = tuple[int, ...]


@dataclass
class RawOp:
    """One operator call as a tracer saw it. Inputs and outputs name values."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: Shape | None = None
    in_shapes: list[Shape | None] = field(default_factory=list)
    scope: str = ""
    macs: int | None = None  # counted by the tracer where shapes cannot tell (an einsum's equation)


@dataclass
class RawGraph:
    inputs: list[tuple[str, Shape | None]]
    ops: list[RawOp]
    outputs: list[str]
    param_shapes: dict[str, Shape] = field(default_factory=dict)
    # count a parameter at every node that uses it, not once (see trace_onnx)
    count_params_per_use: bool = False
    param_count: int | None = None  # every parameter once, where param_shapes also holds aliases
    input_dtypes: dict[str, str] = field(default_factory=dict)  # data input -> dtype name
    guessed_values: int = 0  # data-dependent reads the run-time tracer answered without data


# Ops between the two matmuls of an attention that do not change what it is.
_ATTENTION_GLUE = {"mul", "div", "add", "sub", "masked_fill", "where", "clamp"}
_MATMULS = {"matmul", "bmm"}


@dataclass
class _Work:
    """A node under construction, before fusion and ordering."""

    op: str
    shape: Shape | None
    attrs: dict[str, Any]
    scope: str
    params: set[str]
    in_shapes: list[Shape | None]
    parents: list[int] = field(default_factory=list)
    const_inputs: list[str] = field(default_factory=list)
    alive: bool = True
    macs: int = 0
    counted: int | None = None  # RawOp.macs


def build_graph(raw: RawGraph, meta: dict[str, Any] | None = None) -> ArchGraph:
    """Canonical graph of `raw`, with total parameters and MACs in `meta`."""
    work: list[_Work] = []
    producer: dict[str, int] = {}  # data value -> node index
    alias: dict[str, str] = {}  # folded value -> the value it stands for

    def resolve(value: str) -> str:
        while value in alias:
            value = alias[value]
        return value

    constant_macs = 0
    derived: dict[str, tuple[frozenset[str], int]] = {}  # see _derive
    for name, shape in raw.inputs:
        producer[name] = len(work)
        work.append(_Work("input", shape, {}, "", set(), []))

    for op in raw.ops:
        if op.op in NON_DATA:
            continue
        data_in = [resolve(v) for v in op.inputs if resolve(v) in producer]
        if not data_in:  # computed from constants and parameters only: no node, but forward still
            # runs it (a relative-position MLP over a fixed grid), so its MACs are the model's
            constant_macs += _macs(_Work(op.op, op.shape, dict(op.attrs), "", set(), list(op.in_shapes),
                                         counted=op.macs))
            _derive(op, raw.param_shapes, derived)
            continue
        if op.op in FOLDED or _is_noop_slice(op):
            for out in op.outputs:
                if out != data_in[0]:  # an in-place op returns its own input
                    alias[out] = data_in[0]
            continue
        node = _Work(
            op.op,
            tuple(op.shape) if op.shape is not None else None,
            dict(op.attrs),
            op.scope,
            {v for v in op.inputs if v in raw.param_shapes},
            list(op.in_shapes),
            parents=list(dict.fromkeys(producer[v] for v in data_in)),
            const_inputs=[v for v in op.inputs if v in raw.param_shapes],
            counted=op.macs,
        )
        if OPS.get(op.op) == "convolution" or op.op == "linear":
            _take_derived_weight(node, op, derived)
        for out in op.outputs:
            producer[out] = len(work)
        work.append(node)

    for value in raw.outputs:
        value = resolve(value)
        if value in producer:
            src = producer[value]
            work.append(_Work("output", work[src].shape, {}, "", set(), [], parents=[src]))

    _fuse_weight_matmuls(work, raw.param_shapes)
    _fuse_biases(work, raw.param_shapes)
    _fuse_attention(work)
    _merge_slices(work)
    _fold_unrolled_steps(work)
    _fold_batch_norms(work)
    _spatial_means_to_pools(work)

    for node in work:
        node.macs = node.macs or _macs(node)  # fused attention already knows its MACs
    graph = _assemble(work, raw.param_shapes)
    graph.meta.update(meta or {})  # the input dtypes, which the graph-structure rule reads
    graph = normalise_idioms(graph)  # in canonical order when a rule changed it
    if raw.guessed_values:
        graph.meta["guessed_values"] = raw.guessed_values
    if constant_macs:
        graph.meta["constant_macs"] = int(graph.meta.get("constant_macs", 0)) + constant_macs
    if raw.count_params_per_use:
        graph.meta["params"] = sum(n.params for n in graph.nodes)
    elif raw.param_count is not None:
        graph.meta["params"] = raw.param_count
    else:
        graph.meta["params"] = sum(math.prod(s) for s in raw.param_shapes.values())
    return graph


def _derive(op: RawOp, param_shapes: dict[str, Shape], derived: dict[str, tuple[frozenset[str], int]]) -> None:
    """Note what a value computed from parameters alone stands for: the parameters it comes from,
    and the elements its operations read and write. A reparametrised weight (weight standardisation,
    weight norm) is computed so at every call, and the layer that uses it owns those parameters."""
    sources: set[str] = set()
    moved = 0 if op.op in FOLDED else sum(_count(s) for s in (op.shape, *op.in_shapes))
    for value in op.inputs:
        if value in param_shapes:
            sources.add(value)
        elif value in derived:
            sources |= derived[value][0]
            moved += derived[value][1]
    if sources:
        for out in op.outputs:
            derived[out] = (frozenset(sources), moved)


def _take_derived_weight(node: _Work, op: RawOp, derived: dict[str, tuple[frozenset[str], int]]) -> None:
    """A convolution or linear layer whose weight is computed from parameters (`_derive`) owns them,
    as it would own a plain weight; `reparam_elements` keeps what computing it costs at each call."""
    taken = [derived[v] for v in dict.fromkeys(op.inputs) if v in derived]
    if taken:
        for sources, _ in taken:
            node.params |= sources
        node.attrs["reparam_elements"] = sum(moved for _, moved in taken)


def _count(shape: Shape | None) -> int:
    return math.prod(d for d in shape if isinstance(d, int)) if shape else 0


def _is_noop_slice(op: RawOp) -> bool:
    # `x[:, :H]` on a tensor already H long; torch.export drops these, run-time recording sees them
    return op.op == "slice" and op.shape is not None and bool(op.in_shapes) and \
        op.in_shapes[0] is not None and tuple(op.in_shapes[0]) == tuple(op.shape)


# -- fusion passes ------------------------------------------------------------------------------
def _children(work: list[_Work]) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in work]
    for i, node in enumerate(work):
        if node.alive:
            for p in node.parents:
                kids[p].append(i)
    return kids


def _reroute(work: list[_Work], kids: list[list[int]], old: int, new: int) -> None:
    """Consumers of node `old` read from node `new` instead (`kids` is kept up to date)."""
    for c in kids[old]:
        work[c].parents = list(dict.fromkeys(new if p == old else p for p in work[c].parents))
        if c not in kids[new]:
            kids[new].append(c)
    kids[new] = [c for c in kids[new] if c != old]
    kids[old] = []


def _fuse_weight_matmuls(work: list[_Work], param_shapes: dict[str, Shape]) -> None:
    """`x @ W` with a weight matrix W is a linear layer, whichever tracer saw it."""
    for node in work:
        if node.op in _MATMULS | {"einsum"} and len(node.parents) == 1 and node.const_inputs:
            weight = param_shapes[node.const_inputs[0]]
            if len(weight) == 2:
                node.op = "linear"
                # `x @ W` maps weight[0] features to weight[1]; `W @ x` (the weight first) the reverse
                # and `cdist(x, W)` (a codebook's rows are its outputs, as in F.linear) the reverse too
                first, out = (node.in_shapes[0] if node.in_shapes else None) or (), node.shape or ()
                weight_first = tuple(first) == tuple(weight) and len(node.in_shapes) > 1 \
                    and tuple(node.in_shapes[1] or ()) != tuple(weight)
                rows_out = first and out and weight[0] != weight[1] and (first[-1], out[-1]) == (weight[1], weight[0])
                in_at = 1 if weight_first or rows_out else 0
                node.attrs.setdefault("in_features", int(weight[in_at]))
                node.attrs.setdefault("out_features", int(weight[1 - in_at]))


def _fuse_biases(work: list[_Work], param_shapes: dict[str, Shape]) -> None:
    """A vector added right after a linear or convolution is that layer's bias."""
    kids = _children(work)
    for i, node in enumerate(work):
        if not (node.alive and node.op == "add" and len(node.parents) == 1):
            continue
        if len(node.const_inputs) != 1:
            continue
        src = work[node.parents[0]]
        bias = param_shapes[node.const_inputs[0]]
        width = src.attrs.get("out_features", src.attrs.get("out_channels"))
        if src.op == "linear" and len(bias) == 1 and bias[0] == width and len(kids[node.parents[0]]) == 1:
            src.params |= node.params
            node.alive = False
            _reroute(work, kids, i, node.parents[0])


def _fuse_attention(work: list[_Work]) -> None:
    """`matmul -> [scale, mask] -> softmax -> matmul` between activations is one attention."""
    kids = _children(work)

    def only_child(i: int) -> int | None:
        return kids[i][0] if len(kids[i]) == 1 else None

    for s, soft in enumerate(work):
        if not (soft.alive and soft.op == "softmax" and len(soft.parents) >= 1):
            continue
        chain = [s]
        up = soft.parents[0]
        while work[up].op in _ATTENTION_GLUE and only_child(up) is not None and work[up].parents:
            chain.append(up)
            up = work[up].parents[0]
        first = work[up]
        if first.op not in _MATMULS or len(first.parents) != 2 or only_child(up) is None:
            continue
        down = only_child(s)
        if down is None or work[down].op not in _MATMULS or len(work[down].parents) != 2:
            continue
        if work[down].parents[0] != s:
            continue
        second = work[down]
        # a scale applied to q or k on their own belongs to the attention too
        qk = []
        for p in first.parents:
            pnode = work[p]
            if pnode.op in {"mul", "div"} and len(pnode.parents) == 1 and only_child(p) == up:
                chain.append(p)
                qk.append(pnode.parents[0])
            else:
                qk.append(p)
        macs = _macs(first) + _macs(second)
        second.op = "attention"
        second.parents = list(dict.fromkeys(qk + [second.parents[1]]))
        second.attrs = {}
        second.macs = macs
        for i in chain + [up]:
            work[i].alive = False


def _merge_slices(work: list[_Work]) -> None:
    """Several slices taken from one tensor are one split (`unbind`, `chunk`, ONNX `Slice`s)."""
    kids = _children(work)
    for i in range(len(work)):
        slices = [c for c in kids[i] if work[c].op == "slice" and work[c].parents == [i]]
        if len(slices) < 2:
            continue
        keep = slices[0]
        work[keep].op = "split"
        for other in slices[1:]:
            work[other].alive = False
            _reroute(work, kids, other, keep)


def _fold_unrolled_steps(work: list[_Work]) -> None:
    """A recurrent cell called once per time step in a Python loop is one recurrence, as
    `nn.LSTM` is: the calls of one cell (same scope, same weights) become one node that counts the
    steps. Not when a step reads something computed after the first step outside the chain
    (feedback, as in a decoder feeding its prediction back): folding that would make a cycle."""
    groups: dict[tuple, list[int]] = {}
    for i, node in enumerate(work):
        if node.alive and node.attrs.get("step") and node.op in RECURRENT:
            groups.setdefault((node.op, node.scope, frozenset(node.params)), []).append(i)
    kids = _children(work)
    for members in groups.values():
        if len(members) < 2:
            continue
        keep, inside = members[0], set(members)
        outside = [p for m in members for p in work[m].parents if p not in inside]
        if any(p > keep for p in outside):
            continue
        work[keep].parents = list(dict.fromkeys(outside))
        work[keep].attrs["steps"] = len(members)
        work[keep].shape = work[members[-1]].shape
        for other in members[1:]:
            work[other].alive = False
        for other in members[1:]:
            kids[other] = [c for c in kids[other] if c not in inside]
            _reroute(work, kids, other, keep)
        _read_the_sequence(work, kids, keep, inside)


def _read_the_sequence(work: list[_Work], kids: list[list[int]], keep: int, inside: set[int]) -> None:
    """The usual loop, `for t in range(T): cell(x[:, t])`, reads one sequence through a split. Then the
    folded node reads the sequence itself and its consumers read its last step, as `nn.LSTM` and
    `out[:, -1]` do, so that both spellings of one recurrence make one graph."""
    node = work[keep]
    if len(node.parents) != 1 or node.shape is None:
        return
    s = node.parents[0]
    split = work[s]
    if split.op not in ("split", "slice") or len(split.parents) != 1 or \
            any(work[c].alive and c not in inside for c in kids[s]):
        return
    sequence = work[split.parents[0]].shape
    steps = node.attrs.get("steps", 1)
    if not sequence or len(sequence) != 3 or steps not in (sequence[0], sequence[1]):
        return
    last = node.shape
    node.parents = [split.parents[0]]
    node.shape = (*sequence[:-1], last[-1])
    for key in ("step", "steps"):  # a whole recurrence now: its MACs follow from its shape
        node.attrs.pop(key, None)
    consumers = [c for c in kids[keep] if work[c].alive and c not in inside and c != s]
    split.op, split.attrs, split.shape, split.parents = "slice", {}, last, [keep]
    for c in consumers:
        work[c].parents = list(dict.fromkeys(s if p == keep else p for p in work[c].parents))


def _fold_batch_norms(work: list[_Work]) -> None:
    """Batch norm after a conv or linear layer is an affine map the layer absorbs at inference."""
    kids = _children(work)
    for i, node in enumerate(work):
        if not (node.alive and node.op == "batch_norm" and len(node.parents) == 1):
            continue
        src = node.parents[0]
        if ("conv" in work[src].op or work[src].op == "linear") and len(kids[src]) == 1:
            work[src].params |= node.params
            node.alive = False
            _reroute(work, kids, i, src)


def _spatial_means_to_pools(work: list[_Work]) -> None:
    """`x.mean((2, 3))` over a feature map is global average pooling, however it is spelled."""
    for node in work:
        if node.op != "mean" or not node.in_shapes or not node.in_shapes[0] or not node.shape:
            continue
        before, after = node.in_shapes[0], node.shape
        if len(before) >= 3 and tuple(after[:2]) == tuple(before[:2]) and math.prod(after[2:]) == 1 \
                and math.prod(before[2:]) > 1:
            node.op = "global_avg_pool"


# -- measurement and assembly --------------------------------------------------------------------
def _macs(node: _Work) -> int:
    """Multiply-accumulates of the compute-heavy ops; the rest count as zero (by convention)."""
    if node.counted is not None:
        return node.counted
    out = math.prod(node.shape) if node.shape else 0
    op, a = node.op, node.attrs
    if "conv" in op:
        kernel = math.prod(a.get("kernel", [1]))
        groups = max(int(a.get("groups", 1)), 1)
        if op.startswith("conv_transpose"):
            first = node.in_shapes[0] if node.in_shapes else None
            inp = math.prod(first) if first else 0
            return inp * kernel * int(a.get("out_channels", 0)) // groups
        return out * kernel * int(a.get("in_channels", 0)) // groups
    if op == "linear":
        return out * int(a.get("in_features", 0))
    if op in RECURRENT and node.shape:
        # every weight matrix once per step of every sequence: (batch x time) steps for a whole
        # recurrence (output [batch, time, hidden] or [time, batch, hidden]), batch per cell call
        steps = math.prod(node.shape[:-1]) * int(a.get("steps", 1))
        return steps * int(a.get("matrix_size", 0))
    if op in _MATMULS and node.in_shapes and node.in_shapes[0]:
        return out * int(node.in_shapes[0][-1])
    if op == "attention" and node.in_shapes and len(node.in_shapes) >= 2:
        return _attention_macs(node.in_shapes)
    return 0


def multi_head_attention_macs(length: int, source: int, batch: int, width: int) -> int:
    """nn.MultiheadAttention over `length` queries and `source` keys: the q, k, v and output
    projections and the two attention products (the heads split `width`, so it cancels out)."""
    projections = (2 * length + 2 * source) * batch * width * width
    return projections + 2 * length * batch * source * width


def _attention_macs(in_shapes: list[Shape | None]) -> int:
    """q·kᵀ and attention·v of a fused attention call, plus its own projections when it holds them.
    `multi_head_attention_forward` (nn.MultiheadAttention) takes (length, batch, width) inputs and
    its weights, a 2-D (3·width, width) or (width, width) matrix among them; other calls take
    (..., length, width) q, k, v."""
    q, k = in_shapes[0], in_shapes[1]
    if not q or not k or len(k) < 2:
        return 0
    weights = [s for s in in_shapes[3:] if s and len(s) == 2]
    if len(q) == 3 and len(k) == 3 and weights:
        return multi_head_attention_macs(int(q[0]), int(k[0]), int(q[1]), int(q[2]))
    v = in_shapes[2] if len(in_shapes) > 2 and in_shapes[2] and len(in_shapes[2]) == len(k) else q
    return math.prod(q[:-1]) * int(k[-2]) * (int(q[-1]) + int(v[-1]))


def _assemble(work: list[_Work], param_shapes: dict[str, Shape]) -> ArchGraph:
    index: dict[int, int] = {}
    nodes: list[Node] = []
    for i, w in enumerate(work):
        if not w.alive:
            continue
        index[i] = len(nodes)
        params = sum(math.prod(param_shapes[p]) for p in w.params)
        nodes.append(Node(w.op, list(w.shape) if w.shape is not None else None, dict(w.attrs),
                          int(params), int(w.macs), w.scope))
    edges = sorted({(index[p], index[i]) for i, w in enumerate(work) if w.alive
                    for p in w.parents if p in index})
    return ArchGraph(nodes, edges).canonicalize()
