"""Each rule of the idiom table: the idiom written two ways traces to the same canonical graph."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.canonical import build_graph
from narcli.graph.idioms import normalise_idioms
from narcli.trace.torch_tracer import trace_module


def canonical(model: nn.Module, *shape: int, dtype=torch.float32) -> ArchGraph:
    raw, _ = trace_module(model.to("meta"), [torch.empty(*shape, device="meta", dtype=dtype)])
    return build_graph(raw)


def ops(graph: ArchGraph) -> list[str]:
    return [n.op for n in graph.nodes]


class Wrap(nn.Module):
    """conv -> f(x) -> conv, so the idiom sits between real layers as it does in models."""

    def __init__(self, f, channels=8):
        super().__init__()
        self.f = f
        self.a = nn.Conv2d(3, channels, 3)
        self.b = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return self.b(self.f(self.a(x)))


def same_graph(f, g, *shape):
    one, two = canonical(Wrap(f), *shape), canonical(Wrap(g), *shape)
    assert ops(one) == ops(two)
    assert one.content_hash() == two.content_hash()
    return one


ACTIVATIONS = {
    "silu": (nn.SiLU(), lambda x: x * torch.sigmoid(x)),
    "hard_sigmoid": (nn.Hardsigmoid(), lambda x: F.relu6(x + 3) / 6),
    "hard_sigmoid (hardtanh, * 1/6)": (nn.Hardsigmoid(), lambda x: F.hardtanh(x + 3, 0, 6) * (1 / 6)),
    "hard_swish": (nn.Hardswish(), lambda x: x * F.relu6(x + 3) / 6),
    "hard_swish (x * hard_sigmoid)": (nn.Hardswish(), lambda x: x * F.hardsigmoid(x)),
    "gelu (tanh)": (nn.GELU(approximate="tanh"),
                    lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))),
    "gelu (erf)": (nn.GELU(), lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))),
    "mish": (nn.Mish(), lambda x: x * torch.tanh(F.softplus(x))),
}


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_hand_written_activations_take_their_canonical_form(name):
    library, by_hand = ACTIVATIONS[name]
    graph = same_graph(library, Lambda(by_hand), 1, 3, 12, 12)
    assert len(graph.nodes) == 5  # input, conv, activation, conv, output


class HandLayerNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * self.weight + self.bias


class HandRMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Tokens(nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.norm = norm
        self.b = nn.Linear(32, 16)

    def forward(self, x):
        return self.b(self.norm(self.a(x)))


@pytest.mark.parametrize("library, by_hand", [(nn.LayerNorm(32), HandLayerNorm(32)),
                                              (nn.RMSNorm(32), HandRMSNorm(32))], ids=["layer_norm", "rms_norm"])
def test_hand_written_norms_take_their_canonical_form_with_their_parameters(library, by_hand):
    one, two = canonical(Tokens(library), 1, 5, 16), canonical(Tokens(by_hand), 1, 5, 16)
    assert ops(one) == ops(two) == ["input", "linear", library_op(library), "linear", "output"]
    assert one.content_hash() == two.content_hash()
    assert one.nodes[2].params == two.nodes[2].params == sum(p.numel() for p in library.parameters())


def library_op(module):
    return "layer_norm" if isinstance(module, nn.LayerNorm) else "rms_norm"


class Pool(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.how = how
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        x = self.conv(x)
        if self.how == "avg_pool2d":
            x = F.avg_pool2d(x, 4)  # CIFAR ResNets: the map is 4x4 here
        elif self.how == "adaptive":
            x = F.adaptive_avg_pool2d(x, 1)
        elif self.how == "mean":
            x = x.mean((2, 3))
        elif self.how == "max_pool2d":
            x = F.max_pool2d(x, 4)
        elif self.how == "adaptive_max":
            x = F.adaptive_max_pool2d(x, (1, 1))
        return self.head(x.flatten(1))


@pytest.mark.parametrize("how", ["avg_pool2d", "mean"])
def test_pooling_over_the_whole_map_is_a_global_pool(how):
    one, two = canonical(Pool("adaptive"), 1, 3, 4, 4), canonical(Pool(how), 1, 3, 4, 4)
    assert ops(one) == ops(two) and "global_avg_pool" in ops(one)
    assert one.content_hash() == two.content_hash()


def test_max_pooling_over_the_whole_map_is_a_global_max_pool():
    one, two = canonical(Pool("adaptive_max"), 1, 3, 4, 4), canonical(Pool("max_pool2d"), 1, 3, 4, 4)
    assert ops(one) == ops(two) and "global_max_pool" in ops(one)


def test_a_pool_that_leaves_a_map_is_not_global():
    assert "avg_pool2d" in ops(canonical(Wrap(nn.AvgPool2d(4)), 1, 3, 10, 10))


class SqueezeExcite(nn.Module):
    def __init__(self, with_conv: bool, channels=16, reduced=4):
        super().__init__()
        self.with_conv = with_conv
        if with_conv:
            self.down, self.up = nn.Conv2d(channels, reduced, 1), nn.Conv2d(reduced, channels, 1)
        else:
            self.down, self.up = nn.Linear(channels, reduced), nn.Linear(reduced, channels)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        if not self.with_conv:
            s = s.flatten(1)
        s = torch.sigmoid(self.up(F.relu(self.down(s))))
        return x * s.view(x.shape[0], -1, 1, 1)


def test_squeeze_excitation_with_linear_or_1x1_conv_agree():
    one, two = canonical(SqueezeExcite(True), 1, 16, 7, 7), canonical(SqueezeExcite(False), 1, 16, 7, 7)
    assert ops(one) == ops(two)
    assert one.content_hash() == two.content_hash()
    assert "conv2d" not in ops(one)


def test_a_1x1_conv_on_a_feature_map_stays_a_conv():
    assert ops(canonical(nn.Conv2d(3, 8, 1), 1, 3, 8, 8))[1] == "conv2d"


class PatchEmbed(nn.Module):
    def __init__(self, as_conv: bool, patch=8, dim=32, unfold=False):
        super().__init__()
        self.as_conv, self.patch, self.unfold = as_conv, patch, unfold
        self.proj = nn.Conv2d(3, dim, patch, patch) if as_conv else nn.Linear(3 * patch * patch, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        if self.as_conv:
            tokens = self.proj(x).flatten(2).transpose(1, 2)
        elif self.unfold:  # Tensor.unfold windows, as some CIFAR ViTs cut their patches
            b, c, h, w = x.shape
            p = self.patch
            patches = x.unfold(2, p, p).unfold(3, p, p).permute(0, 2, 3, 4, 5, 1)
            tokens = self.proj(patches.reshape(b, (h // p) * (w // p), -1))
        else:
            b, c, h, w = x.shape
            p = self.patch
            patches = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
            tokens = self.proj(patches.reshape(b, (h // p) * (w // p), p * p * c))
        return self.norm(tokens)


@pytest.mark.parametrize("unfold", [False, True], ids=["reshape", "unfold"])
def test_patch_embedding_as_strided_conv_or_as_reshape_and_linear_agree(unfold):
    one, two = canonical(PatchEmbed(True), 1, 3, 32, 32), canonical(PatchEmbed(False, unfold=unfold), 1, 3, 32, 32)
    assert ops(one) == ops(two) == ["input", "conv2d", "layer_norm", "output"]
    assert one.content_hash() == two.content_hash()


class SelfAttention(nn.Module):
    """One attention block: fused (`scaled_dot_product_attention`) or written out by hand."""

    def __init__(self, how, dim=32, heads=4):
        super().__init__()
        self.how, self.heads = how, heads
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("causal", torch.tril(torch.ones(16, 16, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scale = 1 / math.sqrt(c // self.heads)
        if self.how == "fused":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.how == "matmul":
            scores = (q @ k.transpose(-2, -1)) * scale
            scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
            y = F.softmax(scores, dim=-1) @ v
        else:  # q scaled first, einsum, additive mask
            scores = torch.einsum("bhqd,bhkd->bhqk", q * scale, k)
            scores = scores + torch.zeros(t, t).masked_fill(~self.causal[:t, :t], float("-inf"))
            y = torch.einsum("bhqk,bhkd->bhqd", scores.softmax(dim=-1), v)
        return x + self.proj(y.transpose(1, 2).reshape(b, t, c))


@pytest.mark.parametrize("how", ["matmul", "einsum"])
def test_hand_written_attention_is_the_fused_attention(how):
    fused, by_hand = canonical(SelfAttention("fused"), 1, 16, 32), canonical(SelfAttention(how), 1, 16, 32)
    assert "attention" in ops(by_hand) and "softmax" not in ops(by_hand)
    assert ops(by_hand) == ops(fused)
    assert by_hand.content_hash() == fused.content_hash()


def test_a_softmax_that_is_not_attention_stays():
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return self.fc(x).softmax(dim=-1) * 2  # not the output itself (a probability head folds away)

    assert ops(canonical(Head(), 1, 8))[-3] == "softmax"


class Glu(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return a * torch.sigmoid(b)


def test_a_gated_unit_over_two_halves_is_not_taken_for_a_silu():
    assert "silu" not in ops(canonical(Glu(), 1, 8, 4, 4))


def test_normalising_is_idempotent_and_keeps_edges_forward():
    graph = canonical(Wrap(Lambda(ACTIVATIONS["gelu (tanh)"][1])), 1, 3, 12, 12)
    again = normalise_idioms(graph)
    assert again is graph  # nothing left to rewrite: the same object back
    raw = ArchGraph([Node("input", [1, 4]), Node("sigmoid", [1, 4]), Node("mul", [1, 4]), Node("output", [1, 4])],
                    [(0, 1), (0, 2), (1, 2), (2, 3)])
    normal = normalise_idioms(raw)
    assert ops(normal) == ["input", "silu", "output"]
    assert all(s < d for s, d in normal.edges)


def test_one_idiom_written_another_way_moves_the_embedding_by_less_than_0_02(monkeypatch):
    """Stored graphs (the zoo's, traced before a rule existed) are normalised where the encoder reads
    them, so the idiom and its library op embed alike."""
    import numpy as np

    from narcli.encode.embedder import Embedder
    from narcli.graph import canonical as canonical_module

    class Net(nn.Module):
        def __init__(self, act):
            super().__init__()
            self.stem, self.act = nn.Conv2d(3, 16, 3, 2, 1), act
            self.blocks = nn.Sequential(*[nn.Conv2d(16, 16, 3, 1, 1) for _ in range(4)])
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            x = self.act(self.stem(x))
            for conv in self.blocks:
                x = x + self.act(conv(x))
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    library = canonical(Net(nn.Hardswish()), 1, 3, 32, 32)
    # the graph as the canonicaliser made it before the idiom rules: the hard swish decomposed
    monkeypatch.setattr(canonical_module, "normalise_idioms", lambda graph: graph)
    stored = canonical(Net(Lambda(ACTIVATIONS["hard_swish"][1])), 1, 3, 32, 32)
    monkeypatch.undo()
    assert "hard_swish" not in ops(stored) and "relu6" in ops(stored)
    first, second = Embedder().embed([library, stored])
    assert float(np.dot(first.vector, second.vector)) >= 0.98


class Block(nn.Module):
    """A pre-norm transformer self-attention block with its projections written four ways."""

    def __init__(self, how, dim=32, heads=4, kv_heads=4):
        super().__init__()
        self.how, self.heads, self.kv_heads = how, heads, kv_heads
        self.norm = nn.LayerNorm(dim)
        head = dim // heads
        if how == "module":
            self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)
        elif how in ("fused", "fused prescaled"):
            self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        else:
            self.q, self.out = nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.k, self.v = nn.Linear(dim, kv_heads * head), nn.Linear(dim, kv_heads * head)
        if how == "gained":
            self.gain = nn.Parameter(torch.ones(head))

    def forward(self, x):
        h = self.norm(x)
        if self.how == "module":
            return x + self.mha(h, h, h, need_weights=False)[0]
        b, t, c = x.shape
        d = c // self.heads
        if self.how in ("fused", "fused prescaled"):
            q, k, v = self.qkv(h).split(c, dim=-1)
        else:
            q, k, v = self.q(h), self.k(h), self.v(h)
        q = q.view(b, t, self.heads, d).transpose(1, 2)
        k, v = (z.view(b, t, self.kv_heads, d).transpose(1, 2) for z in (k, v))
        if self.kv_heads != self.heads:  # grouped-query attention, k/v heads repeated by hand
            repeat = self.heads // self.kv_heads
            if self.how == "repeat_interleave":
                k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
            else:  # expand + reshape, as transformers' repeat_kv does
                k, v = (z[:, :, None].expand(b, self.kv_heads, repeat, t, d).reshape(b, self.heads, t, d)
                        for z in (k, v))
        if self.how.endswith("prescaled"):  # q * scaling, then attention at scale 1 (OPT, Whisper)
            y = F.scaled_dot_product_attention(q * d ** -0.5, k, v, scale=1.0)
        elif self.how == "gained":  # a learned gain on q is a layer, not the attention's scale
            y = F.scaled_dot_product_attention(q * self.gain, k, v)
        else:
            y = F.scaled_dot_product_attention(q, k, v)
        return x + self.out(y.transpose(1, 2).reshape(b, t, c))


@pytest.mark.parametrize("how", ["module", "fused"])
def test_attention_projections_written_as_a_module_one_linear_or_three_agree(how):
    separate, other = canonical(Block("separate"), 1, 16, 32), canonical(Block(how), 1, 16, 32)
    assert ops(separate) == ops(other) == ["input", "layer_norm", "linear", "attention", "linear", "add", "output"]
    assert separate.content_hash() == other.content_hash()
    projection = separate.nodes[2]
    assert projection.attrs["out_features"] == 96 and projection.params == 32 * 96 + 96


@pytest.mark.parametrize("how", ["prescaled", "fused prescaled"])
def test_a_query_scaled_before_the_fused_attention_is_its_scale(how):
    separate, prescaled = canonical(Block("separate"), 1, 16, 32), canonical(Block(how), 1, 16, 32)
    assert ops(prescaled) == ["input", "layer_norm", "linear", "attention", "linear", "add", "output"]
    assert prescaled.content_hash() == separate.content_hash()
    assert normalise_idioms(prescaled) is prescaled  # normal already: nothing left to fold
    assert "mul" in ops(canonical(Block("gained"), 1, 16, 32))


def test_grouped_query_heads_repeated_by_hand_or_by_expand_agree():
    one = canonical(Block("repeat_interleave", kv_heads=2), 1, 16, 32)
    two = canonical(Block("expand", kv_heads=2), 1, 16, 32)
    assert "repeat" not in ops(one)
    assert one.content_hash() == two.content_hash()


def test_cross_attention_module_projects_queries_and_memory_separately():
    class Cross(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(32, 4, batch_first=True)
            self.memory = nn.Linear(32, 32)

        def forward(self, x):
            memory = self.memory(x)
            return self.mha(x * 2, memory, memory, need_weights=False)[0]

    graph = canonical(Cross(), 1, 16, 32)
    widths = sorted(n.attrs["out_features"] for n in graph.nodes if n.op == "linear")
    assert widths == [32, 32, 32, 64]  # memory, q, out; k/v from the memory as one projection
    assert all(s < d for s, d in graph.edges)


def test_relu6_however_written_is_relu6():
    for act in (nn.ReLU6(), Lambda(F.relu6), Lambda(lambda x: F.hardtanh(x, 0.0, 6.0))):
        assert ops(canonical(Wrap(act), 1, 3, 8, 8))[2] == "relu6"


class PaddedConv(nn.Module):
    def __init__(self, separate_pad: bool):
        super().__init__()
        self.separate_pad = separate_pad
        self.conv = nn.Conv2d(3, 8, 3, padding=0 if separate_pad else 1)

    def forward(self, x):
        return self.conv(F.pad(x, (1, 1, 1, 1)) if self.separate_pad else x)


def test_a_zero_pad_before_a_conv_is_the_conv_padding():
    one, two = canonical(PaddedConv(True), 1, 3, 16, 16), canonical(PaddedConv(False), 1, 3, 16, 16)
    assert ops(one) == ops(two) == ["input", "conv2d", "output"]
    assert one.content_hash() == two.content_hash()
    assert one.nodes[1].attrs["padding"] == [1, 1]


def test_a_linear_over_a_flattened_view_is_the_linear_over_the_tensor():
    class Conv1D(nn.Module):  # GPT-2's projection: addmm over x.view(-1, d)
        def __init__(self):
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.zeros(8, 12)), nn.Parameter(torch.zeros(12))

        def forward(self, x):
            return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(*x.shape[:-1], 12)

    one, two = canonical(Conv1D(), 1, 5, 8), canonical(nn.Linear(8, 12), 1, 5, 8)
    assert ops(one) == ops(two)
    assert one.nodes[1].shape == two.nodes[1].shape == [1, 5, 12]


class Rotary(nn.Module):
    """q projected, then rotated: rotate-half (transformers' Llama) or interleaved pairs (llama2.c)."""

    def __init__(self, interleaved: bool, dim=16):
        super().__init__()
        self.interleaved = interleaved
        self.q = nn.Linear(dim, dim)
        self.register_buffer("cos", torch.ones(8, dim // 2 if interleaved else dim))
        self.register_buffer("sin", torch.zeros(8, dim // 2 if interleaved else dim))

    def forward(self, x):
        q = self.q(x)
        if self.interleaved:
            q1, q2 = q.reshape(*q.shape[:-1], -1, 2).unbind(-1)
            out = torch.stack([q1 * self.cos - q2 * self.sin, q1 * self.sin + q2 * self.cos], dim=-1)
            return out.flatten(-2)
        a, b = q.chunk(2, dim=-1)
        return q * self.cos + torch.cat((-b, a), dim=-1) * self.sin


def test_rotary_embedding_over_interleaved_pairs_is_the_rotate_half_form():
    one, two = canonical(Rotary(True), 1, 8, 16), canonical(Rotary(False), 1, 8, 16)
    assert "stack" not in ops(one) and "sub" not in ops(one)
    assert sorted(ops(one)) == sorted(ops(two))
    assert one.content_hash() == two.content_hash()
    assert all(s < d for s, d in one.edges)


class Dense(nn.Module):
    """Three dense layers: each layer's output concatenated onto a running tensor (CIFAR code), or
    all earlier outputs concatenated when a layer starts (torchvision/timm)."""

    def __init__(self, chained: bool):
        super().__init__()
        self.chained = chained
        self.layers = nn.ModuleList(nn.Conv2d(4 + 2 * k, 2, 3, padding=1) for k in range(3))

    def forward(self, x):
        if self.chained:
            for layer in self.layers:
                x = torch.cat([x, layer(x)], 1)
            return x
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


def test_dense_connections_as_a_chain_or_as_one_concat_per_layer_agree():
    one, two = canonical(Dense(True), 1, 4, 8, 8), canonical(Dense(False), 1, 4, 8, 8)
    assert ops(one) == ops(two)
    assert one.content_hash() == two.content_hash()


def test_log_softmax_on_the_logits_is_the_classifier_itself():
    head = nn.Sequential(nn.Flatten(), nn.Linear(12, 10))
    with_probabilities = nn.Sequential(head, nn.LogSoftmax(dim=1))
    assert canonical(with_probabilities, 1, 12).content_hash() == canonical(head, 1, 12).content_hash()
    assert "softmax" in ops(canonical(nn.Sequential(nn.Linear(12, 10), nn.Softmax(1), nn.Linear(10, 3)), 1, 12))


class HeadPerModule(nn.Module):
    """Attention as tutorials write a GPT: one module per head, each with its q/k/v projections and a
    causal mask, the heads' outputs concatenated, then the output projection."""

    class Head(nn.Module):
        def __init__(self, dim, size, context=16):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(dim, size) for _ in range(3))
            self.register_buffer("tril", torch.tril(torch.ones(context, context)))

        def forward(self, x):
            t = x.shape[1]
            q, k = self.q(x), self.k(x)
            w = (q @ k.transpose(-2, -1)) * k.shape[-1] ** -0.5
            w = F.softmax(w.masked_fill(self.tril[:t, :t] == 0, float("-inf")), dim=-1)
            return w @ self.v(x)

    def __init__(self, dim=32, heads=4, norm_per_head=False):
        super().__init__()
        self.norm, self.norm_per_head = nn.LayerNorm(dim), norm_per_head
        self.heads = nn.ModuleList(self.Head(dim, dim // heads) for _ in range(heads))
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        if self.norm_per_head:  # the norm called inside the loop: the same value, computed per head
            return x + self.out(torch.cat([head(self.norm(x)) for head in self.heads], dim=-1))
        h = self.norm(x)
        return x + self.out(torch.cat([head(h) for head in self.heads], dim=-1))


@pytest.mark.parametrize("norm_per_head", [False, True])
def test_attention_written_one_module_per_head_is_the_multi_head_attention(norm_per_head):
    per_head = canonical(HeadPerModule(norm_per_head=norm_per_head), 1, 16, 32)
    fused = canonical(Block("separate"), 1, 16, 32)
    assert ops(per_head) == ["input", "layer_norm", "linear", "attention", "linear", "add", "output"]
    assert per_head.content_hash() == fused.content_hash()
    attention = per_head.nodes[3]
    assert attention.shape == [1, 4, 16, 8] and attention.macs == fused.nodes[3].macs
    assert per_head.nodes[2].params == fused.nodes[2].params == 32 * 96 + 96


def test_concatenated_attentions_of_different_inputs_stay_apart():
    class TwoStreams(nn.Module):  # two attentions over different tensors: not one module's heads
        def __init__(self):
            super().__init__()
            self.a, self.b = HeadPerModule.Head(32, 16), HeadPerModule.Head(32, 16)
            self.mix = nn.Linear(32, 32)

        def forward(self, x):
            return self.mix(torch.cat([self.a(x), self.b(torch.relu(x))], dim=-1))

    graph = canonical(TwoStreams(), 1, 16, 32)
    assert ops(graph).count("attention") == 2 and "concat" in ops(graph)


def test_attentions_concatenated_along_the_tokens_stay_apart():
    class Stacked(nn.Module):  # the same input, but the outputs joined one after another, not side by side
        def __init__(self):
            super().__init__()
            self.a, self.b = HeadPerModule.Head(32, 32), HeadPerModule.Head(32, 32)

        def forward(self, x):
            return torch.cat([self.a(x), self.b(x)], dim=1)

    graph = canonical(Stacked(), 1, 16, 32)
    assert ops(graph).count("attention") == 2 and "concat" in ops(graph)


class CausalConv(nn.Module):
    """A causal convolution as a TCN's Chomp1d writes it (pad both sides, cut the end) or after a left pad."""

    def __init__(self, chomp: bool):
        super().__init__()
        self.chomp = chomp
        self.conv = nn.Conv1d(4, 8, 3, padding=4 if chomp else 0, dilation=2)
        self.out = nn.Conv1d(8, 8, 1)

    def forward(self, x):
        y = self.conv(x)[:, :, :-4] if self.chomp else self.conv(F.pad(x, (4, 0)))
        return self.out(torch.relu(y))


def test_a_convolution_cut_back_to_its_input_length_is_the_causal_convolution():
    chomped, padded = canonical(CausalConv(True), 1, 4, 32), canonical(CausalConv(False), 1, 4, 32)
    assert ops(chomped) == ops(padded) == ["input", "conv1d", "relu", "conv1d", "output"]
    assert chomped.nodes[1].shape == padded.nodes[1].shape == [1, 8, 32]
    assert chomped.summary()["params"] == padded.summary()["params"]


def test_a_slice_that_crops_below_the_input_length_stays():
    class Crop(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(4, 8, 3, padding=1)

        def forward(self, x):
            return self.conv(x)[:, :, 2:-2] * 2

    assert "slice" in ops(canonical(Crop(), 1, 4, 32))


class Gate(nn.Module):
    """WaveNet's gated activation: one convolution split in two, or a filter and a gate convolution."""

    def __init__(self, fused: bool):
        super().__init__()
        self.fused = fused
        if fused:
            self.conv = nn.Conv1d(8, 16, 3, padding=1)
        else:
            self.filter, self.gate = nn.Conv1d(8, 8, 3, padding=1), nn.Conv1d(8, 8, 3, padding=1)
        self.out = nn.Conv1d(8, 8, 1)

    def forward(self, x):
        if self.fused:
            a, b = self.conv(x).chunk(2, dim=1)
        else:
            a, b = self.filter(x), self.gate(x)
        return self.out(torch.tanh(a) * torch.sigmoid(b)) + x


class GluFeedForward(nn.Module):
    """A gated feed-forward: one `gate_up_proj` chunked (Phi-3) or `gate_proj` and `up_proj` (Llama)."""

    def __init__(self, fused: bool):
        super().__init__()
        self.fused = fused
        if fused:
            self.gate_up = nn.Linear(16, 64, bias=False)
        else:
            self.gate, self.up = nn.Linear(16, 32, bias=False), nn.Linear(16, 32, bias=False)
        self.down = nn.Linear(32, 16, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1) if self.fused else (self.gate(x), self.up(x))
        return self.down(F.silu(gate) * up)


@pytest.mark.parametrize("model, shape", [(Gate, (1, 8, 20)), (GluFeedForward, (1, 5, 16))])
def test_one_layer_split_into_parts_or_one_layer_per_part_agree(model, shape):
    fused, separate = canonical(model(True), *shape), canonical(model(False), *shape)
    assert "split" not in ops(fused)
    assert ops(fused) == ops(separate)
    assert fused.content_hash() == separate.content_hash()
    assert fused.summary()["params"] == separate.summary()["params"]


def test_a_split_whose_parts_are_not_read_one_each_stays():
    class ThreeParts(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 24)

        def forward(self, x):
            a, b, c = self.fc(x).chunk(3, dim=-1)
            return a * b + c  # two readers of three parts: which part each reads is not in the graph

    assert "split" in ops(canonical(ThreeParts(), 1, 8))


def test_stored_graphs_that_took_several_passes_are_a_fixed_point():
    """Funnel's and XLNet's attention reached their canonical form only over several passes: one call
    now gives the fixed point, and the bundled zoo stores it (what a fresh trace gives)."""
    from narcli.zoo.store import Zoo

    with Zoo() as zoo:
        models = [m for family in ("funnel", "xlnet") for m in zoo.models(family=family)]
        assert models
        for model in models:
            graph = zoo.graph(model)
            assert normalise_idioms(graph) is graph, model.id


def test_a_softmax_on_a_segmentation_head_at_the_output_is_the_head_itself():
    # a multi-class segmentation head with its per-pixel softmax or log-softmax: one design
    head = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))
    bare = canonical(head, 1, 3, 16, 16).content_hash()
    assert canonical(nn.Sequential(head, nn.Softmax(dim=1)), 1, 3, 16, 16).content_hash() == bare
    assert canonical(nn.Sequential(head, nn.LogSoftmax(dim=1)), 1, 3, 16, 16).content_hash() == bare
    # a softmax that is not the last step stays, and so does a decoder's final sigmoid over its pixels
    assert "softmax" in ops(canonical(nn.Sequential(head, nn.Softmax(dim=1), nn.Conv2d(2, 2, 1)), 1, 3, 16, 16))
    assert "sigmoid" in ops(canonical(nn.Sequential(head, nn.Sigmoid()), 1, 3, 16, 16))


def test_a_sigmoid_on_a_single_score_at_the_output_is_the_score_itself():
    # a critic trained with BCE (sigmoid in the model) or BCE-with-logits (none): one design
    critic = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(8 * 8 * 8, 1))
    assert canonical(nn.Sequential(critic, nn.Sigmoid()), 1, 3, 16, 16).content_hash() == \
        canonical(critic, 1, 3, 16, 16).content_hash()
    # DCGAN's discriminator ends in a 4x4 convolution to one value, then the sigmoid
    dcgan = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 4))
    assert "sigmoid" not in ops(canonical(nn.Sequential(dcgan, nn.Sigmoid()), 1, 3, 8, 8))
    # a sigmoid over ten multi-label scores, or one that is not the last step, stays
    assert "sigmoid" in ops(canonical(nn.Sequential(nn.Linear(12, 10), nn.Sigmoid()), 1, 12))
    assert "sigmoid" in ops(canonical(nn.Sequential(nn.Linear(12, 1), nn.Sigmoid(), nn.Linear(1, 2)), 1, 12))


class CappedReLU(nn.Module):
    """Deep Speech's clipped ReLU, min(max(x, 0), 20), written three ways."""

    def __init__(self, spelling: str):
        super().__init__()
        self.spelling = spelling
        self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x):
        x = self.a(x)
        if self.spelling == "hardtanh":
            x = F.hardtanh(x, 0.0, 20.0)
        elif self.spelling == "relu then clamp":
            x = torch.clamp(torch.relu(x), max=20.0)
        else:
            x = F.relu(x).clamp_max(20.0)
        return self.b(x)


def test_a_relu_capped_by_clamp_is_the_clipped_relu_hardtanh_traces_to():
    hashes = {spelling: canonical(CappedReLU(spelling), 1, 16) for spelling in
              ("hardtanh", "relu then clamp", "relu then clamp_max")}
    assert len({g.content_hash() for g in hashes.values()}) == 1
    assert ops(hashes["relu then clamp"]).count("relu6") == 1 and "clamp" not in ops(hashes["relu then clamp"])

    class Shared(nn.Module):  # the ReLU is read elsewhere too: the clamp is not a cap on it alone
        def forward(self, x):
            r = torch.relu(x)
            return r.clamp(max=20.0) + r

    assert {"relu", "clamp"} <= set(ops(canonical(Shared(), 1, 16)))


class ConvOrLinearHead(nn.Module):
    """LeNet-5's C5: a 5×5 convolution over the 5×5 map, or the same layer as a Linear on the flattened map."""

    def __init__(self, as_conv: bool):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2))  # 14 -> 10 -> 5
        self.c5 = nn.Conv2d(16, 120, 5) if as_conv else nn.Linear(16 * 25, 120)
        self.as_conv = as_conv
        self.f6 = nn.Linear(120, 10)

    def forward(self, x):
        x = self.features(x)
        x = self.c5(x).flatten(1) if self.as_conv else self.c5(x.flatten(1))
        return self.f6(torch.relu(x))


