"""Training augmentation: the edits real authors make, applied to canonical graphs."""

import random

from narcli.encode.augment import EDITS, variants
from narcli.graph.arch_graph import ArchGraph, Node


def imagenet_stem_net() -> ArchGraph:
    """input -> 7x7/2 conv -> relu -> max-pool -> conv -> relu -> global pool -> linear(1000) -> output"""
    conv = {"in_channels": 3, "out_channels": 8, "kernel": [7, 7], "stride": [2, 2], "padding": [3, 3], "groups": 1}
    nodes = [
        Node("input", [1, 3, 224, 224]),
        Node("conv2d", [1, 8, 112, 112], conv, params=3 * 8 * 49 + 8),
        Node("relu", [1, 8, 112, 112]),
        Node("max_pool2d", [1, 8, 56, 56], {"kernel": [3, 3], "stride": [2, 2]}),
        Node("conv2d", [1, 8, 56, 56], {**conv, "in_channels": 8, "kernel": [3, 3], "stride": [1, 1]}),
        Node("relu", [1, 8, 56, 56]),
        Node("global_avg_pool", [1, 8, 1, 1]),
        Node("linear", [1, 1000], {"in_features": 8, "out_features": 1000}, params=8 * 1000 + 1000),
        Node("output", [1, 1000]),
    ]
    return ArchGraph(nodes, [(i, i + 1) for i in range(len(nodes) - 1)])


def test_cifar_stem_is_a_3x3_stride_1_convolution():
    edited = EDITS["cifar_stem"](imagenet_stem_net(), random.Random(0))
    stem = edited.nodes[1]
    assert stem.attrs["kernel"] == [3, 3] and stem.attrs["stride"] == [1, 1]
    assert stem.params == 3 * 8 * 9 + 8  # 3x3 weights, the same bias


def test_no_stem_pool_removes_the_max_pool_and_keeps_the_chain():
    edited = EDITS["no_stem_pool"](imagenet_stem_net(), random.Random(0))
    assert [n.op for n in edited.nodes].count("max_pool2d") == 0
    assert edited.edges == [(i, i + 1) for i in range(len(edited.nodes) - 1)]


def test_swap_activation_changes_every_use_of_one_activation():
    edited = EDITS["swap_activation"](imagenet_stem_net(), random.Random(0))
    ops = [n.op for n in edited.nodes]
    assert "relu" not in ops and len({ops[2], ops[5]}) == 1


def test_new_head_changes_the_classes_and_its_parameters():
    edited = EDITS["new_head"](imagenet_stem_net(), random.Random(0))
    head = edited.nodes[7]
    assert head.attrs["out_features"] in (10, 100) and head.params == 8 * head.attrs["out_features"] + head.attrs["out_features"]


def test_resolution_scales_feature_maps_but_not_vectors():
    edited = EDITS["resolution"](imagenet_stem_net(), random.Random(0))
    assert edited.nodes[1].shape[2] != 112 and edited.nodes[6].shape == [1, 8, 1, 1]


def test_edits_leave_the_original_alone_and_variants_are_seeded():
    graph = imagenet_stem_net()
    before = graph.to_json()
    one, two = variants(graph, 4, seed=7), variants(graph, 4, seed=7)
    assert graph.to_json() == before
    assert [v.to_json() for v in one] == [v.to_json() for v in two]
    assert len(one) == 4 and all(v.to_json() != before for v in one)


def test_an_edit_that_does_not_apply_says_so():
    graph = ArchGraph([Node("input", [1, 4]), Node("tanh", [1, 4]), Node("output", [1, 4])], [(0, 1), (1, 2)])
    assert EDITS["cifar_stem"](graph, random.Random(0)) is None
    assert EDITS["no_stem_pool"](graph, random.Random(0)) is None
    assert variants(graph, 3, seed=0) == []


def test_width_scales_channels_but_not_the_image_input_or_the_classes():
    graph = imagenet_stem_net()
    edited = EDITS["width"](graph, random.Random(0))
    factor = edited.nodes[1].shape[1] / 8
    assert factor != 1
    stem, conv, head = edited.nodes[1], edited.nodes[4], edited.nodes[7]
    assert stem.attrs["in_channels"] == 3 and stem.attrs["out_channels"] == stem.shape[1]
    assert conv.attrs["in_channels"] == conv.attrs["out_channels"] == conv.shape[1]
    assert head.attrs["out_features"] == 1000 and head.attrs["in_features"] == edited.nodes[6].shape[1]
    assert conv.params == round(graph.nodes[4].params * factor * factor)
    assert edited.nodes[0].shape == [1, 3, 224, 224] and edited.nodes[8].shape == [1, 1000]
    token_model = ArchGraph([Node("input", [1, 16]), Node("embedding", [1, 16, 32]), Node("output", [1, 16, 32])],
                            [(0, 1), (1, 2)])
    assert EDITS["width"](token_model, random.Random(0)) is None


def test_fewer_blocks_leaves_out_identity_blocks_and_rewires_around_them():
    from narcli.encode.augment import identity_blocks
    from narcli.graph.synthetic import residual_stack

    graph = residual_stack(60)  # a stem, identity residual blocks of 7 nodes (post-add ReLU), a pooled head
    blocks = identity_blocks(graph)
    assert len(blocks) >= 3 and all(len(inner) == 6 and graph.nodes[last].op == "relu" for _, last, inner in blocks)
    edited = EDITS["fewer_blocks"](graph, random.Random(3))
    dropped = len(graph.nodes) - len(edited.nodes)
    assert dropped and dropped % 7 == 0 and dropped // 7 <= 3
    assert len(identity_blocks(edited)) == len(blocks) - dropped // 7
    # still one connected chain of blocks from the input to the output
    assert all(s < d for s, d in edited.edges)
    reached = {0}
    for s, d in edited.edges:
        if s in reached:
            reached.add(d)
    assert reached == set(range(len(edited.nodes)))
    assert [n.op for n in edited.nodes[-3:]] == ["global_avg_pool", "linear", "output"]
    # a single block is kept: a net is not edited down to its stem
    assert EDITS["fewer_blocks"](imagenet_stem_net(), random.Random(0)) is None


def test_imagenet_stem_undoes_a_cifar_stem_and_its_missing_pool():
    from narcli.encode.augment import imagenet_stem

    original = imagenet_stem_net()
    cifar = EDITS["no_stem_pool"](EDITS["cifar_stem"](original, random.Random(0)), random.Random(0))
    back = imagenet_stem(cifar)
    assert [n.op for n in back.nodes] == [n.op for n in original.nodes]
    stem, pool = back.nodes[1], back.nodes[3]
    assert stem.attrs["kernel"] == [7, 7] and stem.attrs["stride"] == [2, 2] and stem.params == 3 * 8 * 49 + 8
    assert pool.attrs["kernel"] == [3, 3] and pool.attrs["stride"] == [2, 2] and pool.shape == [1, 8, 56, 56]
    assert back.edges == original.edges
    assert imagenet_stem(original) is None  # a stem with its max-pool is left alone
    assert imagenet_stem(EDITS["cifar_stem"](original, random.Random(0))) is None  # so is one that kept the pool
