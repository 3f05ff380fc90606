import pytest
import torch
from torch import nn

from narcli.errors import UsageError
from narcli.trace.inputs import InputSpec, guess_inputs, parse_inputs


def test_parse_shapes_and_dtypes():
    assert parse_inputs(None, None) is None
    assert parse_inputs(["1,3,224,224"], None) == [InputSpec((1, 3, 224, 224), "float32")]
    assert parse_inputs(["1,128"], ["long"]) == [InputSpec((1, 128), "int64")]
    assert parse_inputs(["1,4", "1,8"], ["float", "long"]) == [InputSpec((1, 4)), InputSpec((1, 8), "int64")]
    assert parse_inputs(["1x3x32x32"], None) == [InputSpec((1, 3, 32, 32))]


@pytest.mark.parametrize("shapes, dtypes", [
    (["1,a"], None), (["0,3"], None), ([""], None), (["1,3"], ["complex7"]), (None, ["long"]),
    (["1", "2", "3"], ["long", "float"]),
])
def test_bad_specs_are_usage_errors(shapes, dtypes):
    with pytest.raises(UsageError):
        parse_inputs(shapes, dtypes)


@pytest.mark.parametrize("layer, shape, dtype, word", [
    (nn.Conv2d(3, 8, 3), (1, 3, 224, 224), "float32", "image"),
    (nn.Conv1d(2, 8, 3), (1, 2, 1024), "float32", "signal"),
    (nn.Conv3d(3, 8, 3), (1, 3, 16, 112, 112), "float32", "video"),
    (nn.Embedding(100, 8), (1, 128), "int64", "token ids"),
    (nn.Linear(20, 8), (1, 20), "float32", "vector"),
    (nn.LSTM(10, 8, batch_first=True), (1, 32, 10), "float32", "sequence"),
    (nn.GRUCell(10, 8), (1, 32, 10), "float32", "sequence"),  # a cell stepped by hand over x[:, t]
])
def test_guess_from_first_layer(layer, shape, dtype, word):
    [spec], why = guess_inputs(nn.Sequential(layer, nn.Identity()))
    assert spec == InputSpec(shape, dtype)
    assert why.startswith(word) and "first layer" in why


class _WSConv2d(nn.Conv2d):
    """A weight-standardised convolution as NFNet code writes it: a subclass with its own forward."""


def test_a_subclass_of_a_torch_layer_reads_its_input_as_the_layer_does():
    # an NFNet written by hand was guessed from its classifier (Linear(2048)) and ran at 32 px
    model = nn.Sequential(_WSConv2d(3, 8, 7, 2), nn.Flatten(), nn.Linear(2048, 10))
    [spec], why = guess_inputs(model)
    assert spec == InputSpec((1, 3, 224, 224))
    assert why.startswith("image") and "_WSConv2d(3, ...)" in why


class Linear(nn.Module):
    """torch_geometric's own Linear (not an nn.Linear): it names its width in_channels, -1 while lazy."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.weight = nn.Parameter(torch.zeros(out_channels, max(in_channels, 1)))


def test_a_linear_that_names_its_width_in_channels_reads_as_a_vector():
    # a GCN over torch_geometric's GCNConv stopped with "'Linear' object has no attribute 'in_features'"
    [spec], why = guess_inputs(nn.Sequential(Linear(1433, 16), nn.Identity()))
    assert spec == InputSpec((1, 1433)) and why.startswith("vector")
    # a lazy one says nothing about the input: the next layer decides
    [spec], _ = guess_inputs(nn.Sequential(Linear(-1, 16), nn.Conv2d(3, 8, 3)))
    assert spec == InputSpec((1, 3, 224, 224))


GCN_FILE = '''
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(1433, 16), GCNConv(16, 7)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)
'''

GIN_GRAPHS_FILE = '''
from torch import nn
from torch_geometric.nn import GINConv, global_add_pool

class GIN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = GINConv(nn.Sequential(nn.Linear(7, 32), nn.ReLU(), nn.Linear(32, 32)))
        self.head = nn.Linear(32, 2)

    def forward(self, x, edge_index, batch):
        return self.head(global_add_pool(self.conv(x, edge_index), batch))
'''


@pytest.mark.parametrize("source, shapes, dtypes, first", [
    (GCN_FILE, [[200, 1433], [2, 800]], ["float32", "int64"], "conv1: GCNConv(1433"),
    # GINConv has no width of its own: the Linear inside it says 7; a graph classifier takes `batch` too
    (GIN_GRAPHS_FILE, [[200, 7], [2, 800], [200]], ["float32", "int64", "int64"], "conv.nn.0: Linear(7"),
])
def test_a_graph_network_is_traced_with_node_features_and_edge_indices(cli, write, source, shapes, dtypes, first):
    # `forward(x, edge_index)` as torch_geometric's examples write it asked for --input-shape
    pytest.importorskip("torch_geometric")
    import json

    result = cli("scan", write("gnn.py", source), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [record] = data["models"] if isinstance(data, dict) and "models" in data else data
    assert [i["shape"] for i in record["inputs"]] == shapes and [i["dtype"] for i in record["inputs"]] == dtypes
    assert "graph (200 nodes, 800 edges" in record["assumed"] and first in record["assumed"]
    assert record["macs"] > 0


class _Denoiser(nn.Module):
    """A diffusion model's forward(x, t[, y]): its first Linear is the time embedding's, not the input's."""

    def __init__(self):
        super().__init__()
        self.time = nn.Linear(16, 32)
        self.conv = nn.Conv2d(3, 32, 3, padding=1)


