"""Composite designs: a decoder over a backbone. The decoder part of a graph, the decoder sketch of
the retrieval vector, and the "unet over resnet34" labels."""

import json

import numpy as np
import pytest

from narcli.encode.features import decoder_part, encode_graph, wl_dense
from narcli.graph.arch_graph import ArchGraph, Node


class Builder:
    def __init__(self, channels=3, size=64):
        self.nodes, self.edges = [Node("input", [1, channels, size, size])], []

    def add(self, op, shape, *parents, **attrs):
        self.nodes.append(Node(op, list(shape), attrs))
        self.edges += [(p, len(self.nodes) - 1) for p in parents]
        return len(self.nodes) - 1

    def graph(self):
        return ArchGraph(self.nodes, sorted(self.edges))


def encoder(b, kind, blocks=4):
    """Four stages halving the resolution, most of the graph as in a real segmentation model:
    a strided conv, then `blocks` blocks, "plain" (conv-bn-relu) or "residual" (two convs and a
    shortcut add)."""
    x, features, size, channels = 0, [], 64, 16
    for _ in range(4):
        size //= 2
        channels *= 2
        x = b.add("conv2d", (1, channels, size, size), x, kernel=[3, 3], stride=[2, 2])
        for _ in range(blocks):
            shape = (1, channels, size, size)
            y = b.add("relu", shape, b.add("batch_norm", shape, b.add("conv2d", shape, x, kernel=[3, 3], stride=[1, 1])))
            if kind == "residual":
                y = b.add("batch_norm", shape, b.add("conv2d", shape, y, kernel=[3, 3], stride=[1, 1]))
                y = b.add("relu", shape, b.add("add", shape, y, x))
            x = y
        features.append((x, channels, size))
    return features


def segmentation(decoder, backbone):
    """A U-Net (upsample, concatenate the skip, two convs) or an FPN (lateral 1x1 convs, top-down
    adds, a 3x3 conv per level, all summed) over one of two encoders."""
    b = Builder()
    features = encoder(b, backbone)
    x, channels, size = features[-1]
    if decoder == "unet":
        for skip, skip_channels, skip_size in reversed(features[:-1]):
            x = b.add("upsample", (1, channels, skip_size, skip_size), x)
            x = b.add("cat", (1, channels + skip_channels, skip_size, skip_size), x, skip)
            channels = skip_channels
            for _ in range(2):
                x = b.add("conv2d", (1, channels, skip_size, skip_size), x, kernel=[3, 3], stride=[1, 1])
                x = b.add("relu", (1, channels, skip_size, skip_size), x)
    else:
        x = b.add("conv2d", (1, 64, size, size), x, kernel=[1, 1], stride=[1, 1])
        levels = [x]
        for skip, _, skip_size in reversed(features[:-1]):
            up = b.add("upsample", (1, 64, skip_size, skip_size), x)
            lateral = b.add("conv2d", (1, 64, skip_size, skip_size), skip, kernel=[1, 1], stride=[1, 1])
            x = b.add("add", (1, 64, skip_size, skip_size), up, lateral)
            levels.append(x)
        outs = [b.add("upsample", (1, 64, 32, 32), b.add("conv2d", (1, 64, 8, 8), level, kernel=[3, 3], stride=[1, 1]))
                for level in levels]
        x = b.add("add", (1, 64, 32, 32), *outs)
    x = b.add("conv2d", (1, 2, 32, 32), x, kernel=[1, 1], stride=[1, 1])
    x = b.add("upsample", (1, 2, 64, 64), x)
    b.add("output", (1, 2, 64, 64), x)
    return b.graph()


def test_the_decoder_is_what_follows_the_deepest_feature_map():
    graph = segmentation("unet", "plain")
    part = decoder_part(encode_graph(graph))
    deepest = max(i for i, n in enumerate(graph.nodes) if n.shape[-1] == 4)
    assert part is not None
    assert not part[: deepest + 1].any()  # the encoder, bottleneck included
    assert part[deepest + 1:].all()  # every node after it is the U-Net's up-path or head


