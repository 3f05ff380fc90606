"""Edits that real authors make to a known architecture, as training augmentation for the encoder.

A CIFAR re-implementation of ResNet-50 has a 3×3 stem without max-pool, 10 classes and 4×4 maps
at the end; a hand-written MobileNet may use ReLU6 where the paper used h-swish; a CIFAR ResNet-56
is a ResNet at a quarter of the width. Each is still the
same design. Training on such variants of every training architecture, labelled with its family,
teaches the encoder that these edits do not change the family.

Every edit is a pure function `(graph, rng) -> ArchGraph | None` (None: does not apply). Idiom
spellings need no edit here: `graph.idioms` gives them one canonical form before the encoder sees them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from narcli.graph.arch_graph import ArchGraph, Node

# bump when an edit changes what it makes: cached variants and training checkpoints are keyed by it
# (2: fewer_blocks; variants retried until `count` apply)
AUGMENT_VERSION = 2
ACTIVATIONS = ("relu", "relu6", "silu", "gelu", "hard_swish", "leaky_relu")
# input sizes authors trace or train at, as a factor of the zoo's 224 px: 32, 64, 128, 384 px
RESOLUTIONS = (32 / 224, 64 / 224, 128 / 224, 384 / 224)
STEM_NODES = 6  # how far from the input the stem's convolution and max-pool are looked for


def _copy(graph: ArchGraph) -> ArchGraph:
    nodes = [Node(n.op, list(n.shape) if n.shape is not None else None, dict(n.attrs), n.params, n.macs, n.scope)
             for n in graph.nodes]
    return ArchGraph(nodes, list(graph.edges), dict(graph.meta))


def _without(graph: ArchGraph, drop: int) -> ArchGraph:
    """`graph` without node `drop`, its parents wired to its children."""
    parents = [s for s, d in graph.edges if d == drop]
    children = [d for s, d in graph.edges if s == drop]
    edges = {(s, d) for s, d in graph.edges if drop not in (s, d)} | {(p, c) for p in parents for c in children}
    index = {old: new for new, old in enumerate(i for i in range(len(graph.nodes)) if i != drop)}
    return ArchGraph([n for i, n in enumerate(graph.nodes) if i != drop],
                     sorted((index[s], index[d]) for s, d in edges), dict(graph.meta))


def cifar_stem(graph: ArchGraph, rng: random.Random) -> ArchGraph | None:
    """The stem convolution as CIFAR code writes it: 3×3, stride 1."""
    out = _copy(graph)
    for node in out.nodes[:STEM_NODES]:
        kernel = node.attrs.get("kernel")
        if node.op.startswith("conv") and kernel and max(kernel) > 3:
            per_tap = int(node.attrs.get("out_channels", 0)) * int(node.attrs.get("in_channels", 0)) \
                // max(1, int(node.attrs.get("groups", 1)))
            bias = max(0, node.params - per_tap * math.prod(kernel))
            node.params = per_tap * 3 ** len(kernel) + bias
            node.attrs["kernel"] = [3] * len(kernel)
            node.attrs["stride"] = [1] * len(kernel)
            node.attrs["padding"] = [1] * len(kernel)
            return out
    return None


def no_stem_pool(graph: ArchGraph, rng: random.Random) -> ArchGraph | None:
    """The stem's max-pool left out."""
    for i, node in enumerate(graph.nodes[:STEM_NODES]):
        if node.op.startswith("max_pool"):
            return _without(graph, i)
    return None


STEM_ACTIVATIONS = ("relu", "relu6", "silu", "gelu", "hard_swish", "leaky_relu", "elu", "prelu", "mish")