class _StepDenoiser(_Denoiser):
    def forward(self, x, t):
        return self.conv(x) + self.time(t[:, None].float().expand(-1, 16))[:, :, None, None]


class _ClassDenoiser(_Denoiser):
    def forward(self, x, timesteps, class_labels):
        return self.conv(x) + self.time((timesteps + class_labels)[:, None].float().expand(-1, 16))[:, :, None, None]


class _Masked(_Denoiser):
    def forward(self, x, mask):  # a mask's shape is not guessed: one input, and forward fails clearly
        return self.conv(x) * mask


def test_a_forward_that_takes_a_timestep_or_a_label_gets_one_per_sample():
    specs, why = guess_inputs(_StepDenoiser())
    assert specs == [InputSpec((1, 3, 224, 224)), InputSpec((1,), "int64")]
    assert why.startswith("image (first layer conv") and why.endswith("and t int64[1]")
    specs, why = guess_inputs(_ClassDenoiser())
    assert specs == [InputSpec((1, 3, 224, 224)), InputSpec((1,), "int64"), InputSpec((1,), "int64")]
    assert "timesteps int64[1], class_labels int64[1]" in why
    specs, why = guess_inputs(_Masked())
    assert specs == [InputSpec((1, 16))] and "mask" not in why  # as before: the first layer with weights


class _Sentences(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 16)

    def forward(self, input_ids, attention_mask):
        return self.embed(input_ids) * attention_mask[..., None]


class _Translator(_Sentences):
    def forward(self, src, tgt):
        return self.embed(src).mean(1) + self.embed(tgt).mean(1)


class _Padded(_Sentences):
    def forward(self, tokens, key_padding_mask):
        return self.embed(tokens).masked_fill(key_padding_mask[..., None], 0.0)


class _Pair(nn.Module):
    """A Siamese network's tower, built for 20 px: 224 px does not fit its head."""

    def __init__(self):
        super().__init__()
        self.tower = nn.Sequential(nn.Conv2d(1, 4, 5), nn.Flatten(), nn.Linear(4 * 16 * 16, 8))

    def forward(self, x1, x2):
        return (self.tower(x1) - self.tower(x2)).abs()


def test_a_mask_a_target_or_a_twin_input_is_made_from_the_first():
    specs, why = guess_inputs(_Sentences())
    assert specs == [InputSpec((1, 128), "int64"), InputSpec((1, 128), "int64")]
    assert why.endswith("and attention_mask int64[1,128]")
    assert guess_inputs(_Translator())[0] == [InputSpec((1, 128), "int64")] * 2
    assert guess_inputs(_Padded())[0] == [InputSpec((1, 128), "int64"), InputSpec((1, 128), "bool")]
    specs, why = guess_inputs(_Pair())
    assert specs == [InputSpec((1, 1, 224, 224))] * 2 and why.endswith("and x2 float32[1,1,224,224]")


