"""One canonical form for idioms that compute the same thing: the rule table, applied to an `ArchGraph`.

People write the same operation many ways: `x * torch.sigmoid(x)` or `nn.SiLU()`,
`x * F.relu6(x + 3) / 6` or `nn.Hardswish()`, a LayerNorm by hand, an SE block with `Linear` or
with a 1×1 `Conv2d`, a patch embedding as a strided conv or as reshape + `Linear`. The tracer sees
different operators; the architecture is the same, so the canonical graph must be too.

Rules come in two kinds:
- **Regions** (`REGION_RULES`): a single-entry, single-exit group of elementwise/reduction nodes
  (every node's inputs come from the group or from its one entry; only the exit is read from
  outside) whose operation multiset is a known spelling of one operation becomes that operation.
  Constants (the 3 and 6 of a hard sigmoid) are not graph nodes, so a region is recognised by its
  operations alone; regions are small (at most `MAX_REGION` nodes).
- **Single nodes** (`_rewrite_node`): a pooling over the whole feature map is `global_avg_pool`, a
  1×1 convolution on a 1×1 map is `linear`, a `linear` applied to image patches of the model's input
  is the strided convolution it computes.

- **Attention** (`attention_idioms.fuse_attention`): `matmul(q, kᵀ)`, then scaling/masking (`* scale`, `/ √d`,
  `+ mask`, `masked_fill`, `where`), `softmax`, then `matmul(·, v)` is the fused `attention` that
  `scaled_dot_product_attention` and `nn.MultiheadAttention` trace to. A `* scale` applied to q
  alone right before the first matmul is part of it too. The canonicaliser already fuses the plain
  two-operand form while it builds a graph; this catches the rest (q and k read from one split,
  einsum) and graphs stored before.
- **Window views**: `Tensor.unfold` folds away like a reshape (patches cut with it, then a
  `Linear`, are a patch embedding).
- **Attention projections** (`attention_idioms.attention_projections`): however q, k and v are projected (one
  module, one fused `Linear` and a split, or one `Linear` each), the graph says one `linear` from
  each source into `attention` (a self-attention reads one source; cross-attention two: q from the
  latest, k/v from the other) and one `linear` out. A split or a head repetition whose only reader
  is the attention moves data and folds away; so does a constant factor on q (`q_proj(x) *
  scaling`, then attention at scale 1, as OPT and Whisper write it), which is the attention's own
  scale.
- **Gates and causal convolutions** (`gate_idioms`): a convolution cut back to its input's length
  after padding both sides is the convolution at that length; one layer split into k parts, each
  read once, is k layers.
- **Graph structure** (`structure_idioms`): what a graph network computes from its integer edge
  index alone (self loops, degrees, normalisation weights) folds away, as it does when the graph
  is built inside `forward` from constants; a per-edge weight becomes a scale (`mul`, one input).
- **Padding**: a separate zero pad whose only readers are convolutions or pools is part of them
  (how the padding is spelled, not what is computed).

`normalise_idioms` applies them all until nothing changes. It keeps a valid topological order, so it is
safe on stored graphs as well as inside the canonicaliser (it is idempotent).

| rule | written as | becomes |
|---|---|---|
| silu | `x * sigmoid(x)` | `silu` |
| hard_sigmoid | `relu6(x + 3) / 6`, `hardtanh`/`clamp(x + 3, 0, 6) / 6` or `* (1/6)` | `hard_sigmoid` |
| hard_swish | `x * hard_sigmoid(x)`, `x * relu6(x + 3) / 6` | `hard_swish` |
| gelu | `0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))`, `0.5x(1 + erf(x/√2))`, `x * sigmoid(1.702x)` | `gelu` |
| mish | `x * tanh(softplus(x))` | `mish` |
| layer_norm | `(x - mean) / sqrt(var + eps)` (any spelling), then `* w + b` | `layer_norm` (w, b absorbed) |
| rms_norm | `x * rsqrt(mean(x²) + eps)` (any spelling), then `* w` | `rms_norm` (w absorbed) |
| global pool | `avg_pool2d(x, k)` with k = map size, adaptive pool to 1 | `global_avg_pool` (also max) |
| linear | 1×1 conv (groups 1) on a 1×1 map; a conv whose unpadded kernel covers its whole input map (LeNet's C5, a DCGAN critic's last layer); a transposed conv from a 1×1 map to its k×k kernel (a DCGAN generator's first layer) | `linear` |
| clipped ReLU | `relu(x).clamp(max=c)` (Deep Speech's ReLU capped at 20) | `relu6`, as `hardtanh(0, c)` traces |
| patch embedding | reshape, rearrange or `unfold` into k×k patches + `linear` on the input image | `conv2d` k×k, stride k |
| attention | `softmax(q @ kᵀ / √d + mask) @ v` (matmul, bmm or einsum; any scaling/masking) | `attention` |
| relu6 | `F.relu6` / `nn.ReLU6` (traced as `hardtanh(0, 6)`) | `relu6` |
| padding | `F.pad` / `nn.ZeroPad2d` right before a convolution or pool (TF "same" padding) | the conv/pool alone |
| linear on a flattened view | `addmm` over `x.view(-1, d)` (GPT-2's `Conv1D`) | `linear` shaped like its input |
| q/k/v projection | `nn.MultiheadAttention` (one module); one `Linear(d, 3d)` then split; three `Linear(d, d)` | one `linear` into `attention`, one `linear` out |
| rotary embedding | interleaved pairs, `stack(x₁cos − x₂sin, x₁sin + x₂cos)` (llama2.c) | rotate-half, `x·cos + cat(−x₂, x₁)·sin` |
| concatenation | `cat([x])` of one tensor; `cat(cat(a, b), c)` (DenseNet written as a chain) | folded; `cat(a, b, c)` |
| probability head | `log_softmax`/`softmax` of the final logits of a `linear` or convolution, right before the output (per pixel too); a `sigmoid` there over one value per sample (a critic's score) | the logits |
| grouped-query heads | k/v heads repeated (`repeat_interleave`, `repeat`) right before attention | folded (like `expand`) |
| heads as modules | one attention module per head, outputs concatenated (a norm recomputed per head is one) | one multi-head `attention`, one `linear` in |
| query scale | `q_proj(x) * scaling`, then a fused attention at scale 1 (OPT, Whisper) | folded: the attention's own scale |
| causal trim | a convolution padded both sides, cut back to its input's length (`Chomp1d`) | the convolution at that length (as after a left pad) |
| graph structure | degrees, `deg ** -0.5`, self loops, per-edge weights computed from an integer `edge_index` input alone | folded (as when the graph is built inside `forward`) |
| fused layer, split | one conv/`Linear` of k×C outputs, split into k parts each read once (WaveNet gates, `gate_up_proj`) | k layers of C outputs |
| parameter-free loop | ≥ 32 copies of a parameter-free step in one scope (farthest-point sampling, a sequential selective scan), `loop_idioms.py` | one step, its copies counted in `repeats` |
"""