def test_a_convolution_over_its_whole_map_is_a_linear_layer():
    conv, linear = canonical(ConvOrLinearHead(True), 1, 1, 14, 14), canonical(ConvOrLinearHead(False), 1, 1, 14, 14)
    assert ops(conv) == ops(linear) and ops(conv).count("linear") == 2
    c5 = next(n for n in conv.nodes if n.op == "linear")
    assert c5.attrs == {"in_features": 16 * 25, "out_features": 120} and c5.params == 16 * 25 * 120 + 120
    # padded, or smaller than the map: a convolution still
    for layer, side in ((nn.Conv2d(16, 8, 5, padding=2), 5), (nn.Conv2d(16, 8, 3), 3)):
        model = nn.Sequential(nn.Conv2d(1, 16, 5), layer, nn.Flatten(), nn.Linear(8 * side * side, 2))
        assert ops(canonical(model, 1, 1, 9, 9)).count("conv2d") == 2


class ProjectLatent(nn.Module):
    """A DCGAN generator's first layer: a transposed 4×4 convolution of the 1×1 latent, or the same
    as a Linear to 64×4×4 and a reshape (as eriklindernoren's PyTorch-GAN writes it)."""

    def __init__(self, as_conv: bool):
        super().__init__()
        self.as_conv = as_conv
        self.project = nn.ConvTranspose2d(100, 64, 4, 1, 0) if as_conv else nn.Linear(100, 64 * 16)
        self.up = nn.ConvTranspose2d(64, 3, 4, 2, 1)

    def forward(self, z):
        x = self.project(z) if self.as_conv else self.project(z.flatten(1)).view(-1, 64, 4, 4)
        return self.up(torch.relu(x))


def test_a_transposed_convolution_of_a_1x1_map_to_its_kernel_is_a_linear_layer():
    conv, linear = canonical(ProjectLatent(True), 1, 100, 1, 1), canonical(ProjectLatent(False), 1, 100, 1, 1)
    assert ops(conv) == ops(linear) == ["input", "linear", "relu", "conv_transpose2d", "output"]
    one, two = conv.nodes[1], linear.nodes[1]
    assert one.attrs == two.attrs == {"in_features": 100, "out_features": 64 * 16}
    assert (one.params, two.params) == (100 * 64 * 16 + 64, 100 * 64 * 16 + 64 * 16)  # a bias per channel, or per unit
    # a later transposed convolution, from a map larger than 1×1, stays one
    assert conv.nodes[3].attrs["kernel"] == [4, 4]
