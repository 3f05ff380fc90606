"""Tracing torch modules into graphs: the tracers agree, fall back in order, run on meta tensors, refuse
what has no graph, a nanoGPT-shaped file scans with no options, and (slow) a 7B config and the ResNet-50
fixture reach their published sizes."""

import json

import pytest
import torch
from torch import nn

from narcli.graph.canonical import build_graph
from narcli.trace.torch_tracer import TRACERS, trace_module

from .conftest import FIXTURES
from .models import SmallResNet, SmallTransformer


def traced(model, *inputs, tracers=TRACERS):
    raw, tracer = trace_module(model, list(inputs), tracers)
    return build_graph(raw, {"tracer": tracer}), tracer


@pytest.mark.parametrize("tracer", TRACERS)
def test_every_tracer_gives_the_same_resnet_graph(tracer):
    with torch.device("meta"):
        model, x = SmallResNet(), torch.empty(1, 3, 32, 32)
    graph, used = traced(model, x, tracers=(tracer,))
    reference, _ = traced(model, x, tracers=("export",))
    assert used == tracer
    assert graph.content_hash() == reference.content_hash()
    hist = graph.op_histogram()
    assert hist["conv2d"] == 15 and hist["add"] == 6
    assert "batch_norm" not in hist  # folded into the convolutions
    assert hist["global_avg_pool"] == 1 and hist["linear"] == 1
    assert graph.params == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("tracer", TRACERS)
def test_every_tracer_gives_the_same_transformer_graph(tracer):
    with torch.device("meta"):
        model, ids = SmallTransformer(), torch.zeros(1, 16, dtype=torch.long)
    graph, _ = traced(model, ids, tracers=(tracer,))
    reference, _ = traced(model, ids, tracers=("export",))
    assert graph.content_hash() == reference.content_hash()
    hist = graph.op_histogram()
    assert hist["attention"] == 2 and hist["embedding"] == 1 and hist["layer_norm"] == 5
    assert hist["linear"] == 2 * 4 + 1 and hist["gelu"] == 2


class _Shuffle(nn.Module):
    """A channel shuffle and a transposed product, in old-style (`x.data.size()`, `.T`) or plain spelling."""

    def __init__(self, old_style: bool):
        super().__init__()
        self.old_style = old_style
        self.conv = nn.Conv2d(4, 4, 1)
        self.weight = nn.Parameter(torch.empty(8, 4))

    def forward(self, x):
        x = self.conv(x)
        n, c, h, w = x.data.size() if self.old_style else x.size()
        x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
        pooled = x.mean((2, 3))
        return pooled @ (self.weight.T if self.old_style else self.weight.t())


@pytest.mark.parametrize("tracer", TRACERS)
def test_property_reads_are_the_calls_they_stand_for(tracer):
    """`x.data` is the tensor itself and `x.T` a transpose: before, the runtime tracer recorded each
    as an unknown `get` node, and an old-style ShuffleNetV2 landed nowhere near torchvision's."""
    with torch.device("meta"):
        old, plain, x = _Shuffle(True), _Shuffle(False), torch.empty(1, 4, 8, 8)
    graph, _ = traced(old, x, tracers=(tracer,))
    reference, _ = traced(plain, x, tracers=(tracer,))
    assert not [n.op for n in graph.nodes if n.op.startswith("unknown")]
    assert graph.content_hash() == reference.content_hash()


def test_other_property_reads_keep_their_own_name():
    from narcli.trace.torch_tracer import property_call

    assert (property_call("data"), property_call("T"), property_call("mT")) == ("detach", "t", "transpose")
    assert property_call("real") == "real"


class _Gate(nn.Module):
    """A squeeze-and-excitation gate whose weights get their spatial dimensions by indexing with None
    (`w[:, :, None, None]`, as hand-written code often does) or by `unsqueeze`."""

    def __init__(self, indexing: bool):
        super().__init__()
        self.indexing = indexing
        self.conv, self.fc = nn.Conv2d(4, 8, 3), nn.Linear(8, 8)

    def forward(self, x):
        x = self.conv(x)
        w = torch.sigmoid(self.fc(x.mean((2, 3))))
        return x * (w[:, :, None, None] if self.indexing else w.unsqueeze(-1).unsqueeze(-1))


