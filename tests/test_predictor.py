"""The accuracy/latency predictor: graph inputs, the network and its numpy twin, training (resumable),
the bundle (save, load, tampering), applicability, intervals and `nar predict` / `nar eval predictor`."""

import json
from pathlib import Path

import numpy as np
import pytest
from narcli.errors import NarError, UsageError
from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.synthetic import residual_stack
from narcli.predict.datasets import Dataset, Target, read_csv, split_groups
from narcli.predict.inputs import GLOBALS, graph_input, image_input, output_classes
from narcli.predict.metrics import kendall_tau, mape, within

OPS = 200  # larger than the op vocabulary


def classifier(nodes: int, classes: int = 1000, channels: int = 3) -> ArchGraph:
    """residual_stack with a real head: (1, classes) scores, `channels`-channel input."""
    graph = residual_stack(nodes)
    graph.nodes[0].shape = [1, channels, 224, 224]
    for node in graph.nodes[-3:]:
        node.shape = [1, classes] if node.op != "global_avg_pool" else [1, 64]
    for node in graph.nodes:
        if node.op == "conv2d":
            node.macs = 64 * 64 * 9 * 56 * 56
    return graph


def text_model() -> ArchGraph:
    nodes = [Node("input", [1, 16]), Node("embedding", [1, 16, 32], params=32_000), Node("linear", [1, 16, 100]),
             Node("output", [1, 16, 100])]
    return ArchGraph(nodes, [(0, 1), (1, 2), (2, 3)])


def synthetic_dataset(count: int = 24) -> Dataset:
    sizes = [12 + 7 * i for i in range(count)]
    items = [graph_input(classifier(n)) for n in sizes]
    values = np.array([[60 + s / 10, 0.5 * s] for s in sizes])  # accuracy and latency both grow with depth
    targets = [Target("top1", "accuracy", "%", ""), Target("cpu-x", "latency", "ms", "testcpu", 1, log=True)]
    return Dataset("timm", [f"m{s}" for s in sizes], [f"h{s}" for s in sizes], items, targets, values)


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory):
    from narcli.predict.build import train_bundle
    from narcli.predict.training import NetConfig

    out = tmp_path_factory.mktemp("predictor")
    train_bundle([synthetic_dataset()], out, NetConfig(dim=8, layers=1, epochs=30, batch=8), OPS, out / "work")
    return out


# -- inputs ----------------------------------------------------------------------------------------
def test_graph_inputs_follow_the_graph():
    graph = classifier(40)
    item = graph_input(graph)
    assert item.num_nodes == graph.num_nodes and item.numeric.shape == (graph.num_nodes, 8)
    assert item.edges.shape == (2, len(graph.edges)) and item.figures.shape == (len(GLOBALS),)
    assert np.isfinite(item.figures).all() and np.isfinite(item.numeric).all()
    bigger = graph_input(graph, macs=graph.macs * 4)
    assert bigger.figures[1] > item.figures[1]  # a zoo variant's own MACs count


def test_what_kind_of_model_a_graph_is():
    assert image_input(classifier(20)) == (3, 224, 224)
    assert output_classes(classifier(20, classes=10)) == 10
    assert image_input(text_model()) is None
    assert output_classes(text_model()) is None  # (1, 16, 100) is not a class-score vector