from __future__ import annotations

import math
from collections import Counter

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.attention_idioms import attention_projections, fuse_attention, merge_heads, rotary_rotate_half
from narcli.graph.attention_idioms import fold as _fold
from narcli.graph.gate_idioms import fold_causal_trim, split_fused_layer
from narcli.graph.loop_idioms import LOOP_READS, fold_loops
from narcli.graph.structure_idioms import fold_graph_structure
from narcli.graph.vocab import OPS

MAX_REGION = 12

# Operations that appear inside hand-written activations and normalisations.
IDIOM_OPS = frozenset(
    "add sub mul div pow sqrt rsqrt reciprocal tanh erf sigmoid softplus relu6 hardtanh clamp "
    "mean var global_avg_pool exp neg hard_sigmoid".split()
)


def _spellings(*forms: str) -> list[Counter]:
    return [Counter(form.split()) for form in forms]


# rule name -> (resulting op, the operation multisets that spell it). `mul2` (likewise add2, sub2,
# div2) is a product of two tensors; plain `mul` scales one tensor by a constant. That is what
# tells `relu6(x + 3) * (1/6)` (a hard sigmoid) from `x * relu6(x + 3)` (half a hard swish).
REGION_RULES: dict[str, tuple[str, list[Counter]]] = {
    "silu": ("silu", _spellings("sigmoid mul2")),
    "hard_sigmoid": ("hard_sigmoid", _spellings(
        "add relu6 div", "add relu6 mul", "add hardtanh div", "add hardtanh mul", "add clamp div",
        "add clamp mul")),
    "hard_swish": ("hard_swish", _spellings(
        "hard_sigmoid mul2", "add relu6 mul2 div", "add relu6 mul2 mul", "add hardtanh mul2 div",
        "add hardtanh mul2 mul", "add clamp mul2 div", "add clamp mul2 mul")),
    "gelu": ("gelu", _spellings(
        "mul pow mul add2 mul tanh add mul2",  # 0.5x(1 + tanh(c(x + 0.044715 x**3)))
        "mul mul mul2 mul add2 mul tanh add mul2",  # the same with x * x * x
        "mul div erf add mul2", "mul mul erf add mul2",  # 0.5x(1 + erf(x / sqrt 2)), or x * 0.7071
        "div erf add mul2 div", "mul erf add mul2 div",  # x(1 + erf(...)) / 2
        "div erf add mul2 mul", "mul erf add mul2 mul",  # x(1 + erf(...)) * 0.5
        "mul sigmoid mul2")),  # quick GELU, x * sigmoid(1.702 x)
    "mish": ("mish", _spellings("softplus tanh mul2")),
}

