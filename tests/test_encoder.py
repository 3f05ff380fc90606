"""Encoder inputs, the encoder itself, retrieval metrics, splits and weights files."""

import numpy as np
import pytest

from narcli.encode.dataset import Item, split_ood, split_random
from narcli.encode.evaluation import retrieval_metrics, wl_embeddings
from narcli.encode.features import MAX_NODES, GraphTooLarge, encode_graph
from narcli.graph.arch_graph import ArchGraph, Node

from .test_motifs import residual_stack


def mlp_graph(layers, width=None):
    shape = None if width is None else [1, width]
    nodes = [Node("input")] + [Node(op, shape) for _ in range(layers) for op in ("linear", "relu")] + [Node("output")]
    return ArchGraph(nodes, [(i, i + 1) for i in range(len(nodes) - 1)])


def test_degenerate_graphs_still_encode():
    empty = encode_graph(ArchGraph([], []))
    assert empty.num_nodes == 1 and empty.num_motifs == 1
    single = encode_graph(ArchGraph([Node("linear")], []))
    assert single.num_nodes == 1 and single.edges.shape == (2, 0)
    unknown = encode_graph(ArchGraph([Node("unknown:foo"), Node("unknown:bar")], [(0, 1)]))
    assert unknown.ops.tolist() == [unknown.ops[0]] * 2  # both map to the unknown bucket


def test_a_graph_beyond_the_limit_is_refused_with_a_clear_message():
    huge = ArchGraph([Node("relu")] * (MAX_NODES + 1), [])
    with pytest.raises(GraphTooLarge, match="at most"):
        encode_graph(huge)


def test_wl_features_tell_apart_different_graphs_and_match_equal_ones():
    a, b, c = (encode_graph(g) for g in (residual_stack(3), residual_stack(3), mlp_graph(4)))
    z = wl_embeddings([a, b, c])
    assert z[0] @ z[1] == pytest.approx(1.0)
    assert z[0] @ z[2] < 0.9


def conv_graph(channels, resolution):
    """A three-convolution stack on a (1, channels, resolution, resolution) input."""
    shape = [1, channels, resolution, resolution]
    nodes = [Node("input", shape)] + [Node("conv2d", shape), Node("relu", shape)] * 3 + [Node("output", shape)]
    return ArchGraph(nodes, [(i, i + 1) for i in range(len(nodes) - 1)])


def test_width_labels_tell_apart_sizes_of_one_structure():
    from narcli.encode.features import wl_dense

    narrow, narrow_again, wide = (encode_graph(mlp_graph(3, w)) for w in (64, 64, 1024))
    assert wl_dense(narrow) @ wl_dense(wide) == pytest.approx(1.0)  # operation labels: one structure
    assert wl_dense(narrow, "ops+width") @ wl_dense(narrow_again, "ops+width") == pytest.approx(1.0)
    assert wl_dense(narrow, "ops+width") @ wl_dense(wide, "ops+width") < 0.9
    with pytest.raises(ValueError, match=r"ops\+width"):
        wl_dense(narrow, "channels")


def test_width_labels_of_a_feature_map_follow_its_channels_not_its_resolution():
    from narcli.encode.features import width_labels

    at_224, at_64, wider = (encode_graph(conv_graph(c, r)) for c, r in ((64, 224), (64, 64), (256, 224)))
    assert width_labels(at_224).tolist() == width_labels(at_64).tolist()
    assert width_labels(at_224).tolist() != width_labels(wider).tolist()


def test_width_labels_tell_a_grouped_convolution_from_a_plain_one_of_the_same_width():
    from narcli.encode.features import width_labels

    plain = conv_graph(64, 56)
    grouped = conv_graph(64, 56)
    for node in grouped.nodes:
        if node.op == "conv2d":
            node.attrs["groups"] = 32  # ResNeXt's 32 groups; a wide ResNet has 1
    one, two = width_labels(encode_graph(plain)), width_labels(encode_graph(grouped))
    convs = [i for i, n in enumerate(plain.nodes) if n.op == "conv2d"]
    assert all(one[i] != two[i] for i in convs)
    assert [v for i, v in enumerate(one) if i not in convs] == [v for i, v in enumerate(two) if i not in convs]


