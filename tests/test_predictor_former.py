"""The NAR-Former-style head: folded tokens, the transformer and its numpy twin, the AC augmentation,
the bundle with a former head, and `nar eval predictor --protocol nar-former`."""

import numpy as np
import pytest

from narcli.errors import NarError, UsageError
from narcli.predict.datasets import Dataset, Target
from narcli.predict.inputs import graph_input
from narcli.predict.metrics import kendall_tau
from narcli.predict.tokens import node_classes, reordered, tokenise
from tests.test_predictor import OPS, classifier, synthetic_dataset, text_model


def _renumbered(item, seed: int):
    order = np.random.default_rng(seed).permutation(item.num_nodes)
    where = np.argsort(order)
    return type(item)(item.ops[order], item.numeric[order], where[item.edges], item.figures)


def test_repeated_blocks_fold_into_one_set_of_tokens_with_repeat_counts():
    short, deep = graph_input(classifier(40)), graph_input(classifier(200))
    a, b = tokenise(short), tokenise(deep)
    assert a.num_tokens < short.num_nodes and b.num_tokens < deep.num_nodes / 5
    assert a.num_tokens == b.num_tokens and sorted(a.ops) == sorted(b.ops)  # same block, folded alike
    assert b.numeric[:, -1].max() > a.numeric[:, -1].max()  # ... but deeper repeats
    assert a.edges.shape[0] == 2 and (a.edges[0] != a.edges[1]).all()
    assert len({tuple(e) for e in a.edges.T}) == a.edges.shape[1]  # no duplicate token edges


def test_folding_does_not_depend_on_node_order():
    item = graph_input(classifier(60))
    classes, shuffled = node_classes(item), node_classes(_renumbered(item, 1))
    assert len(set(classes)) == len(set(shuffled))
    counts = sorted(np.bincount(classes).tolist())
    assert counts == sorted(np.bincount(shuffled).tolist())


def test_kernel_sizes_are_kept_apart_but_widths_are_not():
    item = graph_input(classifier(40))
    other_kernel = type(item)(item.ops, item.numeric.copy(), item.edges, item.figures)
    conv = int(np.flatnonzero(item.numeric[:, 2] > 0)[3])
    other_kernel.numeric[conv, 2] = 1 / 7  # 3x3 -> 1x1 in one conv
    assert len(set(node_classes(other_kernel))) > len(set(node_classes(item)))
    wider = type(item)(item.ops, item.numeric.copy(), item.edges, item.figures)
    wider.numeric[:, 0] += 0.1  # every width changes
    assert (node_classes(wider) == node_classes(item)).all()


def test_another_topological_numbering_keeps_edges_forward():
    tokens = tokenise(graph_input(classifier(40)))
    source, target = tokens.edges
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(5):
        position = reordered(tokens, rng)
        assert sorted(position) == list(range(tokens.num_tokens))
        forward = source < target
        assert (position[source[forward]] < position[target[forward]]).all()
        seen.add(tuple(position))
    assert len(seen) > 1  # not always the same order