_REDUCTIONS = {"mean", "var", "global_avg_pool"}
_ROOTS = {"sqrt", "rsqrt"}
_NORM_OPS = {"mean", "var", "global_avg_pool", "sub", "pow", "mul", "add", "sqrt", "rsqrt", "div", "reciprocal"}


def _norm_rule(signature: Counter, exit_: Node, entry: Node) -> str | None:
    """A hand-written layer norm (centred) or RMS norm (not centred): a reduction and a root, ending
    in the scaling of a tensor of the entry's shape (not in the statistics alone)."""
    ops = Counter()
    for op, count in signature.items():
        ops[op.rstrip("2")] += count
    if sum(ops.values()) < 4 or not set(ops) <= _NORM_OPS or exit_.op not in ("mul", "div"):
        return None
    if exit_.shape is None or exit_.shape != entry.shape:
        return None
    if not (set(ops) & _REDUCTIONS) or not (set(ops) & _ROOTS or "var" in ops):
        return None
    return "layer_norm" if ("sub" in ops or "var" in ops) else "rms_norm"


def _match(ops: Counter, exit_: Node, entry: Node) -> str | None:
    for op, spellings in REGION_RULES.values():
        if ops in spellings:
            return op
    return _norm_rule(ops, exit_, entry)


MAX_PASSES = 8  # a pass can make the next rule's pattern (Funnel's and XLNet's attention took three)


def normalise_idioms(graph: ArchGraph) -> ArchGraph:
    """`graph` with every idiom of the rule table in its canonical form (the same object if none;
    else in canonical node order), passes repeated until one changes nothing, so that the result is
    a fixed point: a stored graph upgraded and a fresh trace of its model agree."""
    graph = fold_graph_structure(graph)  # reads the input dtypes in meta; once is enough
    while True:
        for _ in range(MAX_PASSES):
            normal = _normalise_once(graph)
            if normal is graph:
                break
            graph = normal.canonicalize()  # the rules read nodes in order: the next pass sees the canonical one
        rolled = fold_loops(graph)  # after the rules, which read each step as written
        if rolled is graph:
            return graph
        graph = rolled


