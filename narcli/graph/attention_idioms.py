"""The attention rules of the idiom table (`idioms.py`): hand-written attention is the fused
`attention`; q/k/v projections and rotary embeddings take one form however they are written.

They edit `idioms.normalise_idioms`'s working lists in place: `nodes`, `parents`/`children`
(adjacency by index), `alive` (removed nodes stay in the lists, marked dead) and `order` (a sort key,
so nodes added here slot in between and the result stays topologically ordered).
"""

from __future__ import annotations

import math

from narcli.graph.arch_graph import Node


def fold(i: int, parents: list[list[int]], children: list[list[int]], alive: list[bool]) -> None:
    """Remove node `i` (one parent), wiring its parent straight to its children."""
    (parent,) = parents[i]
    children[parent] = [c for c in children[parent] if c != i] + [c for c in children[i] if c not in children[parent]]
    for c in children[i]:
        parents[c] = list(dict.fromkeys(parent if p == i else p for p in parents[c]))
    alive[i] = False
    parents[i], children[i] = [], []


def drop(i: int, parents: list[list[int]], children: list[list[int]], alive: list[bool]) -> None:
    """Remove node `i` and its edges (what it computed is merged into a node kept)."""
    for q in parents[i]:
        children[q] = [c for c in children[q] if c != i]
    parents[i], children[i], alive[i] = [], [], False


_PRODUCTS = {"matmul", "bmm", "einsum"}
# what authors put between q·kᵀ and the softmax: scale, additive mask/bias, masked_fill, where
_SCORE_STEPS = {"mul", "div", "add", "sub", "masked_fill", "where"}


def fuse_attention(soft: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                   alive: list[bool]) -> bool:
    """`softmax(scores(q @ kᵀ)) @ v` -> one `attention` node, at the place of the second product."""
    if len(children[soft]) != 1 or len(parents[soft]) != 1:
        return False
    out = children[soft][0]
    if nodes[out].op not in _PRODUCTS:
        return False
    chain, extra = [], []  # chain: the score nodes from q·kᵀ to the softmax; extra: masks/biases read
    at = parents[soft][0]
    while nodes[at].op in _SCORE_STEPS and len(children[at]) == 1 and len(chain) < 4:
        chain.append(at)
        main = max(parents[at], default=None)  # the score path is the latest parent (topological order)
        if main is None:
            return False
        extra += [p for p in parents[at] if p != main]
        at = main
    first = at
    if nodes[first].op not in _PRODUCTS or len(children[first]) != 1:
        return False
    inputs = list(parents[first])
    for k, p in enumerate(inputs):  # q * scale right before q·kᵀ
        if nodes[p].op in ("mul", "div") and len(parents[p]) == 1 and children[p] == [first] and not nodes[p].params:
            alive[p] = False
            inputs[k] = parents[p][0]
            children[parents[p][0]] = [c for c in children[parents[p][0]] if c != p] + [out]
            parents[p] = children[p] = []
    inputs += extra + [p for p in parents[out] if p != soft]
    gone = {first, soft, *chain}
    for g in gone:
        alive[g] = False
        for p in parents[g]:
            children[p] = [c for c in children[p] if c != g]
        parents[g] = children[g] = []
    merged = list(dict.fromkeys(p for p in inputs if alive[p]))
    for p in merged:
        if out not in children[p]:
            children[p].append(out)
    parents[out] = merged
    node = nodes[out]
    nodes[out] = Node("attention", node.shape, {}, node.params + sum(nodes[g].params for g in gone),
                      node.macs + sum(nodes[g].macs for g in gone), node.scope)
    return True


# what moves q, k or v between their projection and the attention: a split of one fused projection,
# k/v heads repeated for grouped-query attention (`repeat_interleave`, or `[:, :, None]` + expand)
_HEAD_VIEWS = {"split", "slice", "repeat", "tile"}


def _is_scale(node: Node) -> bool:
    """A factor on q (or k) with one input and no weights of its own (`q * scaling`, `q / sqrt(d)`,
    a temperature): what the fused attention's own `scale` does, as `fuse_attention` reads it
    before a hand-written q·kᵀ. The graph keeps no operand, so `q * q` would read the same; no
    attention is written that way."""
    return node.op in ("mul", "div") and not node.params