@pytest.mark.parametrize("tracer", TRACERS)
def test_indexing_with_none_is_an_unsqueeze_in_every_tracer(tracer):
    """torch.export records `w[:, :, None, None]` as unsqueezes (folded); run-time recording and fx
    recorded a slice, so the same file gave two graphs depending on the tracer."""
    with torch.device("meta"):
        indexing, plain, x = _Gate(True), _Gate(False), torch.empty(1, 4, 16, 16)
    graph, _ = traced(indexing, x, tracers=(tracer,))
    reference, _ = traced(plain, x, tracers=("export",))
    assert "slice" not in graph.op_histogram()
    assert graph.content_hash() == reference.content_hash()


class _Reparametrised(nn.Module):
    """A weight-standardised convolution (NFNet, BiT) and a weight-normed one (wav2vec2's positions)."""

    def __init__(self):
        super().__init__()
        self.std = nn.Conv2d(3, 8, 3, padding=1)
        self.normed = nn.utils.parametrizations.weight_norm(nn.Conv2d(8, 8, 3, padding=1))

    def forward(self, x):
        w = torch.nn.functional.batch_norm(self.std.weight.reshape(1, 8, -1), None, None, training=True,
                                           momentum=0.0).reshape_as(self.std.weight)
        return self.normed(torch.relu(torch.nn.functional.conv2d(x, w, self.std.bias, padding=1)))


@pytest.mark.parametrize("tracer", TRACERS)
def test_a_layer_owns_the_parameters_its_weight_is_computed_from(tracer):
    """A weight computed from parameters at every call is still the layer's weight: it counts in the
    layer's parameters (the graph's hash and the encoder read them), and the latency head reads what
    computing it moves. fx, which keeps a weight-normed convolution as one module, agrees."""
    with torch.device("meta"):
        model, x = _Reparametrised(), torch.empty(1, 3, 8, 8)
    graph, _ = traced(model, x, tracers=(tracer,))
    reference, _ = traced(model, x, tracers=("export",))
    std, normed = [n for n in graph.nodes if n.op == "conv2d"]
    assert std.params == 8 * 3 * 9 + 8 and normed.params == 8 * 8 * 9 + 8 + 8  # weight norm: v, g, bias
    assert graph.params == sum(p.numel() for p in model.parameters())
    assert graph.content_hash() == reference.content_hash()
    assert std.attrs["reparam_elements"] >= 2 * 8 * 3 * 9  # the weight read and written standardised
    if tracer != "fx":
        assert normed.attrs["reparam_elements"] >= 2 * 8 * 8 * 9


class _Codebook(nn.Module):
    """A VQ-VAE's quantiser, its nearest codebook rows found with `torch.cdist` (diffusers' VQModel)."""

    def __init__(self):
        super().__init__()
        self.encoder, self.codebook = nn.Conv2d(3, 16, 4, stride=4), nn.Embedding(64, 16)

    def forward(self, x):
        z = self.encoder(x)
        b, c, h, w = z.shape
        distances = torch.cdist(z.permute(0, 2, 3, 1).reshape(-1, c), self.codebook.weight)
        q = self.codebook(distances.argmin(1)).view(b, h, w, c).permute(0, 3, 1, 2)
        return z + (q - z).detach()


class _Distances(nn.Module):
    def forward(self, x, y):
        return torch.cdist(x, y)


@pytest.mark.parametrize("tracer", TRACERS)
def test_pairwise_distances_are_a_product_with_its_macs(tracer):
    """`cdist` was `unknown:cdist`: no latency for a model using it, and a VQ-VAE written with it sat
    apart from one that writes the distance out. Against a codebook parameter it is a linear layer
    from the code width to the codebook size (the codebook's rows are its outputs)."""
    with torch.device("meta"):
        model, x = _Codebook(), torch.empty(1, 3, 32, 32)
    graph, _ = traced(model, x, tracers=(tracer,))
    assert not [op for op in graph.op_histogram() if op.startswith("unknown")]
    (search,) = [n for n in graph.nodes if n.op == "linear"]
    assert (search.attrs["in_features"], search.attrs["out_features"]) == (16, 64)
    positions = 8 * 8
    assert graph.macs == positions * 16 * (3 * 4 * 4) + positions * 64 * 16  # the encoder, then the search
    pairs, _ = traced(_Distances(), torch.empty(2, 10, 8, device="meta"), torch.empty(2, 7, 8, device="meta"),
                      tracers=(tracer,))
    assert pairs.op_histogram()["matmul"] == 1 and pairs.macs == 2 * 10 * 7 * 8