def _normalise_once(graph: ArchGraph) -> ArchGraph:
    nodes = [Node(n.op, n.shape, dict(n.attrs), n.params, n.macs, n.scope) for n in graph.nodes]
    parents: list[list[int]] = [[] for _ in nodes]
    children: list[list[int]] = [[] for _ in nodes]
    for s, d in graph.edges:
        parents[d].append(s)
        children[s].append(d)
    alive = [True] * len(nodes)
    order = [float(i) for i in range(len(nodes))]  # new nodes slot in between (projections)
    changed = False
    for i in range(len(nodes)):
        if len(parents[i]) == 1 and (nodes[i].op in _WINDOW_VIEWS or _is_padding(i, nodes, children)):
            if nodes[i].op == "pad":
                _pad_into_readers(i, nodes, parents, children)
            _fold(i, parents, children, alive)
            changed = True
    for i in range(len(nodes)):
        if alive[i]:
            changed |= _rewrite_node(i, nodes, parents)
    for i in range(len(nodes)):
        if nodes[i].op == "softmax" and alive[i]:
            changed |= fuse_attention(i, nodes, parents, children, alive)
    for i in (i for i in range(len(nodes)) if alive[i]):
        single = len(parents[i]) == 1 and LOOP_READS not in nodes[i].attrs  # a folded step's cut input still joins
        if nodes[i].op == "concat" and single or _is_probability_head(i, nodes, parents, children):
            _fold(i, parents, children, alive)
            changed = True
        elif _is_relu_cap(i, nodes, parents, children):
            relu = nodes[parents[i][0]]
            nodes[parents[i][0]] = Node("relu6", relu.shape, dict(relu.attrs), relu.params, relu.macs, relu.scope)
            _fold(i, parents, children, alive)
            changed = True
        elif nodes[i].op == "concat":
            changed |= _flatten_concat(i, nodes, parents, children)
    for i in range(len(nodes)):
        if nodes[i].op == "stack" and alive[i]:
            changed |= rotary_rotate_half(i, nodes, parents, children, alive, order)
    for i in range(len(nodes)):
        if nodes[i].op == "attention" and alive[i]:
            changed |= attention_projections(i, nodes, parents, children, alive, order)
    for i in range(len(nodes)):
        if nodes[i].op == "concat" and alive[i]:
            changed |= merge_heads(i, nodes, parents, children, alive)
    for i in range(len(nodes)):
        if nodes[i].op == "slice" and alive[i]:
            changed |= fold_causal_trim(i, nodes, parents, children, alive)
    for i in range(len(nodes)):  # after the attention rules, which give q/k/v splits their own form
        if nodes[i].op == "split" and alive[i]:
            changed |= split_fused_layer(i, nodes, parents, children, alive, order)
    again = True
    while again:
        again = False
        for exit_ in range(len(nodes)):
            if alive[exit_] and nodes[exit_].op in IDIOM_OPS and _rewrite_region(exit_, nodes, parents,
                                                                                  children, alive):
                again = changed = True
    if not changed:
        return graph
    index = {old: new for new, old in enumerate(sorted((i for i in range(len(nodes)) if alive[i]),
                                                          key=order.__getitem__))}
    edges = sorted({(index[p], index[i]) for i in index for p in parents[i] if p in index})
    return ArchGraph([nodes[i] for i in index], edges, dict(graph.meta))


def _rewrite_region(exit_: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                    alive: list[bool]) -> bool:
    """Grow a region upwards from `exit_`; at the first size with one entry whose ops match a rule,
    replace it by one node (at the exit's place, so the order stays topological)."""
    region = {exit_}
    while len(region) <= MAX_REGION:
        outside = {p for r in region for p in parents[r]} - region
        # a split's children read different slices: `a * sigmoid(b)` of one split is a GLU, not a silu
        entry = next(iter(outside)) if len(outside) == 1 else None
        if entry is not None and len(region) >= 2 and nodes[entry].op != "split":
            op = _match(Counter(_signature(r, nodes, parents) for r in region), nodes[exit_], nodes[entry])
            if op is not None:
                _collapse(exit_, region, entry, op, nodes, parents, children, alive)
                return True
        grow = {p for p in outside if nodes[p].op in IDIOM_OPS and set(children[p]) <= region}
        if not grow:
            return False
        region |= grow
    return False


def _signature(i: int, nodes: list[Node], parents: list[list[int]]) -> str:
    op = nodes[i].op
    return f"{op}2" if op in ("add", "sub", "mul", "div") and len(parents[i]) >= 2 else op


def _collapse(exit_: int, region: set[int], entry: int, op: str, nodes: list[Node], parents: list[list[int]],
              children: list[list[int]], alive: list[bool]) -> None:
    params = sum(nodes[r].params for r in region)
    shape = nodes[exit_].shape
    # a norm's width is a structural attribute of the library layers (`features`)
    attrs = {"features": shape[-1]} if op in ("layer_norm", "rms_norm") and shape else {}
    node = Node(op, shape, attrs, params, 0, nodes[exit_].scope)
    for r in region - {exit_}:
        alive[r] = False
        parents[r] = []
        children[r] = []
    children[entry] = [c for c in children[entry] if c not in region] + [exit_]
    parents[exit_] = [entry]
    nodes[exit_] = node
    if op in ("layer_norm", "rms_norm"):
        _absorb_affine(exit_, nodes, parents, children, alive, ("mul", "add") if op == "layer_norm" else ("mul",))