def test_an_embedding_batch_must_carry_the_sketch_features():
    pytest.importorskip("torch")
    from narcli.encode.encoder import collate
    from narcli.encode.training import TrainConfig, model_for

    model = model_for(TrainConfig(hidden=8, dim=8, robust_mix=0.0, decoder_mix=0.0), families=2)  # the width sketch last
    graphs = [encode_graph(mlp_graph(2, 64)), encode_graph(mlp_graph(2, 1024))]
    with pytest.raises(ValueError, match="sketch_labels"):
        model.embed(collate(graphs))
    sketch = slice(model.embedding_dim - 256, None)  # the WL sketch's columns

    def sketches(labels):
        return model.embed(collate(graphs, labels)).detach().numpy()[:, sketch]

    by_ops, by_width = sketches("ops"), sketches("ops+width")
    # the two MLPs differ only in width: one sketch under operation labels, two under width labels
    assert np.allclose(by_ops[0], by_ops[1], atol=1e-6)
    assert not np.allclose(by_width[0], by_width[1], atol=1e-3)


def activation_mlp(activation, width):
    nodes = [Node("input", [1, width])] + [Node(op, [1, width]) for _ in range(3) for op in ("linear", activation)]
    nodes += [Node("batch_norm", [1, width]), Node("output", [1, width])]
    return ArchGraph(nodes, [(i, i + 1) for i in range(len(nodes) - 1)])


def test_coarse_labels_ignore_the_activation_the_norm_and_the_width_but_not_the_kernel():
    from narcli.encode.features import coarse_labels, wl_dense

    relu, relu6, gelu_wide = (encode_graph(activation_mlp(a, w)) for a, w in (("relu", 64), ("hardtanh", 64),
                                                                                ("gelu", 1024)))
    assert coarse_labels(relu).tolist() == coarse_labels(relu6).tolist() == coarse_labels(gelu_wide).tolist()
    assert wl_dense(relu, "coarse") @ wl_dense(gelu_wide, "coarse") == pytest.approx(1.0)
    assert wl_dense(relu, "ops+width") @ wl_dense(gelu_wide, "ops+width") < 0.5
    gated = encode_graph(activation_mlp("sigmoid", 64))  # a gate is not an activation to swap
    assert coarse_labels(gated).tolist() != coarse_labels(relu).tolist()
    k1, k3 = (encode_graph(ArchGraph([Node("input", [1, 3, 8, 8]), Node("conv2d", [1, 8, 8, 8], {"kernel": [k, k]})],
                                     [(0, 1)])) for k in (1, 3))
    assert coarse_labels(k1).tolist() != coarse_labels(k3).tolist()


def test_the_robust_sketch_takes_its_share_from_the_learned_part():
    pytest.importorskip("torch")
    from narcli.encode.encoder import collate
    from narcli.encode.training import TrainConfig, model_for

    plain = model_for(TrainConfig(hidden=8, dim=8, wl_mix=0.9, robust_mix=0.0, decoder_mix=0.0), families=2)
    robust = model_for(TrainConfig(hidden=8, dim=8, wl_mix=0.9, robust_mix=0.3, decoder_mix=0.0), families=2)
    robust.load_state_dict(plain.state_dict())  # the projections are buffers: same weights, new read-out
    assert robust.embedding_dim == plain.embedding_dim + 256
    graphs = [encode_graph(activation_mlp("relu", 64)), encode_graph(activation_mlp("gelu", 1024))]
    with pytest.raises(ValueError, match="robust"):
        robust.embed(collate(graphs, robust.sketch_labels))
    vectors = robust.embed(collate(graphs, robust.sketch_labels, robust=True)).detach().numpy()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    learned = 2 * 8  # two branches of dim 8
    assert np.linalg.norm(vectors[0, :learned]) ** 2 == pytest.approx(0.9 - 0.3, abs=1e-4)
    assert np.linalg.norm(vectors[0, -256:]) ** 2 == pytest.approx(0.3, abs=1e-4)
    # the two MLPs differ in activation and width only: one robust sketch
    assert np.allclose(vectors[0, -256:], vectors[1, -256:], atol=1e-6)
    with pytest.raises(ValueError, match="robust_mix"):
        model_for(TrainConfig(hidden=8, dim=8, robust_mix=0.95), families=2)