def attention_projections(a: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                          alive: list[bool], order: list[float]) -> bool:
    """One canonical form for how q, k and v are projected into attention node `a` (see the module
    docstring): expand a whole-module attention, fold head views, merge parallel projections."""
    changed, folded = False, True
    while folded:  # a fused projection split into q, k, v; k/v heads repeated; q scaled (a fold can free the next)
        folded = False
        for p in list(parents[a]):
            if (nodes[p].op in _HEAD_VIEWS or _is_scale(nodes[p])) and len(parents[p]) == 1 and set(children[p]) == {a}:
                fold(p, parents, children, alive)
                changed = folded = True
    node = nodes[a]
    width = node.shape[-1] if node.shape else 0
    if width and node.params >= 3 * width * width:  # the module's own projections (nn.MultiheadAttention)
        return _expand_module(a, width, nodes, parents, children, alive, order) or changed
    groups: dict[int, list[int]] = {}
    for p in parents[a]:
        if nodes[p].op == "linear" and children[p] == [a] and len(parents[p]) == 1:
            groups.setdefault(parents[p][0], []).append(p)
    for members in groups.values():
        if len(members) < 2:
            continue
        keep, *rest = sorted(members)
        out = sum(int(nodes[m].attrs.get("out_features") or (nodes[m].shape or [0])[-1]) for m in members)
        first = nodes[keep]
        shape = [*first.shape[:-1], out] if first.shape else None
        nodes[keep] = Node("linear", shape, {**first.attrs, "out_features": out}, sum(nodes[m].params for m in members),
                           sum(nodes[m].macs for m in members), first.scope)
        for m in rest:
            drop(m, parents, children, alive)
        parents[a] = [p for p in parents[a] if p not in rest]
        changed = True
    return changed


def merge_heads(cat: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                alive: list[bool]) -> bool:
    """Attention written one module per head (`torch.cat([head(x) for head in self.heads], -1)`, as
    tutorials write a GPT) -> the one multi-head `attention` a fused module traces to: the heads'
    projections one `linear` (run after `attention_projections`, so each head has one), no concat.
    A norm recomputed inside the loop (`head(self.ln(x))`) is one norm."""
    heads = parents[cat]
    if len(heads) < 2 or any(nodes[h].op != "attention" or children[h] != [cat] or len(parents[h]) != 1
                             or not nodes[h].shape for h in heads):
        return False
    joined = nodes[cat].shape
    if not joined or joined[-1] != sum(nodes[h].shape[-1] for h in heads):  # heads side by side, not one after another
        return False
    projections = [parents[h][0] for h in heads]
    if len(set(projections)) != len(projections) or any(
            nodes[p].op != "linear" or children[p] != [h] or len(parents[p]) != 1 for p, h in zip(projections, heads)):
        return False
    widths = {(nodes[p].attrs.get("in_features"), nodes[p].attrs.get("out_features")) for p in projections}
    sources = [parents[p][0] for p in projections]
    if len(widths) != 1 or len({tuple(nodes[h].shape) for h in heads}) != 1 or not _one_input(sources, nodes, parents,
                                                                                                children):
        return False
    keep, head = projections[0], heads[0]
    first = nodes[keep]
    out = sum(int(nodes[p].attrs.get("out_features") or 0) for p in projections)
    nodes[keep] = Node("linear", [*first.shape[:-1], out] if first.shape else None, {**first.attrs, "out_features": out},
                       sum(nodes[p].params for p in projections), sum(nodes[p].macs for p in projections), first.scope)
    shape = nodes[head].shape
    nodes[head] = Node("attention", [*shape[:-2], len(heads), *shape[-2:]], dict(nodes[head].attrs),
                       sum(nodes[h].params for h in heads), sum(nodes[h].macs for h in heads), nodes[head].scope)
    dropped = set(projections[1:]) | set(heads[1:]) | ({*sources[1:]} - {sources[0]})
    for d in dropped:
        drop(d, parents, children, alive)
    parents[cat] = [head]
    fold(cat, parents, children, alive)
    return True


def _one_input(sources: list[int], nodes: list[Node], parents: list[list[int]], children: list[list[int]]) -> bool:
    """The heads read one tensor: the same node, or one computation repeated per head (same operation
    and settings, one reader each, the same single input)."""
    if len(set(sources)) == 1:
        return True
    if len(set(sources)) != len(sources):
        return False
    first = nodes[sources[0]]
    return all(nodes[s].op == first.op and nodes[s].attrs == first.attrs and nodes[s].shape == first.shape
               and len(children[s]) == 1 and len(parents[s]) == 1 and parents[s] == parents[sources[0]]
               for s in sources)