def test_a_classifier_or_a_transformer_has_no_decoder_and_its_sketch_reads_the_whole_graph():
    from narcli.graph.synthetic import residual_stack

    classifier = encode_graph(residual_stack(40))  # after its last block: a pooled head of three nodes
    tokens = encode_graph(ArchGraph([Node("input", [1, 16, 64])] + [Node(op, [1, 16, 64]) for op in
                                                                    ("linear", "gelu", "linear")]
                                    + [Node("output", [1, 16, 64])], [(i, i + 1) for i in range(4)]))
    for encoded in (classifier, tokens):
        assert decoder_part(encoded) is None
        # every graph has a decoder sketch: the whole graph's coarse WL where there is no decoder
        assert wl_dense(encoded, "decoder") @ wl_dense(encoded, "coarse") == pytest.approx(1.0)


def test_the_decoder_sketch_groups_by_decoder_where_the_whole_graph_groups_by_backbone():
    graphs = {(d, e): encode_graph(segmentation(d, e)) for d in ("unet", "fpn") for e in ("plain", "residual")}

    def cosine(labels, a, b):
        return float(wl_dense(graphs[a], labels) @ wl_dense(graphs[b], labels))

    same_decoder, same_backbone = (("unet", "plain"), ("unet", "residual")), (("unet", "residual"), ("fpn", "residual"))
    assert cosine("decoder", *same_decoder) == pytest.approx(1.0)
    assert cosine("decoder", *same_backbone) < 0.5
    assert cosine("coarse", *same_backbone) > cosine("coarse", *same_decoder)  # why the sketch is needed


def test_the_decoder_sketch_takes_its_share_from_the_learned_part():
    pytest.importorskip("torch")
    from narcli.encode.training import TrainConfig, model_for

    model = model_for(TrainConfig(hidden=8, dim=8, wl_mix=0.9, robust_mix=0.2, decoder_mix=0.3), families=2)
    graphs = [encode_graph(segmentation(d, "plain")) for d in ("unet", "fpn")]
    with pytest.raises(ValueError, match="decoder=True"):
        from narcli.encode.encoder import collate

        model.embed(collate(graphs, model.sketch_labels, robust=True))
    vectors = model.embed(model.embedding_batch(graphs)).detach().numpy()
    assert vectors.shape[1] == model.embedding_dim == 2 * 8 + 3 * 256
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.linalg.norm(vectors[0, :16]) ** 2 == pytest.approx(0.9 - 0.2 - 0.3, abs=1e-4)
    assert np.linalg.norm(vectors[0, -256:]) ** 2 == pytest.approx(0.3, abs=1e-4)
    parts = model.retrieval_parts(model.embedding_batch(graphs))
    assert np.allclose(parts["decoder"].numpy() * 0.3 ** 0.5, vectors[:, -256:], atol=1e-5)
    with pytest.raises(ValueError, match="decoder_mix"):
        model_for(TrainConfig(hidden=8, dim=8, robust_mix=0.3, decoder_mix=0.7), families=2)


@pytest.mark.parametrize("model_id, backbone", [
    ("smp/unet_resnet34", "resnet34"),
    ("smp/deeplabv3+_timm-efficientnet-b0", "timm-efficientnet-b0"),
    ("smp/segformer_mit_b0", "mit_b0"),
    ("monai/flexible_unet_efficientnet-b0_3d", "efficientnet-b0"),
    ("monai/unet_res2_2d", ""),
    ("timm/resnet34", ""),
    ("smp", ""),
])
def test_a_composite_zoo_model_names_its_backbone(model_id, backbone):
    from narcli.zoo.composite import backbone_of, design_label

    assert backbone_of(model_id) == backbone
    assert design_label("unet", backbone) == (f"unet over {backbone}" if backbone else "unet")


