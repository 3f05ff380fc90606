"""Family labels: the reviewed table, and the refinement that names a ResNet-built design by its blocks."""

import pytest

from narcli.zoo.labels import has_squeeze_excitation, label, refine_family

torch = pytest.importorskip("torch")
nn = torch.nn


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(channels, channels // 4, 1), nn.Conv2d(channels // 4, channels, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.fc2(torch.relu(self.fc1(s))))


class EfficientChannelAttention(nn.Module):  # ECA: one 1-D convolution over the pooled channels
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 1, 3, padding=1, bias=False)

    def forward(self, x):
        s = x.mean((2, 3)).unsqueeze(1)
        return x * torch.sigmoid(self.conv(s)).transpose(1, 2).unsqueeze(-1)


class Bottleneck(nn.Module):
    def __init__(self, channels: int, groups: int = 1, gate: str = ""):
        super().__init__()
        self.reduce = nn.Conv2d(channels, 16, 1)
        self.conv = nn.Conv2d(16, 16, 3, padding=1, groups=groups)
        self.expand = nn.Conv2d(16, channels, 1)
        self.gate = {"se": lambda: SqueezeExcite(channels), "eca": EfficientChannelAttention}.get(gate, nn.Identity)()

    def forward(self, x):
        return torch.relu(x + self.gate(self.expand(torch.relu(self.conv(torch.relu(self.reduce(x)))))))


def graph_of(**block):
    from narcli.graph.canonical import build_graph
    from narcli.trace.torch_tracer import trace_module

    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), Bottleneck(32, **block), Bottleneck(32, **block))
    raw, _ = trace_module(model, [torch.randn(1, 3, 16, 16)])
    return build_graph(raw)


@pytest.mark.parametrize("block, family", [
    ({}, "resnet"),
    ({"groups": 4}, "resnext"),  # torchvision files its ResNeXts under resnet
    ({"gate": "se"}, "senet"),  # timm files its SE-ResNets under resnet
    ({"groups": 4, "gate": "se"}, "senet"),  # SE-ResNeXt, as the SENet paper and timm's legacy models have it
    ({"gate": "eca"}, "resnet"),  # ECA's gate is not a squeeze-and-excitation
])
def test_a_resnet_family_is_named_by_its_blocks(block, family):
    graph = graph_of(**block)
    assert refine_family("resnet", graph) == family
    assert label("torchvision", "resnet", graph.op_histogram(), graph)[0] == family
    assert has_squeeze_excitation(graph) == (block.get("gate") == "se")


def test_only_resnet_families_are_refined_and_depthwise_is_not_grouped():
    se = graph_of(gate="se")
    assert refine_family("mobilenetv3", se) == "mobilenetv3"  # its SE gates are its own design
    assert refine_family("resnext", se) == "senet"
    assert refine_family("resnext", graph_of()) == "resnext"  # never demoted: the source said ResNeXt
    assert refine_family("resnet", graph_of(groups=16)) == "resnet"  # depthwise, not a ResNeXt's groups
    assert label("torchvision", "resnet", {})[0] == "resnet"  # without a graph: the table alone


def test_relabelling_the_zoo_applies_the_refinement(tmp_path):
    import sqlite3
    import zlib

    from narcli.zoo.store import Zoo
    from narcli.zoo.upgrade import relabel_zoo
    from narcli.zoo.writer import writing

    db = tmp_path / "zoo.db"
    graphs = {"plain": graph_of(), "se": graph_of(gate="se")}
    with writing(db) as writer:
        for name, graph in graphs.items():
            writer.store({"id": f"torchvision/{name}", "source": "torchvision", "name": name, "family": "resnet",
                          "source_family": "resnet", "coarse": "convolutional", "task": "image-classification",
                          "labelled_by": "table", "status": "ok", "graph_hash": graph.content_hash()},
                         graph.to_json())
    assert relabel_zoo(db)["changed"] == 1
    with Zoo([db]) as zoo:
        assert {m.name: m.family for m in zoo.models()} == {"plain": "resnet", "se": "senet"}
    with sqlite3.connect(db) as conn:  # the graphs themselves are untouched
        stored = dict(conn.execute("select hash, data from graphs"))
    assert {zlib.decompress(v).decode() for v in stored.values()} == {g.to_json() for g in graphs.values()}


def test_a_query_is_named_by_its_blocks_as_the_zoo_is():
    from narcli.encode.embedder import Embedder
    from narcli.search.family import predict_family, renamed

    # a ResNet-voted query with grouped bottlenecks: the two ResNet labels pool into the block's name
    assert renamed([("resnet", 0.6), ("regnet", 0.3), ("resnext", 0.1)], {"resnet": "resnext"}) == \
        [("resnext", 0.7), ("regnet", 0.3)]
    assert renamed([("vit", 1.0)], {}) == [("vit", 1.0)]
    grouped, se, plain = Embedder().embed([graph_of(groups=4), graph_of(gate="se"), graph_of()])
    assert grouped.prediction["refined"] == {"resnet": "resnext"}
    assert se.prediction["refined"] == {"resnet": "senet", "resnext": "senet"}
    assert plain.prediction["refined"] == {}
    voters = [("resnet", "convolutional", 0.95), ("resnet", "convolutional", 0.94), ("regnet", "convolutional", 0.93)]
    assert predict_family(grouped.prediction, voters, 0.6).family == "resnext"
    assert predict_family(plain.prediction, voters, 0.6).family == "resnet"
    assert predict_family(None, voters, 0.6).family == "resnet"  # a cached prediction from before the rule


def test_a_zoo_query_is_read_by_its_graph_as_a_scanned_file_is():
    # a zoo model's stored prediction holds only its family and coarse class; `nar similar <zoo
    # name>` reads its blocks and decoder from its graph, as the card's retrieval figures score it
    from narcli.errors import ZooError
    from narcli.search.query import DECODER_KEY, _with_graph_reads

    class Zoo:
        def __init__(self, graph):
            self.graph_of_model = graph

        def graph(self, model):
            if self.graph_of_model is None:
                raise ZooError("the graph of m is missing from the zoo")
            return self.graph_of_model

    stored = {"family": [["resnext", 1.0]], "coarse": [["convolutional", 1.0]]}
    read = _with_graph_reads(stored, Zoo(graph_of(groups=4)), None)
    assert read["refined"] == {"resnet": "resnext"} and read[DECODER_KEY] == {} and read["family"] == stored["family"]
    assert _with_graph_reads(stored, Zoo(None), None) == stored  # its graph gone: as stored
    assert _with_graph_reads(read, Zoo(None), None) == read  # already read: the graph is not opened
    assert _with_graph_reads(None, Zoo(graph_of()), None) is None