def _expand_module(a: int, width: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                   alive: list[bool], order: list[float]) -> bool:
    """An attention node that holds its projections' weights -> `linear` in, `attention`, `linear` out."""
    sources = [p for p in parents[a] if nodes[p].shape and nodes[p].shape[-1] == width]
    if not sources:
        return False
    node = nodes[a]
    quarter = node.params // 4
    tokens = math.prod(node.shape[:-1])  # the queries': the output has one row per query
    queries = [p for p in sources if math.prod(nodes[p].shape[:-1]) == tokens] or sources
    q_source = max(queries)
    kv_source = min((p for p in sources if p != q_source), default=q_source)

    def linear(source: int, out: int, params: int, at: float) -> int:
        shape = [*nodes[source].shape[:-1], out]
        nodes.append(Node("linear", shape, {"in_features": width, "out_features": out}, params,
                          math.prod(shape[:-1]) * width * out, node.scope))
        parents.append([source])
        children.append([a])
        alive.append(True)
        order.append(at)
        children[source] = [c for c in children[source] if c != a] + [len(nodes) - 1]
        return len(nodes) - 1

    rest = [p for p in parents[a] if p not in (q_source, kv_source)]  # masks
    if q_source == kv_source and math.prod(nodes[q_source].shape[:-1]) == tokens:
        projections = [linear(q_source, 3 * width, 3 * quarter, order[a] - 0.5)]
    elif q_source == kv_source:  # learned queries (a pooling probe): their projection stays in the node
        projections = [linear(kv_source, 2 * width, 2 * quarter, order[a] - 0.6)]
    else:
        projections = [linear(kv_source, 2 * width, 2 * quarter, order[a] - 0.6),
                       linear(q_source, width, quarter, order[a] - 0.5)]
    out = len(nodes)
    nodes.append(Node("linear", node.shape, {"in_features": width, "out_features": width},
                      node.params - sum(nodes[p].params for p in projections), tokens * width * width, node.scope))
    parents.append([a])
    children.append(children[a])
    alive.append(True)
    order.append(order[a] + 0.5)
    for c in children[a]:
        parents[c] = [out if p == a else p for p in parents[c]]
    children[a] = [out]
    parents[a] = projections + rest
    nodes[a] = Node("attention", node.shape, {}, 0,
                    max(node.macs - sum(nodes[p].macs for p in projections) - nodes[out].macs, 0), node.scope)
    return True


def rotary_rotate_half(exit_: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                       alive: list[bool], order: list[float]) -> bool:
    """A rotary embedding over interleaved pairs, `stack(x1*cos - x2*sin, x1*sin + x2*cos)` with x1, x2
    the two halves of one split of x, -> the rotate-half form most libraries trace to:
    `x*cos + concat(split(x), -split(x))*sin` (the same rotation, pairs laid out differently)."""
    pair = parents[exit_]
    if len(pair) != 2 or sorted(nodes[p].op for p in pair) != ["add", "sub"]:
        return False
    products = [m for p in pair for m in parents[p]]
    if len(products) != 4 or any(nodes[m].op != "mul" or len(parents[m]) != 1 or len(children[m]) != 1
                                 for m in products):
        return False
    sources = {parents[m][0] for m in products}
    split = sources.pop() if len(sources) == 1 else None
    if split is None or nodes[split].op != "split" or len(parents[split]) != 1 \
            or sorted(children[split]) != sorted(products) or any(len(children[p]) != 1 for p in pair):
        return False
    entry = parents[split][0]
    region = sorted([split, *products, *pair, exit_], key=order.__getitem__)
    half = nodes[split].shape
    full = [*half[:-1], 2 * half[-1]] if half else nodes[exit_].shape
    scope = nodes[exit_].scope
    # the rotate-half form, each node (op, shape, parents: -1 = the entry, k = the k-th new node)
    template = [("mul", full, [-1]), ("split", half, [-1]), ("neg", half, [1]), ("concat", full, [1, 2]),
                ("mul", full, [3]), ("add", full, [0, 4])]
    slots = region[:len(template)]
    readers = children[exit_]
    for r in region:
        for p in parents[r]:
            children[p] = [c for c in children[p] if c != r]
        parents[r], children[r], alive[r] = [], [], False
    for (op, shape, inputs), slot in zip(template, slots):
        nodes[slot] = Node(op, list(shape) if shape else None, {}, 0, 0, scope)
        alive[slot] = True
        parents[slot] = [entry if k < 0 else slots[k] for k in inputs]
        for p in parents[slot]:
            children[p].append(slot)
    last = slots[-1]
    children[last] = list(readers)
    for c in readers:
        parents[c] = [last if p == exit_ else p for p in parents[c]]
    return True