def test_similar_names_a_composite_zoo_model_by_decoder_and_backbone(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from narcli.cli.app import app
    from narcli.search.similar import find_similar

    monkeypatch.setenv("NAR_HOME", str(tmp_path))
    result = find_similar("smp/unet_resnet34", k=3)[0]
    assert result.prediction.family == "unet" and result.prediction.backbone == "resnet34"  # its own, not a neighbour's
    assert all(n.backbone and n.family for n in result.neighbours if n.source == "smp")
    out = CliRunner().invoke(app, ["similar", "smp/unet_resnet34", "-k", "3", "--json"])
    data = json.loads(out.stdout)["results"][0]
    assert data["prediction"]["backbone"] == "resnet34"
    assert {n["backbone"] for n in data["neighbours"]} >= {"resnet18"}
    shown = CliRunner().invoke(app, ["similar", "smp/unet_resnet34", "-k", "3"], env={"COLUMNS": "140"})
    assert "family unet over resnet34" in shown.stdout
    timm = find_similar("timm/resnet50", k=3)[0]
    assert timm.prediction.backbone == "" and all(not n.backbone for n in timm.neighbours if n.source == "timm")


def nested(decoder, backbone, gated=False):
    """A U-Net ("unet": each level joins one skip) or a U-Net++ ("unet++": each level joins every
    earlier node of its row, concatenations of three and more) over one of two encoders, written
    with canonical operations as a trace gives them. `gated`: each skip passes an additive attention
    gate first (an Attention U-Net: 1x1 convolutions, add, sigmoid, multiply)."""
    b = Builder()
    features = encoder(b, backbone)
    rows = {level: [x] for level, (x, _, _) in enumerate(features)}
    depth = len(features)
    for j in range(1, depth):
        for level in range(depth - j) if decoder == "unet++" else [depth - 1 - j]:
            _, channels, size = features[level]
            below = rows[level + 1][-1]
            up = b.add("upsample_nearest", (1, channels, size, size), below)
            joined = rows[level] if decoder == "unet++" else rows[level][:1]
            if gated:
                shape = (1, channels, size, size)
                mixed = b.add("add", shape, b.add("conv2d", shape, up, kernel=[1, 1], stride=[1, 1]),
                              b.add("conv2d", shape, joined[0], kernel=[1, 1], stride=[1, 1]))
                joined = [b.add("mul", shape, b.add("sigmoid", shape, mixed), joined[0])]
            x = b.add("concat", (1, channels * (len(joined) + 1), size, size), up, *joined)
            for _ in range(2):
                x = b.add("relu", (1, channels, size, size), b.add("conv2d", (1, channels, size, size), x,
                                                                 kernel=[3, 3], stride=[1, 1]))
            rows[level].append(x)
    b.add("output", (1, 2, 64, 64), b.add("conv2d", (1, 2, 64, 64), rows[0][-1], kernel=[1, 1], stride=[1, 1]))
    return b.graph()


def test_the_decoder_signature_reads_the_joins_after_the_first_upsampling_not_the_encoder():
    from narcli.graph.decoder import decoder_signature
    from narcli.graph.synthetic import residual_stack

    unet = decoder_signature(nested("unet", "plain"))
    assert unet == decoder_signature(nested("unet", "residual"))  # the encoder is not read
    assert unet == {"cat2": 3, "conv": 7, "up": 3}  # three levels, two convs each, and the head
    plusplus = decoder_signature(nested("unet++", "residual"))
    assert plusplus["cat2"] == 3 and plusplus["cat3"] == 2 and plusplus["cat4"] == 1 and plusplus["up"] == 6
    assert decoder_signature(residual_stack(12)) == {}  # a classifier never upsamples


def test_a_query_decoder_renames_the_family_only_when_another_is_clearly_nearer():
    from narcli.graph.decoder import RENAME_MARGIN, decoder_names, decoder_signature, signature_distance

    unet, plusplus = decoder_signature(nested("unet", "plain")), decoder_signature(nested("unet++", "plain"))
    known = {"unet": [unet], "unet++": [plusplus]}
    assert decoder_names(decoder_signature(nested("unet++", "residual")), known) == {"unet": "unet++"}
    assert decoder_names(decoder_signature(nested("unet", "residual")), known) == {"unet++": "unet"}
    assert decoder_names({}, known) == {} and decoder_names(plusplus, None) == {}
    # a decoder about as near both (one more convolution than a U-Net's) keeps the vote
    near = dict(unet, conv=unet["conv"] + 1)
    assert signature_distance(near, unet) < RENAME_MARGIN
    assert decoder_names(near, {"unet": [unet], "fpn": [dict(unet, conv=unet["conv"] + 2)]}) == {}
    # and no far family is merged into the nearest unless the nearest is clear of every other
    assert decoder_names(unet, {"unet": [unet], "fpn": [near], "unet++": [plusplus]}) == {}
    assert decoder_names(unet, {"unet": [unet], "unet++": [plusplus], "empty": []}) == {"unet++": "unet"}


def test_the_decoder_renames_only_a_vote_that_leads_with_a_decoder_family():
    """A detector whose neck upsamples keeps its vote: merging the far decoder families' shares
    into the nearest would otherwise outvote it."""
    from narcli.graph.decoder import decoder_signature
    from narcli.search.family import predict_family

    unet = decoder_signature(nested("unet", "plain"))
    known = {"unet": [unet], "unet++": [decoder_signature(nested("unet++", "plain"))], "fpn": [{"up": 9, "add": 9}]}
    query = {"decoder": unet}
    detector = [("yolo", "convolutional", 0.90), ("yolo", "convolutional", 0.89), ("unet++", "convolutional", 0.89),
                ("fpn", "convolutional", 0.89), ("unet", "convolutional", 0.88)]
    kept = predict_family(query, detector, threshold=0.5, decoders=known)
    assert kept.family == "yolo" and kept.names == {}
    segmenter = [("unet++", "convolutional", 0.90)] + detector[2:]
    named = predict_family(query, segmenter, threshold=0.5, decoders=known)
    assert named.family == "unet" and named.names == {"unet++": "unet", "fpn": "unet"}
    assert predict_family(query, segmenter, threshold=0.5).family == "unet++"  # no decoders known: as voted


def test_an_index_decoders_entry_of_another_form_renames_nothing():
    from narcli.graph.decoder import known_decoders

    good = {"unet": [{"cat2": 4, "up": 5}]}
    assert known_decoders({"decoders": good}) == good
    assert known_decoders({}) == {} and known_decoders({"decoders": ["unet"]}) == {}
    assert known_decoders({"decoders": {"unet": {"cat2": 4}}}) == {}
    assert known_decoders({"decoders": {**good, "fpn": [{"add": "9"}], "pan": [], "x": [["up"]]}}) == good
    assert known_decoders({"decoders": {"unet": [{"cat2": True}]}}) == {}  # a bool is not a count
    assert known_decoders(None) == {}


def test_the_vote_is_named_by_the_query_decoder_and_the_backbone_by_the_encoder_it_resembles():
    from types import SimpleNamespace

    from narcli.graph.decoder import decoder_signature
    from narcli.search.family import predict_family
    from narcli.search.similar import _backbone

    known = {"unet": [decoder_signature(nested("unet", "plain"))],
             "unet++": [decoder_signature(nested("unet++", "plain"))]}
    query = {"decoder": decoder_signature(nested("unet++", "residual")), "refined": {}}
    voters = [("unet", "convolutional", 0.9), ("unet", "convolutional", 0.88), ("fpn", "convolutional", 0.8)]
    assert predict_family(query, voters, threshold=0.5).family == "unet"  # no known decoders: the vote as it was
    named = predict_family(query, voters, threshold=0.5, decoders=known)
    assert named.family == "unet++" and named.family_confidence > 0.6
    models = {"a": [SimpleNamespace(id="smp/unet_resnet34", family="unet")],
              "b": [SimpleNamespace(id="classics/unet_small", family="unet")]}
    assert _backbone("unet++", [("b", 0.9), ("a", 0.8)], models, {"unet": "unet++"}) == "resnet34"
    assert _backbone("unet++", [("a", 0.9)], models) == ""  # renamed by nothing: no backbone borrowed
    assert _backbone("unet", [("b", 0.9), ("a", 0.8)], models) == ""  # its own nearest member is not composite


def test_decoder_prototypes_come_from_every_member_of_a_family_some_source_builds_over_backbones():
    from types import SimpleNamespace

    from narcli.graph.decoder import decoder_signature
    from narcli.zoo.composite import decoder_prototypes

    # the classics' U-Net here is written with nested skips: a member's own decoder, whatever its family
    graphs = {"u1": nested("unet", "plain"), "u1b": nested("unet", "residual"), "u2": nested("unet++", "residual"),
              "pp": nested("unet++", "plain"), "cls": nested("unet", "plain")}

    def model(id_, family, graph_hash, status="ok"):
        return SimpleNamespace(id=id_, family=family, graph_hash=graph_hash, status=status, source=id_.split("/")[0])

    class Zoo:
        def models(self):
            return [model("smp/unet_resnet34", "unet", "u1"), model("smp/unet_resnet18", "unet", "u1b"),
                    model("classics/unet_small", "unet", "u2"),
                    model("monai/unet++_basic", "unet++", "pp"),  # no composite member: not a decoder family
                    model("timm/resnet34", "resnet", "cls"), model("smp/fpn_resnet34", "fpn", "u1", "failed")]

        def graph(self, m):
            return graphs[m.graph_hash]

    unet, nested_skips = decoder_signature(graphs["u1"]), decoder_signature(graphs["u2"])
    assert decoder_prototypes(Zoo()) == {"unet": [unet, nested_skips]}  # smp's two encoders: one decoder
    assert decoder_prototypes(Zoo(), keep=lambda m: m.source != "smp") == {"unet": [nested_skips]}
    assert decoder_prototypes(Zoo(), keep=lambda m: m.source == "monai") == {}


def test_a_family_the_vote_names_competes_for_the_decoder_only_when_voted():
    """An Attention U-Net votes U-Net first: its gated skips are nearer MAnet's gates than a U-Net's
    plain ones, but the family it is has decoders of its own and is in its vote, so that is the name."""
    from narcli.graph.decoder import decoder_signature
    from narcli.search.family import predict_family, query_names

    unet, attention = decoder_signature(nested("unet", "plain")), decoder_signature(nested("unet", "plain", gated=True))
    manet = dict(attention, linear=4, pool=4)  # gated too, with its squeeze-excitation layers
    composite, others = {"unet": [unet], "manet": [manet]}, {"attention-unet": [attention], "vae": [{"up": 3}]}
    query = {"decoder": decoder_signature(nested("unet", "residual", gated=True))}
    voters = [("unet", "convolutional", 0.70), ("unet", "convolutional", 0.69), ("attention-unet", "convolutional", 0.69)]
    voted = [("unet", 0.9), ("attention-unet", 0.1)]
    assert query_names(query, composite, voted) == {"unet": "manet"}  # without the others: the nearest gates win
    assert query_names(query, composite, voted, others) == {"unet": "attention-unet", "manet": "attention-unet"}
    named = predict_family(query, voters, threshold=0.5, decoders=composite, other_decoders=others)
    assert named.family == "attention-unet"
    # a family with decoders that no voter names is no candidate: the vote's decoder families only
    assert query_names(query, composite, [("unet", 1.0)], others)["unet"] == "manet"
    # and a vote that leads with a family no source builds over a backbone is renamed by nothing
    assert query_names(query, composite, [("attention-unet", 0.9), ("unet", 0.1)], others) == {}


def test_split_decoder_prototypes_keeps_other_families_that_upsample_apart():
    from types import SimpleNamespace

    from narcli.graph.decoder import decoder_signature, known_decoders
    from narcli.graph.synthetic import residual_stack
    from narcli.zoo.composite import decoder_prototypes, split_decoder_prototypes

    graphs = {"u1": nested("unet", "plain"), "g": nested("unet", "plain", gated=True), "cls": residual_stack(4)}

    class Zoo:
        def models(self):
            return [SimpleNamespace(id="smp/unet_resnet34", family="unet", graph_hash="u1", status="ok"),
                    SimpleNamespace(id="monai/attention_unet_2d", family="attention-unet", graph_hash="g", status="ok"),
                    SimpleNamespace(id="timm/resnet34", family="resnet", graph_hash="cls", status="ok")]

        def graph(self, m):
            return graphs[m.graph_hash]

    composite, others = split_decoder_prototypes(Zoo())
    assert composite == decoder_prototypes(Zoo()) == {"unet": [decoder_signature(graphs["u1"])]}
    assert others == {"attention-unet": [decoder_signature(graphs["g"])]}  # a classifier never upsamples
    meta = {"decoders": composite, "other_decoders": others}
    assert known_decoders(meta, "other_decoders") == others and known_decoders({"decoders": composite}, "other_decoders") == {}


GATED_UNET = '''
    import torch
    from torch import nn


    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


    class Gate(nn.Module):  # additive attention on a skip (Oktay et al. 2018)
        def __init__(self, channels):
            super().__init__()
            self.skip, self.up = nn.Conv2d(channels, channels // 2, 1), nn.Conv2d(channels, channels // 2, 1)
            self.score = nn.Sequential(nn.Conv2d(channels // 2, 1, 1), nn.Sigmoid())

        def forward(self, skip, up):
            return skip * self.score(torch.relu(self.skip(skip) + self.up(up)))


    class GatedUNet(nn.Module):
        def __init__(self, widths=(32, 64, 128, 256)):
            super().__init__()
            self.down = nn.ModuleList(block(a, b) for a, b in zip((3,) + widths[:-1], widths))
            rising = widths[::-1]
            self.up = nn.ModuleList(nn.ConvTranspose2d(a, b, 2, stride=2) for a, b in zip(rising, rising[1:]))
            self.gates = nn.ModuleList(Gate(b) for b in rising[1:])
            self.merge = nn.ModuleList(block(2 * b, b) for b in rising[1:])
            self.head = nn.Conv2d(widths[0], 2, 1)

        def forward(self, x):
            skips = []
            for i, down in enumerate(self.down):
                x = down(nn.functional.max_pool2d(x, 2) if i else x)
                skips.append(x)
            x = skips.pop()
            for up, gate, merge in zip(self.up, self.gates, self.merge):
                x = up(x)
                x = merge(torch.cat([gate(skips.pop(), x), x], 1))
            return self.head(x)
'''


def test_a_traced_attention_unet_voted_unet_first_is_named_attention_unet_with_the_zoo_decoders(write):
    """A written Attention U-Net whose whole graph sits nearest U-Nets: with only the decoder
    families as candidates its gated skips are about as near smp's MAnet's gates as a U-Net's plain
    skips (a deeper one, with more upsamplings, was renamed MAnet), so the vote stays U-Net. With
    the bundled index's other families' decoders, the Attention U-Net the vote also names is
    clearly the nearest, and the vote goes to it."""
    import importlib.util

    import torch

    from narcli.graph.canonical import build_graph
    from narcli.graph.decoder import known_decoders
    from narcli.search.family import predict_family
    from narcli.search.neighbours import BUNDLED_INDEX
    from narcli.search.query import graph_reads
    from narcli.search.index import VectorIndex
    from narcli.trace.torch_tracer import trace_module

    spec = importlib.util.spec_from_file_location("gated_unet", write("gated_unet.py", GATED_UNET))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw, _ = trace_module(module.GatedUNet().to("meta"), [torch.empty(1, 3, 128, 128, device="meta")])
    read = graph_reads(build_graph(raw))
    meta = VectorIndex(BUNDLED_INDEX).meta
    voters = [("unet", "convolutional", 0.70), ("unet", "convolutional", 0.69),
              ("attention-unet", "convolutional", 0.67), ("unet", "convolutional", 0.66)]
    before = predict_family(read, voters, threshold=0.5, decoders=known_decoders(meta))
    assert before.family == "unet" and not before.names  # before the other families competed
    named = predict_family(read, voters, threshold=0.5, decoders=known_decoders(meta),
                           other_decoders=known_decoders(meta, "other_decoders"))
    assert named.family == "attention-unet" and named.names.get("unet") == "attention-unet"