def test_wl_features_do_not_depend_on_node_order():
    graph = residual_stack(2)
    order = list(reversed(range(graph.num_nodes)))  # node i moves to position order.index(i)
    moved = ArchGraph([graph.nodes[i] for i in order],
                      [(order.index(s), order.index(d)) for s, d in graph.edges])
    a, b = encode_graph(graph), encode_graph(moved)
    assert a.wl_index.tolist() == b.wl_index.tolist() and a.wl_count.tolist() == b.wl_count.tolist()


def test_metrics_follow_the_definitions():
    # query 0 (label a); candidates in cosine order: 1 (b), 2 (a), 3 (b), 4 (a)
    z = np.array([[1, 0], [0.99, 0.141], [0.9, 0.436], [0.7, 0.714], [0.5, 0.866]], dtype=np.float32)
    m = retrieval_metrics(z, ["a", "b", "a", "b", "a"], [0], ks=(2, 4))
    assert m["MRR@2"] == pytest.approx(0.5, abs=1e-4)
    assert m["MAP@2"] == pytest.approx(0.5 / 2, abs=1e-4)  # P@2 * 1 over min(R=2, k=2)
    assert m["MAP@4"] == pytest.approx((1 / 2 + 2 / 4) / 2, abs=1e-4)
    ideal = 1 + 1 / np.log2(3)
    assert m["NDCG@4"] == pytest.approx((1 / np.log2(3) + 1 / np.log2(5)) / ideal, abs=1e-4)


def _items(families):
    graph = encode_graph(mlp_graph(1))
    return [Item(f"h{i}", f"m{i}", fam, "mlp", graph) for i, fam in enumerate(families)]


def test_random_split_is_stratified_and_never_empties_a_family():
    items = _items(["a"] * 30 + ["b"] * 20 + ["c"] * 1 + ["d"] * 2)
    train, test = split_random(items, seed=0)
    assert sorted(train + test) == list(range(len(items)))
    fams = [items[i].family for i in test]
    assert 3 <= fams.count("a") <= 4 and 1 <= fams.count("b") <= 3 and "c" not in fams
    for family in "abcd":
        assert any(items[i].family == family for i in train)
    assert split_random(items, seed=0) == (train, test)


def test_ood_split_holds_out_whole_families():
    items = _items([f"f{i // 3}" for i in range(30)])
    train, test = split_ood(items, seed=1)
    held = {items[i].family for i in test}
    assert len(held) == 2 and not held & {items[i].family for i in train}


def test_training_is_reproducible_and_embeddings_deterministic():
    torch = pytest.importorskip("torch")
    from narcli.encode.training import TrainConfig, embed_items, train_encoder

    graphs = [residual_stack(n) for n in (2, 3, 4, 5)] + [mlp_graph(n) for n in (2, 3, 4, 5)]
    items = [Item(f"h{i}", f"m{i}", "resnet" if i < 4 else "mlp", "convolutional" if i < 4 else "mlp",
                  encode_graph(g)) for i, g in enumerate(graphs)]
    config = TrainConfig(hidden=16, dim=16, epochs=3, motif_epochs=1, batches_per_epoch=3,
                         families_per_batch=2, per_family=3)
    first = train_encoder(items, list(range(8)), config)
    second = train_encoder(items, list(range(8)), config)
    a = embed_items(first.model, [i.encoded for i in items])
    b = embed_items(second.model, [i.encoded for i in items])
    assert np.allclose(a, b, atol=1e-5)
    assert np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)
    again = embed_items(first.model, [i.encoded for i in items[::-1]])[::-1]
    assert np.allclose(a, again, atol=1e-5)  # batch composition does not change an embedding
    assert [e["stage"] for e in first.log] == ["motif", "graph", "graph", "graph"]
    assert torch.isfinite(torch.tensor([e["loss"] for e in first.log])).all()