def test_a_pair_of_images_is_traced_at_the_side_its_head_names():
    from narcli.trace.input_search import trace_guessing_inputs
    from narcli.trace.torch_tracer import trace_module

    _, _, specs, about, _ = trace_guessing_inputs("Pair", _Pair(), trace_module)
    assert specs == [InputSpec((1, 1, 20, 20))] * 2
    assert "and x2 float32[1,1,20,20]" in about and "float32[1,1,224,224], float32[1,1,224,224]," in about
    assert about.endswith("failed, float32[1,1,20,20], float32[1,1,20,20] ran")


DENOISER_FILE = '''
from torch import nn

class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.time = nn.Sequential(nn.Linear(1, 32), nn.SiLU())
        self.conv = nn.Conv2d(3, 32, 3, padding=1)

    def forward(self, x, t):
        return self.conv(x) + self.time(t[:, None].float())[:, :, None, None]
'''


def test_a_diffusion_model_written_with_forward_x_t_is_traced(cli, write):
    # it asked for --input-shape: one image was guessed and forward missed `t`
    import json

    result = cli("scan", write("ddpm.py", DENOISER_FILE), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [record] = data["models"] if isinstance(data, dict) and "models" in data else data
    assert [i["shape"] for i in record["inputs"]] == [[1, 3, 224, 224], [1]]
    assert [i["dtype"] for i in record["inputs"]] == ["float32", "int64"]
    assert record["assumed"].endswith("and t int64[1]")


def test_guess_fails_clearly_without_a_known_first_layer():
    with pytest.raises(UsageError, match="--input-shape"):
        guess_inputs(nn.Sequential(nn.ReLU()))


PATCH_LINEAR_VIT = '''
import torch
from torch import nn

class PatchViT(nn.Module):
    """Patches unfolded by hand, embedded by a Linear: the first layer with weights takes 48 features."""
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(48, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        b, c, h, w = x.shape
        patches = x.unfold(2, 4, 4).unfold(3, 4, 4).reshape(b, c, -1, 16).permute(0, 2, 1, 3).reshape(b, -1, 48)
        return self.head(self.embed(patches).mean(1))
'''

WAVEFORM = '''
from torch import nn

class Waveform(nn.Module):
    """Takes (batch, samples) and adds the channel axis itself, like wav2vec 2.0."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 8, 10, stride=5)

    def forward(self, x):
        return self.conv(x.unsqueeze(1))
'''

SPEECH_SUBSAMPLING = '''
from torch import nn

class Subsampling(nn.Module):
    """Takes (batch, frames, 80 mel bins) and adds the channel axis itself, as Conformer code does."""
    def __init__(self, mels=80, d=64):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        self.proj = nn.Linear(d * (((mels - 1) // 2 - 1) // 2), d)

    def forward(self, mel):
        x = self.conv(mel.unsqueeze(1))
        b, c, t, f = x.shape
        return self.proj(x.transpose(1, 2).reshape(b, t, c * f))
'''

LENET_MNIST = '''
import torch
from torch import nn

class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                                      nn.MaxPool2d(2))
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))
'''


@pytest.mark.parametrize("source, shape", [(PATCH_LINEAR_VIT, [1, 3, 32, 32]), (WAVEFORM, [1, 1024]),
                                           (SPEECH_SUBSAMPLING, [1, 200, 80]),
                                           (LENET_MNIST, [1, 1, 28, 28])])
def test_a_model_whose_first_guess_fails_finds_an_input_that_runs(cli, write, source, shape):
    """Issue 43 item 9: nar tries further inputs (the kinds a first layer allows, common sizes) and
    says which failed and which ran, instead of asking for --input-shape."""
    import json

    result = cli("scan", write("net.py", source), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [record] = data["models"] if isinstance(data, dict) and "models" in data else data
    assert record["inputs"][0]["shape"] == shape
    assert "failed" in record["assumed"] and f"float32[{','.join(map(str, shape))}] ran" in record["assumed"]


def test_the_side_a_failed_head_names():
    from narcli.trace.inputs import side_from_mismatch

    assert side_from_mismatch("a and b must have same reduction dim, but got [1, 25088] X [512, 10].", 224) == 32
    assert side_from_mismatch("mat1 and mat2 shapes cannot be multiplied (1x100352 and 2048x10)", 224) == 32
    assert side_from_mismatch("mat1 and mat2 shapes cannot be multiplied (1x300 and 7x10)", 224) is None
    assert side_from_mismatch("some other error", 224) is None


def test_the_side_two_failed_heads_name_without_a_whole_ratio():
    from narcli.trace.inputs import side_from_two_mismatches

    at_224 = (224, "a and b must have same reduction dim, but got [1, 36864] X [3136, 512].")
    at_64 = (64, "mat1 and mat2 shapes cannot be multiplied (1x1024 and 3136x512)")
    assert side_from_two_mismatches(at_224, at_64) == 88 == side_from_two_mismatches(at_64, at_224)
    assert side_from_two_mismatches(at_224, (64, "some other error")) is None
    assert side_from_two_mismatches(at_224, (64, "(1x1024 and 2048x10)")) is None  # another head: no line


ATARI_DQN = '''
from torch import nn

class QNetwork(nn.Module):
    """The Nature DQN: 84x84 frames, convolutions without padding, so no side divides into the head."""
    def __init__(self, actions=6):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
                                 nn.Conv2d(64, 64, 3, 1), nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(),
                                 nn.Linear(512, actions))

    def forward(self, x):
        return self.net(x)
'''


def test_a_head_built_for_a_side_no_ratio_gives_is_found_from_two_errors(cli, write):
    import json

    result = cli("scan", write("dqn.py", ATARI_DQN), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [record] = data["models"] if isinstance(data, dict) and "models" in data else data
    side = record["inputs"][0]["shape"][2]
    assert record["inputs"][0]["shape"] == [1, 4, side, side] and 84 <= side <= 91  # every side its head fits
    assert f"float32[1,4,{side},{side}] ran" in record["assumed"]


def test_example_inputs_in_a_models_file_are_read_most_used_first():
    from narcli.trace.inputs import ExampleInput, example_inputs

    source = "\n".join([
        "import torch",
        "x = torch.randn(1, 3, 224, 224)",                # line 2
        "y = net(torch.randn(2, 3, 32, 32))",             # line 3
        "z = torch.zeros((4, 3, 32, 32), device='cpu')",  # line 4: a tuple, another batch: the same size
        "m = torch.rand(size=(1, 1, 28, 28))",            # line 5
        "w = torch.ones([8, 3, 64, 48])",                 # line 6: not square
        "a = torch.randn(1, 1, 16000)",                   # line 7: a signal
        "summary(net, (3, 96, 96))",                      # line 8: torchsummary, no batch
        "summary(net, input_size=(1, 3, 128, 128))",      # line 9: torchinfo, with the batch
        "n = torch.randn(1, 3, side, side)",              # not a literal: no size to read
        "s = torch.randn(1, 3, 2, 2)",                    # too small for an input
        "t = torch.randn(1, 16)",                         # no channels and sides
    ])
    assert example_inputs(source) == [
        ExampleInput((3, 32, 32), 3), ExampleInput((3, 224, 224), 2), ExampleInput((1, 28, 28), 5),
        ExampleInput((3, 64, 48), 6), ExampleInput((1, 16000), 7), ExampleInput((3, 96, 96), 8),
        ExampleInput((3, 128, 128), 9)]
    assert example_inputs("net = Net()\n") == []


@pytest.mark.parametrize("layer, shape", [(nn.Conv2d(3, 8, 3), (1, 3, 32, 48)), (nn.Conv1d(1, 8, 3), (1, 1, 16000))])
def test_an_example_input_with_the_first_layers_channels_and_sides_is_tried_first(layer, shape):
    from narcli.trace.inputs import ExampleInput, candidate_inputs

    model = nn.Sequential(layer, nn.ReLU())
    examples = [ExampleInput((1, 28, 28), 3), ExampleInput((3, 16000), 4), ExampleInput(shape[1:], 9)]
    first, second = list(candidate_inputs(model, examples))[:2]
    assert first[0] == [InputSpec(shape)] and "example input on line 9 of its file" in first[1]
    assert "example" not in second[1]
    assert list(candidate_inputs(model))[0][0] == second[0]  # no example: the first guess as before
    many = [ExampleInput((shape[1], *[8 * k] * (len(shape) - 2)), k) for k in range(1, 6)]
    tried = list(candidate_inputs(model, many))
    assert sum("example input" in about for _, about in tried) == 2 and "example" not in tried[2][1]


CIFAR_ADAPTIVE = '''
import torch
from torch import nn

class CifarNet(nn.Module):
    """Adaptive pooling: it runs at 224 px as well as at the 32 px it was written for."""
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))
'''


def _scanned(cli, path, *options) -> dict:
    import json

    result = cli("scan", path, "--json", *options)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [record] = data["models"] if isinstance(data, dict) and "models" in data else data
    return record


@pytest.mark.parametrize("smoke_test, shape", [
    ("\ndef test():\n    print(CifarNet()(torch.randn(1, 3, 32, 32)).shape)\n", [1, 3, 32, 32]),
    # the example wins over the rule for CIFAR-sized designs
    ("\ndef test():\n    print(CifarNet()(torch.randn(1, 3, 224, 224)).shape)\n", [1, 3, 224, 224]),
    # no example: it pools a map downsampled only twice, so it was built for small images
    ("", [1, 3, 32, 32]),
])
def test_a_network_that_runs_at_any_size_is_traced_at_its_files_example_size(cli, write, smoke_test, shape):
    record = _scanned(cli, write("cifar_net.py", CIFAR_ADAPTIVE + smoke_test))
    assert record["inputs"][0]["shape"] == shape
    assert ("the size of the example input on line 17 of its file" in record["assumed"]) == bool(smoke_test)
    assert ("as networks built for CIFAR-sized images do" in record["assumed"]) == (not smoke_test)
    # 16 and 32 channels at 32 px (the second convolution halves it): MACs follow the traced size
    side = shape[2]
    assert record["macs"] == 3 * 16 * 9 * side * side + 16 * 32 * 9 * (side // 2) ** 2 + 32 * 10


IMAGENET_ADAPTIVE = '''
import torch
from torch import nn

class Gate(nn.Module):
    """A squeeze-excite gate: a global pool early in the network, on a barely downsampled map."""
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Conv2d(c, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.fc(x.mean((2, 3), keepdim=True)))

class ImagenetNet(nn.Module):
    def __init__(self):
        super().__init__()
        layers, c = [nn.Conv2d(3, 8, 7, 2, 3), nn.MaxPool2d(3, 2, 1), Gate(8)], 8
        for _ in range(3):
            layers += [nn.Conv2d(c, 2 * c, 3, 2, 1), nn.ReLU()]
            c *= 2
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        return self.fc(nn.functional.adaptive_avg_pool2d(self.features(x), 1).flatten(1))
'''


def test_a_network_that_downsamples_32_times_stays_at_224_px(cli, write):
    """Its squeeze-excite gate pools a 56 px map, but the classifier's 7 px one decides."""
    record = _scanned(cli, write("imagenet_net.py", IMAGENET_ADAPTIVE))
    assert record["inputs"][0]["shape"] == [1, 3, 224, 224]
    assert "CIFAR" not in record["assumed"]


def test_a_given_input_shape_is_never_replaced_by_the_small_image_rule(cli, write):
    record = _scanned(cli, write("cifar_net.py", CIFAR_ADAPTIVE), "--input-shape", "1,3,224,224")
    assert record["inputs"][0]["shape"] == [1, 3, 224, 224]


GUESS = "image (first layer conv: Conv2d(3, ...))"
IMAGE = InputSpec((1, 3, 224, 224))


def _signs(pooled=(), fixed=(), outputs=((1, 10),), dilated=False) -> dict:
    return {"pooled_sides": list(pooled), "fixed_pool_sides": list(fixed), "dilated": dilated,
            "outputs": [list(o) for o in outputs]}


@pytest.mark.parametrize("specs, about, ran_first, signs, side, why", [
    ([IMAGE], GUESS, True, _signs([56]), 32, "downsampled 4× (56×56 at 224 px), as networks built for CIFAR"),
    ([IMAGE] * 2, GUESS, True, _signs([28]), 32, "downsampled 8×"),  # a twin pair
    ([IMAGE], GUESS, True, _signs([222]), 32, "a map not downsampled (222×222"),  # one unpadded conv, then the pool
    ([IMAGE], GUESS, True, _signs([56, 14]), None, ""),  # 16×: the squeeze-excite gate's 56 does not decide
    ([IMAGE], GUESS, True, _signs([32]), None, ""),  # 7×: ConvMixer's patches, not halving stages
    ([IMAGE], GUESS, True, _signs([28], dilated=True), None, ""),  # a dilated ResNet: 8× by design
    ([IMAGE], GUESS, True, _signs([28], outputs=[(1, 21, 224, 224)]), None, ""),  # a segmentation net's image pool
    ([IMAGE], GUESS, True, _signs([56], outputs=[(1, 10), (1, 64, 56, 56)]), None, ""),  # logits and a feature map
    ([IMAGE], GUESS, True, _signs(), None, ""),  # no global pool
    ([IMAGE], GUESS, True, _signs(fixed=[7], outputs=[(49, 10)]), 32, "held 49 samples for 1 at 224 px (the 7×7 map"),
    ([IMAGE], GUESS, True, _signs(fixed=[49], outputs=[(2401, 10)]), 32, "held 2401 samples"),  # 224 / 49: no side
    ([IMAGE], GUESS, True, _signs(fixed=[2], outputs=[(4, 10)]), 112, "at 112×112: its outputs held 4 samples"),
    ([InputSpec((2, 3, 224, 224))], GUESS, True, _signs(fixed=[7], outputs=[(98, 10)]), 32, "held 98 samples for 2"),
    # per-position features of an ImageNet encoder: 49 rows, but no fixed pool left a 7×7 map
    ([IMAGE], GUESS, True, _signs(outputs=[(49, 2048)]), None, ""),
    ([InputSpec((1, 1, 224, 224))], GUESS, True, _signs([56]), None, ""),  # not RGB
    ([InputSpec((1, 3, 64, 64))], GUESS, True, _signs([16]), None, ""),  # not the default guess
    ([IMAGE], "image (...) at 224×224, the size of the example input on line 3", True, _signs([56]), None, ""),
    ([IMAGE], GUESS, False, _signs([56]), None, ""),  # an earlier guess failed: this size was chosen by that
    ([IMAGE], None, True, _signs([56]), None, ""),  # --input-shape
])
def test_the_small_image_rule(specs, about, ran_first, signs, side, why):
    from narcli.trace.image_size import small_image_respec

    found = small_image_respec(specs, about, ran_first, **signs)
    if side is None:
        assert found is None
    else:
        small, said = found
        assert small == [InputSpec((specs[0].shape[0], 3, side, side))] * len(specs)
        assert said.startswith(about) and why in said
        assert ("CIFAR-sized" in said) == (side == 32)


WRN_VIEW = '''
import torch.nn.functional as F
from torch import nn

class WideNet(nn.Module):
    """CIFAR code's fixed pool: at 224 px the 7x7 map it leaves becomes 49 samples."""
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                      nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU())
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(F.avg_pool2d(self.features(x), 8).view(-1, 64))
'''


def test_a_fixed_pool_that_spreads_a_large_map_over_the_batch_is_traced_at_its_side(cli, write):
    record = _scanned(cli, write("wide_net.py", WRN_VIEW))
    assert record["inputs"][0]["shape"] == [1, 3, 32, 32]
    assert "held 49 samples for 1" in record["assumed"]


SMALL_FAILS = '''
import torch
from torch import nn

class Probe(nn.Module):
    """A global pool after 2x (the rule says 32 px), but a head that fits only 224 px: the 32 px trace fails."""
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.ReLU())
        self.fc = nn.Linear(4 * 112 * 112, 10)

    def forward(self, x):
        x = self.features(x)
        x = x * torch.sigmoid(nn.functional.adaptive_avg_pool2d(x, 1))
        return self.fc(x.view(1, -1))
'''

SMALL_RETURNS_A_MAP = '''
import torch
from torch import nn

class Probe(nn.Module):
    """A global pool after 2x (the rule says 32 px), but at 32 px it returns its map, not a vector."""
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.ReLU())
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        x = self.features(x)
        if x.shape[-1] < 64:
            return x
        return self.fc(nn.functional.adaptive_avg_pool2d(x, 1).flatten(1))
'''


@pytest.mark.parametrize("source", [SMALL_FAILS, SMALL_RETURNS_A_MAP])
def test_the_small_image_is_kept_only_if_it_runs_and_returns_one_vector_per_sample(cli, write, source):
    from narcli.trace.image_size import small_image_respec

    # the rule does fire on the 224 px trace's signs (a global pool over a map downsampled 2×) ...
    signs = {"pooled_sides": [112], "fixed_pool_sides": [], "outputs": [[1, 10]], "dilated": False}
    assert small_image_respec([InputSpec((1, 3, 224, 224))], "image (first layer x)", True, **signs)
    # ... but the 32 px trace fails or returns a map, so the scan keeps 224 px and says nothing of it
    record = _scanned(cli, write("probe.py", source))
    assert record["inputs"][0]["shape"] == [1, 3, 224, 224] and "CIFAR" not in record["assumed"]
    assert record["macs"] == 3 * 4 * 9 * 112 * 112 + (4 * 112 * 112 * 10 if source is SMALL_FAILS else 4 * 10)


def test_a_scan_with_guessed_inputs_is_traced_again_when_the_guess_changes(write, monkeypatch):
    from narcli.scan.scanner import ScanOptions, cache_key
    from narcli.trace import inputs

    path = write("net.py", CIFAR_ADAPTIVE)
    guessed = cache_key(path, "py", ScanOptions(), None)
    given = cache_key(path, "py", ScanOptions(), [InputSpec((1, 3, 32, 32))])
    monkeypatch.setattr(inputs, "GUESS_VERSION", inputs.GUESS_VERSION + 1)
    assert cache_key(path, "py", ScanOptions(), None) != guessed
    assert cache_key(path, "py", ScanOptions(), [InputSpec((1, 3, 32, 32))]) == given


def test_token_ids_and_sequences_in_a_models_file_are_read_too():
    from narcli.trace.inputs import ExampleInput, example_inputs

    source = "\n".join([
        "import torch",
        "ids = torch.randint(0, vocab_size, (2, 48))",           # line 2: low, high, size
        "ids = torch.randint(config.vocab_size, size=(1, 48))",  # line 3: the same length again
        "mask = torch.ones(1, 20, dtype=torch.long)",            # line 4: integer ids another way
        "x = torch.randn(8, 96, 4)",                             # line 5: a batch of 96 steps of 4 features
        "y = torch.randn(1, 24, 1)",                             # line 6: a univariate series
        "h = torch.zeros(1, 20)",                                # floats of two sizes: not an input we read
    ])
    found = example_inputs(source)
    assert found == [ExampleInput((48,), 2, tokens=True), ExampleInput((20,), 4, tokens=True),
                     ExampleInput((96, 4), 5), ExampleInput((24, 1), 6)]
    assert found[0].batch == 2 and found[2].written == (8, 96, 4)
    assert found[3].sequence_of(1) == (1, 24) and found[3].fits(24, 1) is False  # never an image or signal
    assert found[0].sequence_of(48) is None and not found[0].fits(48, 0)


@pytest.mark.parametrize("layer, examples, shape, dtype", [
    (nn.Embedding(100, 8), [((48,), True, 2)], (1, 48), "int64"),
    (nn.LSTM(4, 8, batch_first=True), [((96, 4), False, 8)], (1, 96, 4), "float32"),
    (nn.GRU(4, 8), [((8, 4), False, 50)], (50, 1, 4), "float32"),  # time-major: (steps, batch, features)
    (nn.Linear(4, 8), [((96, 4), False, 8)], (1, 96, 4), "float32"),
])
def test_a_token_or_sequence_example_sets_the_first_guess(layer, examples, shape, dtype):
    from narcli.trace.inputs import ExampleInput, candidate_inputs

    model = nn.Sequential(layer)
    written = [ExampleInput(sizes, 7, tokens, batch) for sizes, tokens, batch in examples]
    others = [ExampleInput((3, 32, 32), 2, batch=1), ExampleInput((96, 5), 3, batch=8)]  # an image; 5 features
    first, *rest = list(candidate_inputs(model, others + written))
    assert first[0] == [InputSpec(shape, dtype)] and "line 7 of its file" in first[1]
    assert not any("line" in about for _, about in rest)
    assert list(candidate_inputs(model, others))[0][0] != [InputSpec(shape, dtype)]  # without it: the usual guess


TINY_GPT = '''
import torch
from torch import nn

class TinyGPT(nn.Module):
    def __init__(self, vocab=100, context=24, dim=32):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Parameter(torch.zeros(1, context, dim))
        self.block = nn.TransformerEncoderLayer(dim, 4, 64, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.head(self.block(self.tokens(ids) + self.positions[:, :ids.shape[1]]))
'''

LSTM_FORECASTER = '''
import torch
from torch import nn

class Forecaster(nn.Module):
    def __init__(self, features=4, hidden=16, horizon=12, window=96):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden * window, horizon)  # reads the whole window: it runs at 96 steps only

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out.flatten(1))
'''


@pytest.mark.parametrize("source, smoke_test, shape", [
    (TINY_GPT, "\nprint(TinyGPT()(torch.randint(0, 100, (2, 24))).shape)\n", [1, 24]),
    (TINY_GPT, "", [1, 16]),  # without it: the longest of the usual lengths that fits its 24 positions
    (LSTM_FORECASTER, "\nprint(Forecaster()(torch.randn(8, 96, 4)).shape)\n", [1, 96, 4]),
    (LSTM_FORECASTER, "", None),  # without it: 32 steps, which its head cannot take
])
def test_a_language_model_or_forecaster_is_traced_at_its_files_example_length(cli, write, source, smoke_test, shape):
    import json

    result = cli("scan", write("model.py", source + smoke_test), "--json")
    if shape is None:
        assert result.exit_code != 0 and "--input-shape" in result.output
        return
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [record] = data["models"] if isinstance(data, dict) and "models" in data else data
    assert record["inputs"][0]["shape"] == shape
    assert ("example input on line" in record["assumed"]) == bool(smoke_test)


BERT_FILE = '''
from torch import nn

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 32)
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
        self.head = nn.Linear(32, 2)

    def forward(self, input_ids, attention_mask):
        x = self.layer(self.embed(input_ids), src_key_padding_mask=attention_mask == 0)
        return self.head(x[:, 0])
'''


def test_a_text_classifier_written_with_forward_ids_mask_is_traced(cli, write):
    # it stopped at "missing 1 required positional argument: 'attention_mask'"
    import json

    result = cli("scan", write("bert.py", BERT_FILE), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    [record] = data["models"] if isinstance(data, dict) and "models" in data else data
    assert [(i["shape"], i["dtype"]) for i in record["inputs"]] == [([1, 128], "int64"), ([1, 128], "int64")]
    assert record["assumed"].endswith("and attention_mask int64[1,128]")


LATE_INPUT_LAYER = '''
from torch import nn

class Vdsr(nn.Module):
    """VDSR's order: its middle layers are registered before the one-channel layer forward starts with."""
    def __init__(self):
        super().__init__()
        self.middle = nn.Sequential(*[nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU()) for _ in range(3)])
        self.entry = nn.Conv2d(1, 16, 3, padding=1)
        self.exit = nn.Conv2d(16, 1, 3, padding=1)

    def forward(self, x):
        return x + self.exit(self.middle(self.entry(x)))
'''


def test_a_forward_that_starts_at_a_later_registered_layer_gets_that_layers_channels(cli, write):
    record = _scanned(cli, write("vdsr.py", LATE_INPUT_LAYER))
    assert record["inputs"][0]["shape"] == [1, 1, 224, 224]
    assert "layer entry reads 1 channel; the first registered, 16, did not fit" in record["assumed"]
    assert "float32[1,16,224,224] failed" in record["assumed"]


def test_other_channels_are_those_convolutions_of_the_inputs_rank_read():
    from narcli.trace.image_size import channels_wrong, other_channels

    model = nn.Sequential(nn.Conv2d(16, 16, 3), nn.Conv1d(2, 4, 3), nn.Conv2d(1, 16, 3), nn.Conv2d(3, 16, 3))
    assert other_channels(model, (1, 16, 224, 224)) == [(1, "2"), (3, "3")]
    assert channels_wrong("RuntimeError: Invalid channel dimensions")
    assert channels_wrong("expected input[1, 64, 224, 224] to have 1 channels, but got 64 channels instead")
    assert not channels_wrong("mat1 and mat2 shapes cannot be multiplied (1x25088 and 512x10)")
