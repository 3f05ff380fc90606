"""The raw graph of `darts_net.DartsNetwork` written out directly from a genotype, without torch.

Tracing a DARTS network takes ~0.15 s; writing its graph takes ~1 ms, which makes the 30,000
architecture benchmark practical. `tests/test_nas.py` checks that both give the same graph hash.
"""

from __future__ import annotations

from narcli.graph.arch_graph import ArchGraph
from narcli.graph.canonical import RawGraph, RawOp, build_graph
from narcli.nas.darts_space import Genotype

Shape = tuple[int, int, int, int]


class _Emitter:
    """Appends RawOps the way the run-time tracer records the same modules."""

    def __init__(self) -> None:
        self.ops: list[RawOp] = []
        self.params: dict[str, tuple[int, ...]] = {}
        self.shapes: dict[str, tuple[int, ...]] = {"input0": (1, 3, 32, 32)}
        self.count = 0

    def _emit(self, op: str, inputs: list[str], shape: tuple[int, ...], attrs: dict | None = None,
              scope: str = "") -> str:
        self.count += 1
        out = f"v{self.count}"
        in_shapes = [self.shapes.get(name, self.params.get(name)) for name in inputs]
        self.ops.append(RawOp(op, inputs, [out], attrs or {}, shape, in_shapes, scope))
        self.shapes[out] = shape
        return out

    def relu(self, x: str, scope: str) -> str:
        return self._emit("relu", [x], self.shapes[x], scope=scope)

    def conv(self, x: str, c_out: int, kernel: int, stride: int, padding: int, scope: str, dilation: int = 1,
             groups: int = 1) -> str:
        n, c_in, h, w = self.shapes[x]
        size = [(d + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1 for d in (h, w)]
        weight = f"{scope}.weight"
        self.params[weight] = (c_out, c_in // groups, kernel, kernel)
        op = "depthwise_conv2d" if groups == c_in and groups > 1 else "conv2d"
        attrs = {"in_channels": c_in, "out_channels": c_out, "kernel": [kernel, kernel], "stride": [stride, stride],
                 "dilation": [dilation, dilation], "groups": groups, "padding": [padding, padding]}
        return self._emit(op, [x, weight], (n, c_out, *size), attrs, scope)

    def bn(self, x: str, scope: str) -> str:
        c = self.shapes[x][1]
        self.params[f"{scope}.weight"] = self.params[f"{scope}.bias"] = (c,)
        stats = [f"{scope}.running_mean", f"{scope}.running_var"]  # buffers: values, not parameters
        self.shapes.update({s: (c,) for s in stats})
        return self._emit("batch_norm", [x, *stats, f"{scope}.weight", f"{scope}.bias"], self.shapes[x],
                          {"features": c}, scope)

    def pool(self, x: str, kind: str, stride: int, scope: str) -> str:
        n, c, h, w = self.shapes[x]
        size = [(d + 2 - 3) // stride + 1 for d in (h, w)]
        return self._emit(f"{kind}_pool2d", [x], (n, c, *size), {"kernel": [3, 3], "stride": [stride, stride]}, scope)

    def add(self, a: str, b: str, scope: str) -> str:
        return self._emit("add", [a, b], self.shapes[a], scope=scope)

    def cat(self, xs: list[str], scope: str) -> str:
        n, _, h, w = self.shapes[xs[0]]
        return self._emit("concat", xs, (n, sum(self.shapes[x][1] for x in xs), h, w), scope=scope)

    def slice(self, x: str, scope: str) -> str:
        n, c, h, w = self.shapes[x]
        return self._emit("slice", [x], (n, c, h - 1, w - 1), scope=scope)

    # -- the modules of darts_net ----------------------------------------------------------
    def relu_conv_bn(self, x: str, c_out: int, scope: str) -> str:
        return self.bn(self.conv(self.relu(x, f"{scope}.0"), c_out, 1, 1, 0, f"{scope}.1"), f"{scope}.2")

    def factorized_reduce(self, x: str, c_out: int, scope: str) -> str:
        x = self.relu(x, f"{scope}.relu")
        a = self.conv(x, c_out // 2, 1, 2, 0, f"{scope}.a")
        b = self.conv(self.slice(x, scope), c_out - c_out // 2, 1, 2, 0, f"{scope}.b")
        return self.bn(self.cat([a, b], scope), f"{scope}.bn")

    def operation(self, x: str, name: str, stride: int, scope: str) -> str:
        c = self.shapes[x][1]
        if name == "skip_connect":
            return x if stride == 1 else self.factorized_reduce(x, c, scope)
        if name.endswith("pool_3x3"):
            return self.pool(x, name.split("_")[0][:3], stride, scope)
        kind, _, size = name.split("_")
        k = int(size[0])
        if kind == "sep":
            x = self.conv(self.relu(x, f"{scope}.0"), c, k, stride, k // 2, f"{scope}.1", groups=c)
            x = self.bn(self.conv(x, c, 1, 1, 0, f"{scope}.2"), f"{scope}.3")
            x = self.conv(self.relu(x, f"{scope}.4"), c, k, 1, k // 2, f"{scope}.5", groups=c)
            return self.bn(self.conv(x, c, 1, 1, 0, f"{scope}.6"), f"{scope}.7")
        x = self.conv(self.relu(x, f"{scope}.0"), c, k, stride, k - 1, f"{scope}.1", dilation=2, groups=c)
        return self.bn(self.conv(x, c, 1, 1, 0, f"{scope}.2"), f"{scope}.3")


def darts_raw_graph(genotype: Genotype, channels: int = 16, cells: int = 8, classes: int = 10) -> RawGraph:
    """What tracing `DartsNetwork(genotype, channels, cells, classes)` on a 32x32 image records."""
    e = _Emitter()
    stem = 3 * channels
    s0 = s1 = e.bn(e.conv("input0", stem, 3, 1, 1, "stem.0"), "stem.1")
    c = channels
    reduction_prev = False
    for i in range(cells):
        scope = f"cells.{i}"
        reduction = i in (cells // 3, 2 * cells // 3)
        if reduction:
            c *= 2
        pairs = genotype.reduce if reduction else genotype.normal
        states = [e.factorized_reduce(s0, c, f"{scope}.pre0") if reduction_prev else
                  e.relu_conv_bn(s0, c, f"{scope}.pre0"), e.relu_conv_bn(s1, c, f"{scope}.pre1")]
        index = 0
        for pair in pairs:
            outs = []
            for op, source in pair:
                stride = 2 if reduction and source < 2 else 1
                outs.append(e.operation(states[source], op, stride, f"{scope}.ops.{index}"))
                index += 1
            states.append(e.add(outs[0], outs[1], scope))
        s0, s1 = s1, e.cat(states[2:], scope)
        reduction_prev = reduction
    pooled = e._emit("global_avg_pool", [s1], (1, e.shapes[s1][1], 1, 1), scope="pool")
    flat = e._emit("flatten", [pooled], (1, e.shapes[s1][1]))
    width = e.shapes[s1][1]
    e.params["classifier.weight"], e.params["classifier.bias"] = (classes, width), (classes,)
    logits = e._emit("linear", [flat, "classifier.weight", "classifier.bias"], (1, classes),
                     {"in_features": width, "out_features": classes}, "classifier")
    return RawGraph([("input0", (1, 3, 32, 32))], e.ops, [logits], e.params)


def darts_graph(genotype: Genotype, **network: int) -> ArchGraph:
    return build_graph(darts_raw_graph(genotype, **network), {"source": "nas:darts", "genotype": genotype.text()})