# -- the network -----------------------------------------------------------------------------------
def test_the_numpy_twin_matches_the_torch_network():
    import torch

    from narcli.predict.network import build_torch_net, collate, head_numpy, latent_numpy, latents_numpy

    torch.manual_seed(0)
    net = build_torch_net(OPS, 8, 3, dim=16, layers=2).eval()
    items = [graph_input(classifier(n)) for n in (15, 40)] + [graph_input(text_model())]
    with torch.no_grad():
        expected = net(collate(items)).numpy()
        latents = net.latent(collate(items)).numpy()
    weights = {k: v.numpy() for k, v in net.state_dict().items()}
    for i, item in enumerate(items):
        z = latent_numpy(weights, item, 2)
        np.testing.assert_allclose(z, latents[i], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(head_numpy(weights, z), expected[i], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(latents_numpy(weights, items, 2), latents, rtol=1e-4, atol=1e-5)  # batched


def test_node_order_does_not_change_a_prediction():
    from narcli.predict.network import latent_numpy
    from narcli.predict.training import NetConfig, train_net

    data = synthetic_dataset(6)
    net = train_net(data.items, data.transformed(), NetConfig(dim=8, layers=2, epochs=1, batch=4), OPS)
    item = data.items[3]
    order = np.random.default_rng(0).permutation(item.num_nodes)
    where = np.argsort(order)  # old index -> new index
    shuffled = type(item)(item.ops[order], item.numeric[order], where[item.edges], item.figures)
    a, b = latent_numpy(net.weights, item, 2), latent_numpy(net.weights, shuffled, 2)
    np.testing.assert_allclose(a[:16], b[:16], rtol=1e-4, atol=1e-5)  # mean and max readouts
    np.testing.assert_allclose(a[24:], b[24:], rtol=1e-4, atol=1e-5)  # whole-model figures


def test_training_learns_and_resumes_where_it_stopped(tmp_path):
    from narcli.predict.training import NetConfig, predict_scaled, train_net

    data = synthetic_dataset()
    learnt = data.transformed()
    config = NetConfig(dim=8, layers=1, epochs=30, batch=8)
    whole = train_net(data.items, learnt, config, OPS)
    predicted, _ = predict_scaled(whole, data.items)
    assert kendall_tau(predicted[:, 0], learnt[:, 0]) > 0.6
    checkpoint = tmp_path / "head.ckpt"

    class Killed(Exception):
        pass

    def kill_at_ten(entry):
        if entry["epoch"] == 10:
            raise Killed

    with pytest.raises(Killed):
        train_net(data.items, learnt, config, OPS, on_epoch=kill_at_ten, checkpoint=checkpoint)
    epochs = []
    resumed = train_net(data.items, learnt, config, OPS, on_epoch=epochs.append, checkpoint=checkpoint)
    assert [e["epoch"] for e in epochs] == list(range(11, 31))  # picked up after epoch 10
    for key, value in whole.weights.items():
        np.testing.assert_allclose(resumed.weights[key], value, rtol=1e-4, atol=1e-5)


def test_missing_targets_are_left_out_of_the_loss():
    from narcli.predict.training import NetConfig, train_net

    data = synthetic_dataset(8)
    learnt = data.transformed()
    learnt[::2, 1] = np.nan
    net = train_net(data.items, learnt, NetConfig(dim=8, layers=1, epochs=2, batch=4), OPS)
    assert all(np.isfinite(v).all() for v in net.weights.values())


# -- the bundle ------------------------------------------------------------------------------------
def test_the_bundle_round_trips_and_answers_without_torch(bundle_dir):
    import subprocess
    import sys

    code = ("import sys\nfrom pathlib import Path\nfrom narcli.predict.bundle import load_bundle, predict_graph\n"
            "from narcli.graph.synthetic import residual_stack\n"
            f"b = load_bundle(Path({str(bundle_dir)!r}))\n"
            "rows = predict_graph(residual_stack(30), b)\n"
            "assert rows and 'torch' not in sys.modules, 'torch was imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    card = json.loads((bundle_dir / "predictor.json").read_text())
    assert card["heads"][0]["targets"][0]["column"] == "top1"
    assert "held_out_rows" in card["heads"][0]["metrics"]


def test_predictions_come_with_intervals_and_say_when_they_do_not_apply(bundle_dir):
    from narcli.predict.bundle import load_bundle, predict_graph

    bundle = load_bundle(bundle_dir)
    rows = {r.target.column: r for r in predict_graph(classifier(60), bundle)}
    assert rows["top1"].status in ("ok", "out of range")
    if rows["top1"].status == "ok":
        assert rows["top1"].low <= rows["top1"].value <= rows["top1"].high
        assert rows["cpu-x"].low < rows["cpu-x"].value < rows["cpu-x"].high
    ten = {r.target.column: r for r in predict_graph(classifier(60, classes=10), bundle)}
    assert ten["top1"].status == "n/a" and "1,000-class" in ten["top1"].reason and "10 classes" in ten["top1"].reason
    text = predict_graph(text_model(), bundle)
    assert {r.status for r in text} == {"n/a"} and "not one image batch" in text[0].reason
    grey = predict_graph(classifier(60, channels=1), bundle)
    assert grey[0].reason.endswith("this model's input has 1 channel")
    assert predict_graph(classifier(60, channels=4), bundle)[0].reason.endswith("input has 4 channels")
    last = classifier(60)
    last.nodes[0].shape = [1, 224, 224, 3]  # channels last: read as 224 channels, and said so
    assert predict_graph(last, bundle)[0].reason.endswith(
        "input has 224 channels (read as N×C×H×W; its last dimension is 3: channels last?)")


def test_a_model_unlike_the_training_data_is_out_of_range(bundle_dir):
    from narcli.predict.bundle import load_bundle, predict_graph

    bundle = load_bundle(bundle_dir)
    graph = classifier(60)
    for node in graph.nodes:  # the same shape of network, but made of operations never seen in training
        if node.op in ("conv2d", "batch_norm", "relu", "add"):
            node.op = "lstm"
    rows = predict_graph(graph, bundle)
    assert {r.status for r in rows} == {"out of range"} and "unlike every model" in rows[0].reason


def test_a_model_bigger_than_any_trained_on_is_out_of_range(bundle_dir):
    from narcli.predict.bundle import load_bundle, predict_graph

    graph = classifier(60)
    graph.meta["params"] = 10**9
    rows = predict_graph(graph, load_bundle(bundle_dir))
    assert {r.status for r in rows} == {"out of range"}
    # the bound crossed, in the unit model cards use for parameter counts (not "(a–b)", read backwards)
    assert "its parameter count (1 B) is above the largest this head was trained on (" in rows[0].reason
    assert "–" not in rows[0].reason


def test_the_reference_head_names_the_bound_a_size_crosses_with_its_unit():
    from narcli.predict.latency import range_reason

    assert range_reason("macs", 833e9, 30e9, True) == \
        "its size, 833 G MACs, is above the largest the reference set measured (30 G MACs)"
    assert range_reason("params", 6.72e9, 352, True).startswith("its size, 6.72 B params,")
    assert range_reason("nodes", 3, 12, False).endswith("below the smallest the reference set measured (12 nodes)")


def test_nar_predict_rewords_reasons_stored_by_earlier_versions(cli):
    """`nar predict` says why a head does not apply in today's words; the forms zoos stored before
    ("its macs (833 G) is beyond what the reference set measured (352–30 G)") are reworded."""
    from narcli.predict.zoo_predictions import _reworded

    result = cli("predict", "llama")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "its size, 833 G MACs, is above the largest the reference set measured (47.1 G MACs)" in text
    assert "beyond what" not in text
    assert _reworded("trained on 3-channel images; this model takes 1 channels") == \
        "trained on 3-channel images; this model's input has 1 channel"
    assert _reworded("its parameter count (4.5 G) is outside what this head was trained on (272 k–4.35 G)") == \
        "its parameter count (4.5 B) is above the largest this head was trained on (4.35 B)"
    assert _reworded("its input size (48×48 px) is outside what this head was trained on (106×106 px–1024×1024 px)") \
        == "its input size (48×48 px) is below the smallest this head was trained on (106×106 px)"


def test_an_unknown_device_lists_the_known_ones(bundle_dir):
    from narcli.predict.bundle import load_bundle, predict_graph

    with pytest.raises(UsageError, match="unknown device 'tpu9'; known: testcpu"):
        predict_graph(classifier(30), load_bundle(bundle_dir), device="tpu9")
    rows = predict_graph(classifier(30), load_bundle(bundle_dir), device="testcpu")
    assert {r.target.column for r in rows} == {"top1", "cpu-x"}


def test_missing_or_tampered_weights_say_how_to_fix(bundle_dir, tmp_path):
    import shutil

    from narcli.predict.bundle import load_bundle

    with pytest.raises(NarError, match="no predictor weights in .*nar train predictor"):
        load_bundle(tmp_path / "nowhere")
    copy = tmp_path / "copy"
    shutil.copytree(bundle_dir, copy)
    blob = bytearray((copy / "predictor.safetensors").read_bytes())
    blob[-5] ^= 0xFF
    (copy / "predictor.safetensors").write_bytes(bytes(blob))
    with pytest.raises(NarError, match="unusable .*do not match their card.*nar train predictor"):
        load_bundle(copy)


def test_conformal_width_is_the_right_quantile():
    from narcli.predict.build import conformal_width

    residuals = np.arange(1, 101, dtype=np.float64)[:, None] * np.array([[1.0, -2.0]])
    width = conformal_width(residuals, 0.9)
    assert width.tolist() == [91.0, 182.0]  # ceil(101 * 0.9) = 91st smallest


# -- data, metrics, commands -------------------------------------------------------------------------
def test_a_csv_without_a_needed_column_is_a_usage_error(tmp_path):
    (tmp_path / "accuracy.csv").write_text("index,arch,cifar10-test\n0,x,1\n")
    with pytest.raises(UsageError, match="missing column 'arch_str'"):
        read_csv(tmp_path / "accuracy.csv", ("index", "arch_str"))


def test_eval_predictor_names_the_missing_column(cli, tmp_path):
    folder = tmp_path / "timm"
    folder.mkdir()
    (folder / "results-imagenet.csv").write_text("model,top5\nresnet50.a1_in1k,95\n")
    result = cli("eval", "predictor", "--timm", folder)
    assert result.exit_code == 2
    assert "missing column 'top1'" in result.output and "Traceback" not in result.output


def test_eval_predictor_needs_a_folder(cli, tmp_path):
    result = cli("eval", "predictor")
    assert result.exit_code == 2 and "--nb201 DIR and/or --timm DIR" in result.output
    result = cli("eval", "predictor", "--nb201", tmp_path / "absent")
    assert result.exit_code == 2 and "is not a folder" in result.output


def test_groups_never_straddle_a_split():
    groups = [f"g{i // 3}" for i in range(60)]
    train, test = split_groups(groups, 0.2, seed=1)
    assert len(train) + len(test) == 60 and len(test) == 12
    assert not {groups[i] for i in train} & {groups[i] for i in test}


def test_metrics():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert mape([110, 90], [100, 100]) == pytest.approx(10.0)
    assert within([109, 80], [100, 100]) == pytest.approx(50.0)


@pytest.fixture
def small_zoo(tmp_path):
    """The bundled zoo cut down to a few models (a copy: the bundled one is never written)."""
    import shutil
    import sqlite3

    from narcli.zoo.store import bundled_zoo_path

    db = tmp_path / "zoo.db"
    shutil.copy(bundled_zoo_path(), db)
    with sqlite3.connect(db) as connection:
        connection.execute("delete from models where name not in ('resnet50', 'resnet18', 'gpt2')")
    return db


def test_zoo_predictions_are_stored_once_and_read_back(bundle_dir, small_zoo):
    from narcli.predict.bundle import load_bundle, predict_graph
    from narcli.predict.zoo_predictions import predict_zoo, stored_predictions
    from narcli.zoo.store import Zoo

    first = predict_zoo(small_zoo, bundle_dir)
    assert first["predicted"] >= 3
    assert predict_zoo(small_zoo, bundle_dir)["predicted"] == 0  # only what changed
    bundle = load_bundle(bundle_dir)
    with Zoo([small_zoo]) as zoo:
        model = zoo.resolve("resnet50")
        live = predict_graph(zoo.graph(model), bundle, macs=model.macs, params=model.params)
    stored = stored_predictions(small_zoo, model.id, bundle)
    assert [(r.target.column, r.status, r.reason) for r in stored] == [(r.target.column, r.status, r.reason) for r in live]
    for a, b in zip(stored, live):
        assert (a.value, a.low, a.high) == pytest.approx((b.value, b.low, b.high), rel=1e-4)


def test_nar_predict_a_zoo_name_reads_stored_rows_without_torch(bundle_dir, small_zoo):
    import os
    import subprocess
    import sys

    from narcli.predict.zoo_predictions import predict_zoo

    predict_zoo(small_zoo, bundle_dir)
    code = ("import sys; from narcli.cli.app import app\n"
            f"sys.argv = ['nar', 'predict', 'gpt2', '--weights', {str(bundle_dir)!r}]\n"
            "try:\n    app()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "assert 'torch' not in sys.modules, 'torch was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "NAR_ZOO": str(small_zoo), "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "no prediction applies" in done.stdout and "not one image batch" in done.stdout


def test_nar_predict_a_cached_scan_and_a_file(cli, bundle_dir, write):
    model = write("tiny_cnn.py", """
        from torch import nn

        class TinyCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
                self.head = nn.Linear(8, 1000)

            def forward(self, x):
                return self.head(self.body(x))
        """)
    first = cli("predict", model, "--weights", bundle_dir, "--json", "-i", "1,3,64,64")
    assert first.exit_code == 0, first.output
    rows = json.loads(first.output)["results"][0]["predictions"]
    assert {r["column"] for r in rows} == {"top1", "cpu-x"}
    again = cli("predict", "cache:TinyCNN", "--weights", bundle_dir, "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["results"][0]["predictions"] == rows
    # given inputs are no assumption; guessed ones are said, as what the figures are for
    assert json.loads(first.output)["results"][0]["assumed"] is None
    fresh = write("tiny_cnn_copy.py", Path(model).read_text())  # never scanned: nothing to reuse
    guessed = cli("predict", fresh, "--weights", bundle_dir, "--json")
    [result] = json.loads(guessed.output)["results"]
    assert result["inputs"] == [{"shape": [1, 3, 32, 32], "dtype": "float32"}] and "CIFAR-sized" in result["assumed"]
    text = cli("predict", fresh, "--weights", bundle_dir)
    assert "input float32[1,3,32,32], assumed: image" in " ".join(text.stdout.split())


def test_nar_predict_bad_input_is_one_line(cli, bundle_dir, tmp_path):
    unknown = cli("predict", "resnet50", "--weights", bundle_dir, "--device", "tpu9")
    assert unknown.exit_code == 2 and "unknown device 'tpu9'; known: testcpu" in unknown.output
    missing = cli("predict", "resnet50", "--weights", tmp_path / "nowhere")
    assert missing.exit_code == 1 and "no predictor weights in" in missing.output
    for result in (unknown, missing):
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_both_kendall_implementations_agree():
    from narcli.predict.metrics import _kendall_tau_quadratic

    rng = np.random.default_rng(3)
    a = rng.integers(0, 20, 300).astype(float)  # ties on both sides
    b = a + rng.normal(scale=5, size=300).round()
    assert kendall_tau(a, b) == pytest.approx(_kendall_tau_quadratic(a, b), abs=1e-9)


def test_a_new_latency_head_keeps_the_other_heads_stored_rows(bundle_dir, small_zoo, tmp_path):
    import shutil

    from narcli.predict.bundle import load_bundle
    from narcli.predict.latency import HEAD_NAME, save_head
    from narcli.predict.zoo_predictions import predict_zoo, stored_predictions
    from tests.test_latency_head import head_for

    folder = tmp_path / "bundle"
    shutil.copytree(bundle_dir, folder)
    predict_zoo(small_zoo, folder)
    before = stored_predictions(small_zoo, "timm/resnet50", load_bundle(folder))
    head = head_for(seen={"input", "output", "conv2d", "batch_norm", "relu", "add", "max_pool2d",
                          "adaptive_avg_pool2d", "global_avg_pool", "linear", "flatten"},
                    ranges={"macs": [1e6, 1e11], "params": [0.0, 1e9], "nodes": [2, 5000]})
    save_head(head, folder)
    lines = []
    assert predict_zoo(small_zoo, folder, report=lines.append)["predicted"] >= 3
    assert "need only the reference latency head" in lines[0] and not lines[0].startswith("predicting 0")
    after = stored_predictions(small_zoo, "timm/resnet50", load_bundle(folder))
    assert after is not None and [r for r in after if r.head != HEAD_NAME] == before
    (reference,) = [r for r in after if r.head == HEAD_NAME]
    assert reference.target.column == "reference-cpu" and reference.status in ("ok", "n/a", "out of range")


def _latency_row(head: str, column: str, device: str, status: str = "ok", title: str = ""):
    from narcli.predict.bundle import Row

    return Row(head, title, Target(column, "latency", "ms", device, 1), 4.6 if status == "ok" else None,
               2.2 if status == "ok" else None, 9.6 if status == "ok" else None, status, "", "")


def test_nar_predict_says_whose_gpu_a_gpu_latency_is_until_one_is_measured_here():
    from narcli.search.predictions import Predictions, gpu_latency_note

    title = "reference GPU (NVIDIA H100 80GB HBM3, batch 1, fp32)"
    gpu = _latency_row("reference-gpu", "reference-cuda", "reference-cuda", title=title)
    note = gpu_latency_note([gpu])
    assert note is not None and title in note and "not your GPU" in note and "--device cuda" in note
    assert Predictions("m", [gpu], []).to_json()["gpu_note"] == note
    # a GPU timing of this model stored here: the measurement speaks for itself
    measured = _latency_row("measured", "measured-cuda", "NVIDIA H200")
    assert gpu_latency_note([gpu, measured]) is None
    # a CPU timing does not answer for the GPU
    assert gpu_latency_note([gpu, _latency_row("measured", "measured-cpu", "this CPU, 1 thread")]) == note
    # no GPU figure, or none the head would give: nothing to say
    assert gpu_latency_note([_latency_row("reference", "reference-cpu", "reference-cpu")]) is None
    assert gpu_latency_note([_latency_row("reference-gpu", "reference-cuda", "reference-cuda", "out of range")]) is None
    assert "gpu_note" not in Predictions("m", [], []).to_json()


def test_a_gpu_timing_does_not_silence_the_cpu_note():
    from narcli.search.predictions import latency_note

    cpu = _latency_row("reference", "reference-cpu", "reference-cpu", title="reference CPU (AMD EPYC, 1 thread)")
    note = latency_note([cpu])
    assert note is not None and "another machine, not this one" in note and "nar calibrate" in note
    assert latency_note([cpu, _latency_row("measured", "measured-cuda", "NVIDIA H200")]) == note
    assert latency_note([cpu, _latency_row("measured", "measured-cpu", "this CPU, 1 thread")]) is None
    assert latency_note([cpu, _latency_row("device", "device-cpu", "this CPU, 2 threads")]) is None