def test_the_numpy_twin_matches_the_torch_former():
    import torch

    from narcli.predict.former import build_torch_former, collate_tokens, latents_numpy
    from narcli.predict.network import head_numpy

    torch.manual_seed(0)
    items = [tokenise(graph_input(g)) for g in (classifier(15), classifier(60), text_model())]
    net = build_torch_former(OPS, items[0].numeric.shape[1], 3, dim=16, layers=2).eval()
    with torch.no_grad():
        expected = net(collate_tokens(items)).numpy()  # padded: the short ones must not see the padding
        latents = net.latent(collate_tokens(items)).numpy()
    weights = {k: v.numpy() for k, v in net.state_dict().items()}
    z = latents_numpy(weights, items, 2)
    np.testing.assert_allclose(z, latents, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(head_numpy(weights, z), expected, rtol=1e-4, atol=1e-4)


def test_the_former_learns_with_the_consistency_loss_and_round_trips_in_a_bundle(tmp_path):
    from narcli.predict.build import train_bundle
    from narcli.predict.bundle import load_bundle
    from narcli.predict.training import config_for, predict_scaled, train_net

    data = synthetic_dataset()
    config = config_for("former", dim=16, layers=1, epochs=40, batch=8)
    assert config.ac_weight > 0 and config.kind == "former"
    net = train_net(data.items, data.transformed(), config, OPS)
    predicted, latents = predict_scaled(net, data.items)
    assert kendall_tau(predicted[:, 0], data.values[:, 0]) > 0.6
    assert latents.shape == (len(data.items), 3 * config.dim)
    train_bundle([data], tmp_path, config, OPS, tmp_path / "work")
    head = load_bundle(tmp_path).heads[0]
    assert head.net.config.kind == "former"
    again, _ = predict_scaled(head.net, data.items[:3])
    assert np.isfinite(again).all()


def _nb201_like(rows: int = 40) -> Dataset:
    depth = [12 + 3 * (i % 13) for i in range(rows)]
    items = [graph_input(classifier(d)) for d in depth]
    test = np.array([[50 + d / 2, 20 + d / 3, 10 + d / 4] for d in depth], dtype=float)
    validation = test - 5 + np.random.default_rng(0).normal(0, 0.5, test.shape)
    targets = [Target(c, "accuracy", "%", "") for c in ("cifar10-test", "cifar100-test", "imagenet-test")]
    targets.append(Target("gpu_1", "latency", "ms", "gpu", 1, log=True))
    values = np.concatenate([test, np.array(depth, float)[:, None]], 1)
    return Dataset("nb201", [f"cell{i}" for i in range(rows)], [f"h{d}" for d in depth], items, targets, values, validation)


def test_nar_former_protocol_trains_on_the_first_rows_val_labels_and_scores_every_row():
    from narcli.predict.evaluation import evaluate
    from narcli.predict.training import config_for

    data = _nb201_like()
    result = evaluate(data, train_size=20, op_count=OPS, protocol="nar-former",
                      config=config_for("former", dim=16, layers=1, epochs=60, batch=8))
    assert result["mode"] == "nar-former" and result["train_rows"] == 20 and result["test_rows"] == 40
    assert set(result["columns"]) == {"cifar10-test", "cifar100-test", "imagenet-test"}  # accuracies only
    assert all(m["rows"] == 40 for m in result["columns"].values())  # training rows scored too
    assert all(m["rows"] == 20 for m in result["unseen"].values())
    expected = kendall_tau(data.validation[:, 0], data.values[:, 0])
    assert result["ceiling"]["cifar10-test"] == pytest.approx(expected, abs=1e-4)
    assert result["columns"]["cifar10-test"]["tau"] > 0.5


def test_nar_former_protocol_refuses_what_it_cannot_measure():
    from narcli.predict.evaluation import evaluate

    with pytest.raises(UsageError, match="NAS-Bench-201"):
        evaluate(synthetic_dataset(), train_size=5, op_count=OPS, protocol="nar-former")
    data = _nb201_like()
    data.validation = np.full_like(data.validation, np.nan)
    with pytest.raises(NarError, match="cifar10-val"):
        evaluate(data, train_size=5, op_count=OPS, protocol="nar-former")
    with pytest.raises(UsageError, match="--train-size"):
        evaluate(_nb201_like(), op_count=OPS, protocol="nar-former")


def test_train_size_takes_a_count_or_a_share():
    from narcli.predict.evaluation import rows_for

    assert rows_for("5%", 15_625) == 781 and rows_for("10%", 15_625) == 1563
    assert rows_for("5%", 7_813) == 391 and rows_for("50%", 7_813) == 3907
    assert rows_for("1,563", 7_813) == 1563 and rows_for(None, 10) is None
    for bad in ("abc", "0%", "150%"):
        with pytest.raises(UsageError, match="row count"):
            rows_for(bad, 100)


def test_eval_predictor_protocol_and_kind_errors_are_one_line(cli, tmp_path):
    folder = tmp_path / "timm"
    folder.mkdir()
    (folder / "results-imagenet.csv").write_text("model,top1\nresnet50.a1_in1k,80\n")
    result = cli("eval", "predictor", "--timm", folder, "--protocol", "nar-former", "--train-size", "5%")
    assert result.exit_code == 2 and "NAS-Bench-201's" in result.output and "Traceback" not in result.output
    result = cli("eval", "predictor", "--nb201", folder, "--protocol", "bogus", "--train-size", "5")
    assert result.exit_code == 2 and "--protocol is one of held-out, nar-former" in result.output
    result = cli("eval", "predictor", "--nb201", folder, "--train-size", "5", "--kind", "mlp")
    assert result.exit_code == 2 and "--kind is one of graph, former" in result.output
    result = cli("eval", "predictor", "--nb201", folder, "--train-size", "five")
    assert result.exit_code == 2 and "row count (781) or a share (5%)" in result.output


def test_nar_former_protocol_chooses_the_checkpoint_on_the_rows_after_the_first_n():
    from narcli.predict.evaluation import evaluate
    from narcli.predict.training import config_for

    data = _nb201_like(40)
    data.validation[:, 1:] = np.nan  # no 200-epoch -val for CIFAR-100 and ImageNet16-120
    result = evaluate(data, train_size=20, op_count=OPS, protocol="nar-former",
                      config=config_for("graph", dim=16, layers=1, epochs=12, batch=8))
    assert result["selection"]["rows"] == 20 and result["selection"]["on"] == "cifar10-val"
    assert 1 <= result["selection"]["epoch"] <= 12
    # CIFAR-10 trains on its -val column; the others on their -test column, said so, with no ceiling
    assert result["trained_on"] == {"cifar10-test": "cifar10-val", "cifar100-test": "cifar100-test",
                                    "imagenet-test": "imagenet-test"}
    assert set(result["ceiling"]) == {"cifar10-test"}


def test_the_selection_keeps_the_best_scoring_epochs_weights():
    from narcli.predict.training import Selection, config_for, predict_scaled, train_net

    data = _nb201_like(40)
    labels = data.validation[:, :1]
    chosen = Selection(data.items[20:], (labels[20:, 0] - labels[:20, 0].mean()) / labels[:20, 0].std())
    net = train_net(data.items[:20], labels[:20], config_for("graph", dim=16, layers=1, epochs=10, batch=8), OPS,
                    selection=chosen)
    scores = [e["selection_tau"] for e in net.log if "epoch" in e]
    picked = net.log[-1]
    assert len(scores) == 10 and picked["selection_tau"] == pytest.approx(max(scores), abs=1e-4)
    assert scores.index(max(scores)) + 1 == picked["selected_epoch"]
    predicted, _ = predict_scaled(net, chosen.items)  # the numpy twin of the kept weights scores the same
    assert kendall_tau(predicted[:, 0], chosen.labels) == pytest.approx(picked["selection_tau"], abs=0.03)


def test_training_one_head_keeps_the_other_heads_of_the_bundle(tmp_path):
    from narcli.predict.build import train_bundle
    from narcli.predict.bundle import load_bundle
    from narcli.predict.training import NetConfig

    config = NetConfig(dim=8, layers=1, epochs=3, batch=8)
    train_bundle([synthetic_dataset(), _nb201_like(24)], tmp_path, config, OPS, tmp_path / "work")
    before = {h.name: h for h in load_bundle(tmp_path).heads}
    train_bundle([_nb201_like(30)], tmp_path, NetConfig(dim=8, layers=1, epochs=3, batch=8, seed=1), OPS,
                 tmp_path / "work2")
    after = {h.name: h for h in load_bundle(tmp_path).heads}
    assert sorted(after) == ["nb201", "timm"]
    kept = after["timm"]
    assert all(np.array_equal(kept.net.weights[k], before["timm"].net.weights[k]) for k in kept.net.weights)
    assert kept.metrics == before["timm"].metrics and kept.reach == before["timm"].reach
    assert "24 rows" not in after["nb201"].trained_on and not np.array_equal(
        after["nb201"].net.weights["head2.weight"], before["nb201"].net.weights["head2.weight"])


def test_twelve_epoch_labels_are_called_out():
    from narcli.predict.sources import short_training_warning

    short = _nb201_like(120)  # best CIFAR-10 "test" accuracy about 75 %: not a 200-epoch column
    assert "12-epoch" in short_training_warning(short)
    short.values[0, 0] = 94.37
    assert short_training_warning(short) == ""


def test_latency_columns_name_their_device_and_batch():
    from narcli.predict.datasets import nb201_latency_target

    gpu, cpu, other = (nb201_latency_target(c) for c in ("titan_rtx_256", "gold_6226", "silver_4210r"))
    assert (gpu.device, gpu.batch) == ("titan_rtx", 256)
    assert (cpu.device, cpu.batch) == ("gold_6226", 1)  # a CPU model number, not batch 6226
    assert (other.device, other.batch) == ("silver_4210r", 1)