def test_near_families_are_those_whose_wl_features_are_alike():
    pytest.importorskip("torch")
    from narcli.encode.training import nearest_families

    graphs = {"resnet": [residual_stack(3), residual_stack(4)], "resnet-deep": [residual_stack(6), residual_stack(7)],
              "mlp": [mlp_graph(2), mlp_graph(3)], "mlp-deep": [mlp_graph(6), mlp_graph(8)]}
    items, by_family = [], {}
    for family, members in graphs.items():
        for g in members:
            by_family.setdefault(family, []).append(len(items))
            items.append(Item(f"h{len(items)}", f"m{len(items)}", family, "mlp", encode_graph(g)))
    near = nearest_families(items, by_family, count=1)
    assert near == {"resnet": ["resnet-deep"], "resnet-deep": ["resnet"], "mlp": ["mlp-deep"], "mlp-deep": ["mlp"]}


def test_a_batch_with_hard_families_adds_a_near_family_of_one_chosen():
    pytest.importorskip("torch")
    import random

    from narcli.encode.training import _pk_batch

    by_family = {f"f{i}": [10 * i + j for j in range(3)] for i in range(40)}
    near = {f"f{i}": [f"f{(i + 1) % 40}"] for i in range(40)}  # each family's one near family is the next
    random.seed(0)
    for _ in range(20):
        batch = _pk_batch(by_family, 8, 2, near, 0.5)
        families = [f"f{x // 10}" for x in batch]
        chosen = list(dict.fromkeys(families))
        assert len(batch) == 2 * len(chosen) and len(chosen) <= 8
        # after four random families, each added one is the near family of one chosen before it
        added = chosen[4:]
        assert added and all(any(near[c][0] == family for c in chosen[:4 + k]) for k, family in enumerate(added))
    random.seed(0)
    plain = _pk_batch(by_family, 8, 2)
    assert len({x // 10 for x in plain}) == 8  # without near families, P random families as before
    with pytest.raises(Exception, match="hard-families"):
        from narcli.encode.training import TrainConfig

        TrainConfig(hard_families=0.9)


def test_a_checkpoint_resumes_under_another_wl_weight_but_not_another_recipe(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from dataclasses import replace

    from narcli.encode.retrieval_eval import checkpoint_path
    from narcli.encode.training import TrainConfig, train_encoder, training_key

    monkeypatch.setenv("NAR_HOME", str(tmp_path))
    items = [Item(f"h{i}", f"m{i}", "a" if i % 2 else "b", "mlp", encode_graph(mlp_graph(i + 1))) for i in range(4)]
    config = TrainConfig(hidden=8, dim=8, epochs=2, motif_epochs=0, batches_per_epoch=1, families_per_batch=2,
                         per_family=2)
    reread, other = replace(config, wl_mix=0.8), replace(config, lr=1e-2)
    path = checkpoint_path("t", config, items, [0, 1, 2, 3])
    assert checkpoint_path("t", reread, items, [0, 1, 2, 3]) == path  # the WL weight is read-out only
    assert checkpoint_path("t", replace(config, sketch_labels="ops"), items, [0, 1, 2, 3]) == path  # and its labels
    assert checkpoint_path("t", other, items, [0, 1, 2, 3]) != path
    # the full-graph branch is another recipe; without one, the key is what it was before the option
    assert checkpoint_path("t", replace(config, full_graph="none"), items, [0, 1, 2, 3]) != path
    assert "full_graph" not in training_key(replace(config, full_graph="none"))
    first = train_encoder(items, [0, 1, 2, 3], config, checkpoint=path)
    resumed = train_encoder(items, [0, 1, 2, 3], reread, checkpoint=path)
    assert resumed.log == first.log  # nothing trained again
    fresh = train_encoder(items, [0, 1, 2, 3], other, checkpoint=tmp_path / "other.pt")
    assert len(fresh.log) == 2 and fresh.log != first.log


@pytest.mark.parametrize("full_graph", ["none", "gat"])
def test_weights_round_trip_and_refuse_missing_or_other_versions(tmp_path, full_graph):
    pytest.importorskip("torch")
    import json

    from narcli.encode.training import TrainConfig, embed_items, train_encoder
    from narcli.encode.weights import WeightsError, load_encoder, save_weights

    items = [Item(f"h{i}", f"m{i}", "a" if i % 2 else "b", "mlp", encode_graph(mlp_graph(i + 1))) for i in range(4)]
    trained = train_encoder(items, [0, 1, 2, 3], TrainConfig(hidden=8, dim=8, epochs=1, motif_epochs=0,
                                                            batches_per_epoch=1, families_per_batch=2, per_family=2,
                                                            full_graph=full_graph))
    assert (trained.model.ff is not None) == (full_graph != "none")
    path = tmp_path / "enc.safetensors"
    save_weights(trained, path, {"note": "test"})
    model, card = load_encoder(path)
    graphs = [i.encoded for i in items]
    assert np.allclose(embed_items(model, graphs), embed_items(trained.model, graphs), atol=1e-6)
    assert card["families"] == ["a", "b"]
    from narcli.encode.weights import encoder_id

    before = encoder_id(path)  # a changed read-out in the card names another encoder: re-embed
    path.with_suffix(".json").write_text(json.dumps({**card, "config": {**card["config"], "wl_mix": 0.5}}))
    assert encoder_id(path) != before
    # a card from before the sketch labels existed reads its vectors as it did then
    config = {k: v for k, v in card["config"].items() if k != "sketch_labels"}
    path.with_suffix(".json").write_text(json.dumps({**card, "config": config}))
    assert load_encoder(path)[0].sketch_labels == "ops"
    path.with_suffix(".json").write_text(json.dumps({**card, "config": {**config, "sketch_labels": "colour"}}))
    with pytest.raises(WeightsError, match="unknown sketch labels 'colour'"):
        load_encoder(path)
    with pytest.raises(WeightsError, match="not found"):
        load_encoder(tmp_path / "missing.safetensors")
    card["encoder_version"] = 999
    path.with_suffix(".json").write_text(json.dumps(card))
    with pytest.raises(WeightsError, match="version 999"):
        load_encoder(path)


def test_node_batches_keep_order_and_bound_the_node_count():
    pytest.importorskip("torch")
    from narcli.encode.encoder import node_batches

    graphs = [encode_graph(mlp_graph(n)) for n in (1, 2, 30, 1, 1)]
    sizes = [g.num_nodes for g in graphs]
    groups = list(node_batches(graphs, batch_nodes=max(sizes[:2]) + min(sizes)))
    assert [g for group in groups for g in group] == graphs
    for group in groups:  # within the bound, unless one graph alone is larger
        assert len(group) == 1 or sum(g.num_nodes for g in group) <= max(sizes[:2]) + min(sizes)
    assert [graphs[2]] in groups
    assert list(node_batches([], 10)) == []


def test_cached_features_cut_short_are_rebuilt(tmp_path, monkeypatch):
    from narcli.encode.feature_cache import cached_features
    from narcli.encode.features import FEATURES_VERSION, encode_graph
    from narcli.graph.synthetic import residual_stack

    monkeypatch.setenv("NAR_HOME", str(tmp_path))
    first, second = encode_graph(residual_stack(12)), encode_graph(residual_stack(40))
    path = tmp_path / "features" / f"demo-v{FEATURES_VERSION}.npz"
    path.parent.mkdir()
    path.write_bytes(b"PK\x03\x04 cut short")  # as after a crash mid-write by an older nar
    assert cached_features("demo", lambda: [first])[0] is first
    again = cached_features("demo", lambda: [second])  # rewritten, then read back
    assert len(again) == 1 and again[0].num_nodes == first.num_nodes


class _FakeZoo:
    """A zoo's models as `card_split` reads them: (id, graph hash)."""

    def __init__(self, pairs):
        self.pairs = pairs

    def models(self):
        from types import SimpleNamespace

        return [SimpleNamespace(id=i, graph_hash=h) for i, h in self.pairs]


def test_a_card_keeps_its_test_part_when_the_zoo_is_relabelled_or_grows():
    from narcli.encode.dataset import card_split, test_models

    items = _items(["a"] * 30 + ["b"] * 20)
    zoo = _FakeZoo([(f"m{i}", f"h{i}") for i in range(50)] + [("alias-of-0", "h0"), ("alias-of-1", "h1")])
    train, test = split_random(items, seed=0)
    card = {"config": {"seed": 0}, "test_models": test_models(items, test, zoo)}
    assert card["test_models"] == sorted(m for i in test for m in [f"m{i}"] + [f"alias-of-{i}"] * (i < 2))

    relabelled = [Item(it.graph_hash, it.name, "c" if k % 2 else "d", it.coarse, it.encoded) for k, it in enumerate(items)]
    assert split_random(relabelled, seed=0)[1] != test  # a split drawn again on new labels moves
    assert card_split(relabelled, card, zoo) == (train, test)  # the card's does not

    # a model added since training shares a test graph: that graph may have been trained on under
    # its new name, so it leaves the test part
    grown = _FakeZoo(zoo.pairs + [(f"new-{test[0]}", f"h{test[0]}")])
    grown_train, grown_test = card_split(items, card, grown)
    assert grown_test == test[1:] and sorted(grown_train) == sorted(train + [test[0]])

    assert card_split(items, {"config": {"seed": 0}}, zoo) == (train, test)  # an older card: its seed


def test_the_shipped_card_keeps_the_test_part_it_was_scored_on():
    import json
    import re

    from narcli.encode.dataset import card_split, zoo_labels
    from narcli.encode.weights import bundled_weights_path
    from narcli.zoo.store import Zoo

    card = json.loads(bundled_weights_path().with_suffix(".json").read_text())
    listed = set(card["test_models"])
    with Zoo() as zoo:
        labelled = zoo_labels(zoo)
        items = [Item(h, *labelled[h], None) for h in labelled]
        train, test = card_split(items, card, zoo)
        models = list(zoo.models())
    assert listed and not set(train) & set(test)
    tested = {m.graph_hash for m in models if m.id in listed}
    assert len(tested) == int(re.search(r"(\d+) test", card["split"]).group(1))  # every test graph still there
    # less those a model added since (not in the card's list) shares: the encoder may have seen its twin
    shared = {m.graph_hash for m in models if m.graph_hash in tested and m.id not in listed}
    assert {items[i].graph_hash for i in test} == tested - shared and len(shared) <= 3


def test_a_shared_graph_is_labelled_for_training_as_searches_name_it(tmp_path):
    from narcli.encode.dataset import zoo_labels
    from narcli.zoo.store import Zoo
    from narcli.zoo.writer import writing

    shared, own = mlp_graph(2), mlp_graph(3)
    rows = [("hf/aria", "aria", shared), ("hf/llama", "llama", shared), ("hf/llama-heads", "llama", own)]
    with writing(tmp_path / "zoo.db") as writer:  # alphabetically the shared graph is aria's first
        for model_id, family, graph in rows:
            writer.store({"id": model_id, "source": "transformers", "name": model_id[3:], "family": family,
                          "source_family": family, "coarse": "transformer", "status": "ok",
                          "graph_hash": graph.content_hash()}, graph.to_json())
    with Zoo([tmp_path / "zoo.db"]) as zoo:
        labelled = zoo_labels(zoo)
        named = zoo.models_by_hash([shared.content_hash()])[shared.content_hash()][0]
    assert labelled[shared.content_hash()] == ("hf/llama", "llama", "transformer") and named.id == "hf/llama"