def _absorb_affine(norm: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                   alive: list[bool], steps: tuple[str, ...]) -> None:
    """The `* weight (+ bias)` right after a hand-written norm is that norm's affine part."""
    for step in steps:
        kids = children[norm]
        if len(kids) != 1:
            return
        kid = kids[0]
        if nodes[kid].op != step or parents[kid] != [norm] or not nodes[kid].params:
            return
        nodes[norm].params += nodes[kid].params
        alive[kid] = False
        children[norm] = children[kid]
        for c in children[kid]:
            parents[c] = [norm if p == kid else p for p in parents[c]]
        parents[kid] = []
        children[kid] = []


# `Tensor.unfold` windows a tensor as a view; with the flattening after it, it is how some authors cut
# an image into patches (ViT-CIFAR style), so it moves data like a reshape and folds away like one
_WINDOW_VIEWS = {"unknown:unfold", "unfold"}


_POOLS = {f"{kind}_pool{d}d": f"global_{kind.split('_')[-1]}_pool"
          for kind in ("avg", "max", "adaptive_avg", "adaptive_max") for d in (1, 2, 3)}


def _spatial(shape: list[int] | None) -> list[int] | None:
    return list(shape[2:]) if shape is not None and len(shape) >= 3 else None


def _rewrite_node(i: int, nodes: list[Node], parents: list[list[int]]) -> bool:
    node = nodes[i]
    source = nodes[parents[i][0]] if len(parents[i]) == 1 else None
    before = _spatial(source.shape) if source is not None else None
    after = _spatial(node.shape)
    whole_map = before is not None and after is not None and len(before) == len(after) \
        and math.prod(after) == 1 and math.prod(before) > 1
    if whole_map and node.op in _POOLS:
        nodes[i] = Node(_POOLS[node.op], node.shape, {},
                        node.params, node.macs, node.scope)
        return True
    if node.op == "conv2d" and node.attrs.get("kernel") == [1, 1] and int(node.attrs.get("groups", 1)) == 1 \
            and before is not None and math.prod(before) == 1:
        nodes[i] = Node("linear", node.shape, {"in_features": node.attrs.get("in_channels"),
                                                "out_features": node.attrs.get("out_channels")},
                        node.params, node.macs, node.scope)
        return True
    features = _dense_convolution(node, before, after)
    if features is not None:
        nodes[i] = Node("linear", node.shape, {"in_features": features[0], "out_features": features[1]},
                        node.params, node.macs, node.scope)
        return True
    if node.op == "hardtanh":  # how ReLU6 traces; hand-written and library ReLU6 read alike
        nodes[i] = Node("relu6", node.shape, dict(node.attrs), node.params, node.macs, node.scope)
        return True
    if node.op == "linear" and source is not None and node.shape and source.shape \
            and len(node.shape) == 2 < len(source.shape) and math.prod(source.shape[:-1]) == node.shape[0]:
        # addmm over x.view(-1, d) (GPT-2's Conv1D): the linear over x itself
        nodes[i] = Node("linear", [*source.shape[:-1], node.shape[-1]], dict(node.attrs), node.params,
                        node.macs, node.scope)
        return True
    if node.op == "linear" and source is not None and source.op == "input":
        return _patch_embedding(i, node, source, nodes)
    return False


def _dense_convolution(node: Node, before: list[int] | None, after: list[int] | None) -> tuple[int, int] | None:
    """(in, out) features of a convolution that is a `Linear` written another way, else None: one whose
    unpadded kernel is its whole input map, so its output is 1×1 (LeNet-5's C5, a DCGAN critic's
    last layer), or a transposed one that spreads a 1×1 input over a k×k map (a DCGAN generator's
    first layer, which its paper calls a matrix multiplication). Groups 1, no padding or dilation;
    a 1×1 map into a 1×1 map is left to the 1×1-conv rule."""
    a = node.attrs
    if before is None or after is None or int(a.get("groups", 1)) != 1 or any(a.get("padding") or []) \
            or any(d != 1 for d in a.get("dilation") or [1]) or any(a.get("output_padding") or []):
        return None
    kernel, c_in, c_out = list(a.get("kernel") or []), int(a.get("in_channels", 0)), int(a.get("out_channels", 0))
    if node.op in ("conv1d", "conv2d", "conv3d") and math.prod(before) > 1 and math.prod(after) == 1 \
            and kernel == before:
        return c_in * math.prod(before), c_out
    if node.op.startswith("conv_transpose") and math.prod(before) == 1 and math.prod(after) > 1 and kernel == after:
        return c_in, c_out * math.prod(after)
    return None