def test_only_indices_that_add_unit_dimensions_are_views():
    from narcli.trace.torch_ops import only_adds_unit_dims

    assert only_adds_unit_dims((slice(None), slice(None), None, None))
    assert only_adds_unit_dims(None) and only_adds_unit_dims((Ellipsis, None))
    assert not only_adds_unit_dims((slice(None), slice(0, 4), None))
    assert not only_adds_unit_dims((slice(None), 0)) and not only_adds_unit_dims(1)


def test_conv_attributes_params_and_macs():
    with torch.device("meta"):
        model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.Conv2d(8, 8, 3, groups=8))
        x = torch.empty(1, 3, 16, 16)
    graph, _ = traced(model, x)
    conv, dw = [n for n in graph.nodes if "conv" in n.op]
    assert conv.op == "conv2d" and dw.op == "depthwise_conv2d"
    assert conv.attrs == {"in_channels": 3, "out_channels": 8, "kernel": [3, 3], "stride": [2, 2],
                          "dilation": [1, 1], "groups": 1, "padding": [1, 1]}
    assert conv.shape == [1, 8, 8, 8] and conv.params == 8 * 3 * 9 + 8
    assert conv.macs == 8 * 8 * 8 * 3 * 9
    assert dw.macs == 8 * 6 * 6 * 9


class ExportShy(nn.Module):
    """A model torch.export can't trace; with `loop`, torch.fx can't either."""

    def __init__(self, refuse_export=False):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.refuse_export = refuse_export

    def forward(self, x):
        modes = torch.overrides._get_current_function_mode_stack()
        if any(type(mode).__name__ == "Recorder" for mode in modes):  # nar's run-time tracer
            raise RuntimeError("unsupported while recorded")
        if self.refuse_export and torch.compiler.is_exporting():
            raise RuntimeError("unsupported by export")
        return self.fc(x).relu()


@pytest.mark.parametrize("refuse_export, expected", [(False, "export"), (True, "fx")])
def test_tracing_falls_back_in_order(refuse_export, expected):
    with torch.device("meta"):
        model = ExportShy(refuse_export)
    raw, tracer = trace_module(model, [torch.empty(2, 4, device="meta")])
    assert tracer == expected
    assert build_graph(raw).op_histogram()["linear"] == 1


def test_untraceable_forward_raises_trace_error():
    from narcli.errors import TraceError

    class Broken(nn.Module):
        def forward(self, x):
            raise ValueError("shapes do not match")

    with pytest.raises(TraceError, match="shapes do not match"):
        trace_module(Broken(), [torch.empty(1, device="meta")])


def test_a_forward_returning_a_generator_is_refused_not_stored_as_an_empty_graph(cli, write):
    from narcli.errors import TraceError

    class Lazy(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 4)

        def forward(self, x):
            yield self.body(x)  # nothing runs until iterated

    with pytest.raises(TraceError, match="forward returned a generator, not tensors"):
        trace_module(Lazy(), [torch.empty(1, 4, device="meta")])
    model = write("lazy.py", """
        from torch import nn

        class Lazy(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 4)

            def forward(self, x):
                for _ in range(2):
                    yield self.body(x)
    """)
    result = cli("scan", model, "-i", "1,4")
    assert result.exit_code == 1 and "forward returned a generator" in result.stderr, result.output
    assert "Traceback" not in result.output