def imagenet_stem(graph: ArchGraph) -> ArchGraph | None:
    """The inverse of `cifar_stem` + `no_stem_pool`, for searching: a first convolution that reads the
    input at 3×3, stride 1, with no max-pool near it, as ImageNet code writes it (7×7, stride 2, then
    a 3×3 stride-2 max-pool after its activation). None when the stem is not of that kind."""
    out = _copy(graph)
    nodes = out.nodes
    if any(node.op.startswith("max_pool") for node in nodes[:STEM_NODES]):
        return None
    inputs = {i for i, node in enumerate(nodes) if node.op == "input"}
    parents: dict[int, list[int]] = {}
    children: dict[int, list[int]] = {}
    for s, d in out.edges:
        parents.setdefault(d, []).append(s)
        children.setdefault(s, []).append(d)
    conv = next((i for i, node in enumerate(nodes[:STEM_NODES]) if node.op in ("conv2d", "conv3d")
                 and node.attrs.get("kernel") and max(node.attrs["kernel"]) == 3
                 and max(node.attrs.get("stride") or [1]) == 1 and set(parents.get(i, [])) & inputs), None)
    if conv is None:
        return None
    node = nodes[conv]
    rank = len(node.attrs["kernel"])
    per_tap = int(node.attrs.get("out_channels", 0)) * int(node.attrs.get("in_channels", 0)) \
        // max(1, int(node.attrs.get("groups", 1)))
    node.params = per_tap * 7 ** rank + max(0, node.params - per_tap * 3 ** rank)  # the same bias
    node.attrs.update(kernel=[7] * rank, stride=[2] * rank, padding=[3] * rank)
    after = conv
    if len(children.get(conv, [])) == 1 and nodes[children[conv][0]].op in STEM_ACTIVATIONS:
        after = children[conv][0]
    shape = [d // 2 if isinstance(d, int) and axis >= 2 else d for axis, d in enumerate(nodes[after].shape or [])]
    pool = len(nodes)
    nodes.append(Node(f"max_pool{rank}d", shape or None, {"kernel": [3] * rank, "stride": [2] * rank,
                                                          "padding": [1] * rank}, 0, 0, nodes[after].scope))
    edges = [(pool, d) if s == after else (s, d) for s, d in out.edges] + [(after, pool)]
    return ArchGraph(nodes, sorted(set(edges)), dict(out.meta)).canonicalize()


def swap_activation(graph: ArchGraph, rng: random.Random) -> ArchGraph | None:
    """Another activation throughout (ReLU6 for ReLU, SiLU for GELU, ...)."""
    used = sorted({n.op for n in graph.nodes} & set(ACTIVATIONS))
    if not used:
        return None
    old = rng.choice(used)
    new = rng.choice([a for a in ACTIVATIONS if a != old])
    out = _copy(graph)
    for node in out.nodes:
        if node.op == old:
            node.op = new
    return out


def _output_readers(graph: ArchGraph) -> set[int]:
    """The nodes whose values are the model's outputs (a classifier's last layer, say)."""
    outputs = {i for i, n in enumerate(graph.nodes) if n.op == "output"}
    return {s for s, d in graph.edges if d in outputs}


def new_head(graph: ArchGraph, rng: random.Random) -> ArchGraph | None:
    """A classifier for another number of classes (10 or 100 instead of 1000)."""
    out = _copy(graph)
    heads = {i for i in _output_readers(out) if out.nodes[i].op == "linear"}
    if not heads:
        return None
    classes = rng.choice((10, 100))
    for i in heads:
        node = out.nodes[i]
        width = node.attrs.get("in_features") or 0
        node.attrs["out_features"] = classes
        node.params = width * classes + classes
        if node.shape:
            node.shape[-1] = classes
    return out


def resolution(graph: ArchGraph, rng: random.Random) -> ArchGraph | None:
    """The model traced at another input size: every feature map's height and width scaled."""
    factor = rng.choice(RESOLUTIONS)
    out = _copy(graph)
    changed = False
    for node in out.nodes:
        if node.shape is not None and len(node.shape) == 4 and math.prod(node.shape[2:]) > 1:
            node.shape[2:] = [max(1, round(d * factor)) for d in node.shape[2:]]
            changed = True
    return out if changed else None


# width multipliers authors apply to a convolutional design (CIFAR ResNets are ResNets at 1/4 width)
WIDTHS = (0.25, 0.5, 2.0)


def width(graph: ArchGraph, rng: random.Random) -> ArchGraph | None:
    """Every feature map's channel count scaled (a width multiplier): convolutions, norms and the
    pooled features follow; the image input and the classifier's outputs keep theirs."""
    if not any(n.op == "input" and n.shape is not None and len(n.shape) == 4 for n in graph.nodes):
        return None
    factor = rng.choice(WIDTHS)
    out = _copy(graph)
    parents = out.parents()
    heads = _output_readers(out)

    def scaled(value: int) -> int:
        return max(1, round(value * factor))

    changed = False
    for i, node in enumerate(out.nodes):
        if node.op in ("input", "output"):
            continue
        from_input = any(out.nodes[p].op == "input" for p in parents[i])
        if node.shape is not None and len(node.shape) in (2, 4) and i not in heads:
            node.shape[1] = scaled(node.shape[1])
            changed = True
        attrs, growth = node.attrs, 1.0
        for key in ("in_channels", "in_features"):
            if key in attrs and not from_input:
                attrs[key] = scaled(int(attrs[key]))
                growth *= factor
        for key in ("out_channels", "out_features", "features"):
            if key in attrs and i not in heads:
                attrs[key] = scaled(int(attrs[key]))
                growth *= factor
        if node.op.startswith("depthwise") and "groups" in attrs:
            attrs["groups"] = attrs.get("out_channels", attrs["groups"])
            growth = factor  # one filter per channel
        node.params = round(node.params * growth)
    return out if changed else None


def identity_blocks(graph: ArchGraph) -> list[tuple[int, int, list[int]]]:
    """Convolutional residual blocks with an identity shortcut: (block input, the block's last node,
    the nodes before it), for blocks whose input and output feature maps have one shape. The last
    node is the add that closes the block, or the activation right after it (a post-activation
    ResNet), which belongs to the block."""
    parents, children = graph.parents(), graph.children()
    out = []
    for join, node in enumerate(graph.nodes):
        if node.op != "add" or len(parents[join]) != 2 or node.shape is None or len(node.shape) != 4:
            continue
        for start in parents[join]:
            if graph.nodes[start].shape != node.shape:
                continue
            # the nodes on some path start -> join: descendants of start that reach join
            reach = {join}
            for i in range(join - 1, start, -1):
                if any(c in reach for c in children[i]):
                    reach.add(i)
            inner = [i for i in range(start + 1, join) if i in reach and _descends(i, start, parents)]
            if inner and all(set(parents[i]) <= set(inner) | {start} for i in inner):
                after = children[join]
                if len(after) == 1 and graph.nodes[after[0]].op in ACTIVATIONS and parents[after[0]] == [join]:
                    inner, join = [*inner, join], after[0]
                out.append((start, join, inner))
                break
    return out


def _descends(node: int, ancestor: int, parents: list[list[int]]) -> bool:
    stack, seen = [node], set()
    while stack:
        i = stack.pop()
        if i == ancestor:
            return True
        if i > ancestor and i not in seen:
            seen.add(i)
            stack.extend(parents[i])
    return False


def fewer_blocks(graph: ArchGraph, rng: random.Random) -> ArchGraph | None:
    """One to three identity residual blocks left out (a ResNet-20 for CIFAR has 3 stages of 3 blocks
    where timm's ResNet-18 has 4 of 2): the block's input goes straight to what read its output."""
    blocks = identity_blocks(graph)
    if len(blocks) < 2:
        return None
    chosen = rng.sample(blocks, min(len(blocks) - 1, rng.randint(1, 3)))
    drop = {i for _, join, inner in chosen for i in [*inner, join]}
    replace = {join: start for start, join, _ in chosen}

    def source(i: int) -> int:
        while i in replace:
            i = replace[i]
        return i

    kept = [i for i in range(len(graph.nodes)) if i not in drop]
    index = {old: new for new, old in enumerate(kept)}
    edges = {(index[source(s)], index[d]) for s, d in graph.edges if d not in drop and source(s) not in drop}
    out = _copy(graph)
    return ArchGraph([out.nodes[i] for i in kept], sorted(edges), out.meta)


EDITS: dict[str, Callable[[ArchGraph, random.Random], ArchGraph | None]] = {
    "cifar_stem": cifar_stem, "no_stem_pool": no_stem_pool, "swap_activation": swap_activation,
    "new_head": new_head, "resolution": resolution, "width": width, "fewer_blocks": fewer_blocks,
}


def variants(graph: ArchGraph, count: int, seed: int) -> list[ArchGraph]:
    """`count` edited copies of `graph`, each with one to three edits that apply (fewer copies when
    few edits apply: at most 3 × `count` tries)."""
    rng = random.Random(seed)
    out: list[ArchGraph] = []
    for _ in range(3 * count):
        if len(out) == count:
            break
        names = rng.sample(list(EDITS), rng.randint(1, 3))
        edited, applied = graph, 0
        for name in names:
            result = EDITS[name](edited, rng)
            if result is not None:
                edited, applied = result, applied + 1
        if applied:
            out.append(edited)
    return out