def _patch_embedding(i: int, node: Node, image: Node, nodes: list[Node]) -> bool:
    """`linear` over k×k patches of an image input (reshape/rearrange + Linear) is a k×k, stride-k conv."""
    if image.shape is None or len(image.shape) != 4 or node.shape is None or len(node.shape) != 3:
        return False
    batch, channels, height, width = image.shape
    features = node.attrs.get("in_features")
    if not features or features % channels:
        return False
    k = math.isqrt(features // channels)
    if k < 2 or k * k * channels != features or height % k or width % k:
        return False
    if node.shape[1] != (height // k) * (width // k):
        return False
    out = node.attrs.get("out_features", node.shape[-1])
    nodes[i] = Node("conv2d", [batch, out, height // k, width // k],
                    {"in_channels": channels, "out_channels": out, "kernel": [k, k], "stride": [k, k],
                     "dilation": [1, 1], "groups": 1, "padding": [0, 0]}, node.params, node.macs, node.scope)
    return True


_PADDED = {"convolution", "pooling"}


def _is_padding(i: int, nodes: list[Node], children: list[list[int]]) -> bool:
    """A zero pad read only by convolutions or pools: their padding, written as its own op."""
    return nodes[i].op == "pad" and bool(children[i]) and all(OPS.get(nodes[c].op) in _PADDED for c in children[i])


def _pad_into_readers(i: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]]) -> None:
    """Add the pad's size (half of what it adds per spatial side, rounded down) to its readers' padding."""
    before, after = _spatial(nodes[parents[i][0]].shape), _spatial(nodes[i].shape)
    if before is None or after is None or len(before) != len(after):
        return
    added = [max(b - a, 0) // 2 for a, b in zip(before, after)]
    for c in children[i]:
        padding = nodes[c].attrs.get("padding")
        if isinstance(padding, list) and len(padding) == len(added):
            nodes[c].attrs["padding"] = [int(p) + k for p, k in zip(padding, added)]


def _is_probability_head(i: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]]) -> bool:
    """The logits of a `linear` or convolution turned into (log-)probabilities at the output: by a
    `log_softmax`/`softmax` (a classifier's, or a segmentation head's per pixel), or by a `sigmoid`
    over one value per sample (a GAN discriminator's or a binary classifier's score). Whether it is
    there is the loss's choice, not the design's. A `sigmoid` over many values stays: a decoder's
    per-pixel Bernoulli output is part of how autoencoders are written."""
    node = nodes[i]
    if len(parents[i]) != 1 or not children[i] or not all(nodes[c].op == "output" for c in children[i]):
        return False
    source = nodes[parents[i][0]].op
    if not (source == "linear" or source.startswith("conv")):
        return False
    if node.op in ("softmax", "log_softmax"):
        return True
    return node.op == "sigmoid" and node.shape is not None and len(node.shape) >= 2 and math.prod(node.shape[1:]) == 1


def _is_relu_cap(i: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]]) -> bool:
    """`clamp` read from a ReLU that nothing else reads: a ReLU capped from above (`relu(x).clamp(max=20)`),
    which `hardtanh(0, 20)` and `relu6` spell in one operation."""
    if nodes[i].op != "clamp" or len(parents[i]) != 1:
        return False
    relu = parents[i][0]
    return nodes[relu].op == "relu" and children[relu] == [i]


def _flatten_concat(i: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]]) -> bool:
    """`cat(cat(a, b), c)` -> `cat(a, b, c)` when the inner one has the outer's rank (it may have other readers)."""
    shape = nodes[i].shape
    flat: list[int] = []
    for p in parents[i]:
        inner = nodes[p]
        if inner.op == "concat" and inner.shape is not None and shape is not None and len(inner.shape) == len(shape):
            flat.extend(parents[p])
        else:
            flat.append(p)
    flat = list(dict.fromkeys(flat))
    if flat == parents[i]:
        return False
    for p in parents[i]:
        children[p] = [c for c in children[p] if c != i]
    parents[i] = flat
    for p in flat:
        if i not in children[p]:
            children[p].append(i)
    return True