def test_a_forward_that_runs_no_tensor_operation_is_refused():
    from narcli.errors import TraceError

    class Nothing(nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(TraceError, match="ran no tensor operation"):
        trace_module(Nothing(), [torch.empty(1, 4, device="meta")])


def test_unknown_functions_are_kept_as_unknown():
    class Odd(nn.Module):
        def forward(self, x):
            return torch.special.bessel_j0(x) + 1

    graph, _ = traced(Odd(), torch.empty(2, 2, device="meta"))
    assert any(op.startswith("unknown:") for op in graph.op_histogram())


class ReadsValues(nn.Module):
    """Reads tensor values in forward, as transformers heads do: meta tensors have none."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, ids, x):
        eos_per_row = torch.unique_consecutive(ids.eq(2).sum(1))
        if len(eos_per_row) > 1:
            raise ValueError("rows differ in EOS count")
        scale = torch.tensor([2.0], device="cpu")  # a constant made on the CPU inside forward
        return self.fc(x) * scale + int(ids.max().item())


def test_value_reads_and_cpu_constants_run_on_meta():
    with torch.device("meta"):
        model = ReadsValues()
    raw, tracer = trace_module(model, [torch.empty(2, 5, dtype=torch.long, device="meta"),
                                       torch.empty(2, 4, device="meta")], ("runtime",))
    graph = build_graph(raw)
    assert tracer == "runtime"
    assert graph.op_histogram()["linear"] == 1
    assert raw.guessed_values == 2  # unique_consecutive and item were answered with guesses


def test_run_on_meta_runs_a_model_that_reads_values():
    from narcli.trace.torch_tracer import run_on_meta

    with torch.device("meta"):
        model = ReadsValues()
    out = run_on_meta(lambda: model(torch.empty(2, 5, dtype=torch.long, device="meta"),
                                    torch.empty(2, 4, device="meta")))
    assert out.is_meta and tuple(out.shape) == (2, 4)


class SampledGate(nn.Module):
    """A forward that builds a torch.distributions object from activations (Gemma 3n does)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        gate = torch.distributions.Normal(h.mean(), h.std())
        return h * gate.icdf(torch.tensor(0.9, device=h.device))


def test_distribution_argument_checks_do_not_stop_a_meta_trace():
    with torch.device("meta"):
        model = SampledGate()
    raw, tracer = trace_module(model, [torch.empty(2, 4, device="meta")])
    assert tracer == "runtime"
    assert torch.distributions.Distribution._validate_args  # the default is restored afterwards


# the nanoGPT file shape: a config dataclass passed to the model and to its inner blocks
NANO_GPT = """import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 100
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd)))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))
"""


def test_a_nanogpt_shaped_file_scans_with_no_options(cli, write):
    import json

    path = write("model.py", NANO_GPT)
    result = cli("scan", path, "--json")
    assert result.exit_code == 0, result.output
    assert [m["name"] for m in json.loads(result.stdout)["models"]] == ["GPT(GPTConfig())"]
    named = cli("scan", path, "--model", "GPT", "--json")  # the bare class name fills in the config too
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout)["models"][0]["name"] == "GPT(GPTConfig())"


@pytest.mark.slow  # a 7B-parameter config built on meta: the opt-in job (`pytest -m slow`)
def test_llama_7b_traces_on_meta_with_the_published_parameter_count(cli):
    result = cli("scan", FIXTURES / "llama7b.py", "--model", "llama_7b", "--input-shape", "1,128",
                 "--input-dtype", "long", "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["params"] == 6_738_415_616
    ops = dict(model["top_ops"])
    assert ops["linear"] == 32 * 7 + 1


@pytest.mark.slow
def test_resnet50_fixture_matches_torchvision_figures(cli):
    result = cli("scan", FIXTURES / "resnet50.py", "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["params"] == 25_557_032
    assert abs(model["macs"] - 4.09e9) < 0.01e9
    assert dict(model["top_ops"])["conv2d"] == 53


def test_the_bundled_zoo_holds_no_graph_traced_before_the_tracers_agreed():
    """A zoo graph recorded before a tracer fix would no longer match a fresh scan of its model: no
    stored graph may keep a property read as an unknown `get`, or a slice that only adds unit
    dimensions, and the designs that compute their convolutions' weights (NFNet and BiT standardise
    them, the wav2vec2 family's position convolution is weight-normed) must own those weights
    (each is traced again whenever these rules change)."""
    import math

    from narcli.zoo.store import Zoo

    def squeezed(shape):
        return [d for d in shape if d != 1]

    def unowned_weight(node):
        a = node.attrs
        if not node.op.endswith(("conv1d", "conv2d")) or "in_channels" not in a:
            return False
        weight = a["in_channels"] * a["out_channels"] * math.prod(a["kernel"]) // a["groups"]
        return node.params < weight or "reparam_elements" not in a

    reparametrised = {"nfnet", "resnetv2_bit", "wav2vec2", "hubert", "wavlm"}

    stale = set()
    with Zoo() as zoo:
        seen = set()
        for model in zoo.models():
            if model.graph_hash in seen:
                continue
            seen.add(model.graph_hash)
            graph = zoo.graph(model)
            parent = {dst: src for src, dst in graph.edges}
            for i, node in enumerate(graph.nodes):
                source = graph.nodes[parent[i]] if i in parent else None
                if node.op == "unknown:get" or (
                        node.op == "slice" and source is not None and node.shape and source.shape
                        and len(node.shape) > len(source.shape) and squeezed(node.shape) == squeezed(source.shape)):
                    stale.add(model.id)
                if model.family in reparametrised and unowned_weight(node) and node.op != "conv1d":
                    stale.add(model.id)
                if model.family in reparametrised and "pos_conv" in node.scope and unowned_weight(node):
                    stale.add(model.id)
    assert len(seen) > 3000 and not stale
