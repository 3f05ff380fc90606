"""Idioms of gated and causal layers, as hand-written sequence models spell them (see `idioms.py`).

- **Causal trim**: a convolution padded on both sides whose output is then cut back to its input's
  length (`conv(x)[..., :-pad]`, a TCN's `Chomp1d`, WaveNet code) computes what a convolution after
  a left pad does (`F.pad(x, (pad, 0))`, whose pad `idioms.py` folds into the convolution): one
  convolution at the input's length, the slice folded.
- **Fused layer, then split**: one convolution or `Linear` whose output is split into k equal parts
  along its channels, each part read by its own operation (WaveNet's gate `conv -> split -> tanh,
  sigmoid`, a GLU feed-forward's `gate_up_proj -> chunk`, Mamba's `in_proj -> chunk`), computes what
  k layers of a k-th of the width on the same input do (`filter_conv(x)`, `gate_conv(x)`; Llama's
  `gate_proj`, `up_proj`). The canonical form is the k layers: the split names no operation.
  q/k/v projections are not this rule's: `attention_idioms` gives those one fused form first.
"""

from __future__ import annotations

from narcli.graph.arch_graph import Node
from narcli.graph.attention_idioms import fold

CONVOLUTIONS = ("conv1d", "conv2d", "conv3d")
_WIDTH_KEYS = {"linear": "out_features", **{op: "out_channels" for op in CONVOLUTIONS}}


def fold_causal_trim(t: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                     alive: list[bool]) -> bool:
    """Slice node `t` that cuts a stride-1 convolution's padded output back to the convolution's
    input length: folded, the convolution at that length."""
    if nodes[t].op != "slice" or len(parents[t]) != 1:
        return False
    c = parents[t][0]
    conv = nodes[c]
    if conv.op not in CONVOLUTIONS or children[c] != [t] or len(parents[c]) != 1:
        return False
    source = nodes[parents[c][0]]
    cut, made, read = nodes[t].shape, conv.shape, source.shape
    if not (cut and made and read) or not len(cut) == len(made) == len(read) or len(cut) < 3:
        return False
    if cut[:2] != made[:2] or any(int(s) != 1 for s in conv.attrs.get("stride") or [1]):
        return False
    if cut[2:] != read[2:] or any(a > b for a, b in zip(cut[2:], made[2:])) or cut[2:] == made[2:]:
        return False
    nodes[c] = Node(conv.op, list(cut), dict(conv.attrs), conv.params, conv.macs, conv.scope)
    fold(t, parents, children, alive)
    return True


def split_fused_layer(s: int, nodes: list[Node], parents: list[list[int]], children: list[list[int]],
                      alive: list[bool], order: list[float]) -> bool:
    """Split node `s` of a layer's output into as many equal channel parts as it has readers -> one
    layer per part, each read by one of them."""
    if nodes[s].op != "split" or len(parents[s]) != 1:
        return False
    x = parents[s][0]
    layer, part, readers = nodes[x], nodes[s].shape, children[s]
    k = len(readers)
    if layer.op not in _WIDTH_KEYS or children[x] != [s] or len(parents[x]) != 1 or k < 2:
        return False
    if layer.op != "linear" and int(layer.attrs.get("groups", 1)) != 1:
        return False
    whole = layer.shape
    if not whole or not part or len(whole) != len(part) or (layer.op != "linear" and len(whole) < 3):
        return False
    axis = len(whole) - 1 if layer.op == "linear" else 1
    if any(a != b for i, (a, b) in enumerate(zip(whole, part)) if i != axis) or whole[axis] != k * part[axis]:
        return False
    width = _WIDTH_KEYS[layer.op]
    attrs = {**layer.attrs, width: part[axis]}
    if isinstance(attrs.get("reparam_elements"), int):
        attrs["reparam_elements"] //= k

    def share(total: int, j: int) -> int:  # the remainder (none for whole parts) stays with the first
        return total // k + (total % k if j == 0 else 0)

    made = [x]
    nodes[x] = Node(layer.op, list(part), attrs, share(layer.params, 0), share(layer.macs, 0), layer.scope)
    step = (order[s] - order[x]) / k
    for j in range(1, k):
        nodes.append(Node(layer.op, list(part), dict(attrs), share(layer.params, j), share(layer.macs, j), layer.scope))
        parents.append(list(parents[x]))
        children.append([])
        alive.append(True)
        order.append(order[x] + j * step)
        children[parents[x][0]].append(len(nodes) - 1)
        made.append(len(nodes) - 1)
    for new, reader in zip(made, sorted(readers)):
        children[new] = [reader]
        parents[reader] = [new if p == s else p for p in parents[reader]]
    alive[s] = False
    parents[s], children[s] = [], []
    return True
