"""The reference-CPU latency head: node features, the additive cost model in numpy, saving and
loading, its applicability rules (unseen operations, sizes beyond the reference set), learning a
known cost law from synthetic graphs, the family split, and its rows in `nar predict`."""

import math

import numpy as np
import pytest
from narcli.errors import NarError
from narcli.graph.arch_graph import ArchGraph, Node
from narcli.predict import latency as lat
from narcli.predict import latency_network, latency_parts
from narcli.predict import latency_training as lt


def chain(ops_macs: list[tuple[str, int]], width: int = 64) -> ArchGraph:
    nodes = [Node("input", [1, width])] + [Node(op, [1, width], macs=macs, params=macs // 4) for op, macs in ops_macs]
    nodes.append(Node("output", [1, width]))
    return ArchGraph(nodes, [(i, i + 1) for i in range(len(nodes) - 1)])


def head_for(weights=None, seen=("input", "output", "linear", "relu"), ranges=None) -> lat.LatencyHead:
    if weights is None:
        weights = lt.fit(*synthetic_samples(8), lt.Config(epochs=1, hidden=8, embed=4))
    return lat.LatencyHead(weights, 0.2, 0.9, {"name": "Test CPU", "threads": 1},
                           ranges or {"macs": [1e3, 1e9], "params": [0.0, 1e8], "nodes": [2, 500]}, set(seen))


def synthetic_samples(count: int, seed: int = 0) -> tuple[list, list[int]]:
    """Chains of linear/relu nodes whose 'measured' latency is 1 ms per 100 M MACs + 50 µs a node."""
    rng = np.random.default_rng(seed)
    samples = []
    for i in range(count):
        layers = int(rng.integers(2, 40))
        ops = [("linear", int(rng.integers(10**5, 10**7))) if j % 2 == 0 else ("relu", 0) for j in range(layers)]
        graph = chain(ops)
        ms = sum(m for _, m in ops) / 1e8 + 0.05 * len(graph.nodes)
        row = {"model": f"m{i}", "family": f"f{i % 7}", "source": "synthetic", "coarse": "mlp",
               "macs": graph.macs, "params": graph.params, "median_ms": ms}
        o, n, w, c = lt._deduplicated(*lat.node_features(graph))
        samples.append(lt.Sample(row, o, n, w, c, lat.graph_features(graph), {x.op for x in graph.nodes},
                                 math.log(ms)))
    return samples, list(range(count))


def test_node_features_have_one_row_per_node_and_the_work_each_does():
    graph = chain([("linear", 4096), ("relu", 0)])
    ops, numeric, work = lat.node_features(graph)
    assert ops.shape == (4,) and numeric.shape == (4, lat.NUMERIC) and work.shape == (4, 2)
    assert work[1, 0] == 4096 and work[2, 0] == 0
    assert work[2, 1] == 64 + 64  # relu: 64 elements read, 64 written
    assert np.isfinite(numeric).all()


def test_identical_nodes_are_kept_once_with_their_count():
    graph = chain([("linear", 4096), ("relu", 0)] * 10)
    ops, numeric, work, count = lt._deduplicated(*lat.node_features(graph))
    assert count.sum() == graph.num_nodes and len(ops) < graph.num_nodes


def test_the_numpy_head_sums_node_costs_plus_overhead():
    weights = lt.fit(*synthetic_samples(8), lt.Config(epochs=1, hidden=8, embed=4))
    graph = chain([("linear", 10**6), ("relu", 0)])
    costs = lat.node_costs(weights, *lat.node_features(graph))
    total = lat.graph_log_latency(weights, *lat.node_features(graph))
    assert (costs > 0).all()
    assert total == pytest.approx(math.log(costs.sum() + math.exp(weights["overhead"][0])), rel=1e-6)


def test_it_learns_a_cost_law_and_carries_it_to_families_it_never_saw():
    samples, rows = synthetic_samples(160)
    train, calibration, test = lt.family_split(samples, seed=0)
    assert not {samples[i].row["family"] for i in train} & {samples[i].row["family"] for i in test}
    weights = lt.fit(samples, train, lt.Config(epochs=60, batch=16))
    predicted = lt.predict_samples(weights, samples, test)
    true = np.array([samples[i].log_ms for i in test])
    assert lt.scores(predicted, true)["mape"] < 15
    macs_only = lt._macs_only(samples, train, test)
    assert lt.scores(predicted, true)["mape"] < lt.scores(macs_only, true)["mape"]


def with_cost_law(samples: list, ms_per_100m_macs: float, **row) -> list:
    """`samples` with `row`'s fields set and timed at `ms_per_100m_macs` per 100 M MACs + 50 µs a node."""
    for sample in samples:
        sample.row = sample.row | row
        sample.log_ms = math.log(ms_per_100m_macs * sample.row["macs"] / 1e8 + 0.05 * float(sample.count.sum()))
    return samples


def mape_on(samples: list, train: list[int], asked: list[int], **options) -> float:
    """MAPE on `asked` of a head fitted on `train` with training `options`."""
    weights = lt.fit(samples, train, lt.Config(epochs=40, batch=16, **options))
    return lt.scores(lt.predict_samples(weights, samples, asked), np.array([samples[i].log_ms for i in asked]))["mape"]


def test_one_family_of_many_near_copies_does_not_set_the_rates_a_new_family_gets():
    # 7 small families follow one cost law; one family of 90 near-copies costs 4x per MAC
    samples, _ = synthetic_samples(40)
    samples += with_cost_law(synthetic_samples(90, seed=1)[0], 4, family="crowd")
    held_out = [i for i, s in enumerate(samples) if s.row["family"] == "f6"]
    train = [i for i in range(len(samples)) if i not in held_out]
    errors = {balance: mape_on(samples, train, held_out, balance=balance) for balance in (0.0, 1.0)}
    assert errors[1.0] < errors[0.0]


def test_a_small_source_is_seen_as_often_as_its_share_of_the_largest_asks():
    samples, rows = synthetic_samples(44)
    for sample in samples[40:]:
        sample.row = sample.row | {"source": "classics"}
    seen = lt.oversampled(samples, rows, 0.5)
    # the 40-row source once each, the 4-row one round(sqrt(40 / 4)) = 3 times each
    assert [seen.count(i) for i in (0, 39, 40, 43)] == [1, 1, 3, 3] and len(seen) == 40 + 4 * 3
    assert lt.oversampled(samples, rows, 0.0) == rows


def test_a_repeated_row_keeps_its_familys_weight():
    """Oversampling repeats a small source's rows; their families are as large as before, so each
    row weighs as much as it did and is simply seen more often."""
    samples, rows = synthetic_samples(44)
    for sample in samples[40:]:
        sample.row = sample.row | {"source": "classics"}
    once = lt.family_weights(samples, rows, 0.5)
    repeated = lt.family_weights(samples, lt.oversampled(samples, rows, 1.0), 0.5)
    assert repeated == once
    family = samples[40].row["family"]
    size = sum(samples[i].row["family"] == family for i in rows)
    assert once[40] == pytest.approx(size ** -0.5)


def test_oversampling_a_small_source_fits_its_own_cost_law_better():
    # a large source follows one cost law; a small source of 6 costs 3x per MAC and is what is asked about
    samples, _ = synthetic_samples(60)
    samples += with_cost_law(synthetic_samples(8, seed=2)[0], 3, source="classics", family="hand")
    train, asked = list(range(66)), list(range(66, 68))
    errors = {power: mape_on(samples, train, asked, source_balance=power) for power in (0.0, 1.0)}
    assert errors[1.0] < errors[0.0]


def test_training_options_are_checked_for_python_callers_too():
    from narcli.errors import UsageError

    with pytest.raises(UsageError, match="huber"):
        lt.Config(huber=-1)
    with pytest.raises(UsageError, match="balance"):
        lt.Config(balance=3)
    with pytest.raises(UsageError, match="source_balance"):
        lt.Config(source_balance=-0.5)


def test_family_split_holds_out_whole_families_of_the_asked_share():
    samples, _ = synthetic_samples(70)
    train, calibration, test = lt.family_split(samples, seed=3)
    assert sorted(train + calibration + test) == list(range(70))
    families = [{samples[i].row["family"] for i in part} for part in (train, calibration, test)]
    assert not (families[0] & families[1]) and not (families[0] & families[2]) and not (families[1] & families[2])
    assert len(test) >= lt.TEST_SHARE * 70


def test_family_folds_keep_each_family_whole_and_the_folds_about_even():
    samples, _ = synthetic_samples(140)
    for i, sample in enumerate(samples):  # 14 families of 10
        sample.row = sample.row | {"family": f"g{i % 14}"}
    rows = list(range(0, 140, 1))
    folds = lt.family_folds(samples, rows, 5, seed=2)
    assert sorted(i for fold in folds for i in fold) == rows
    families = [{lt.family_of(samples[i]) for i in fold} for fold in folds]
    assert all(not (a & b) for k, a in enumerate(families) for b in families[k + 1:])
    assert max(map(len, folds)) - min(map(len, folds)) <= 10  # one family's rows at most
    assert folds == lt.family_folds(samples, rows, 5, seed=2) != lt.family_folds(samples, rows, 5, seed=3)


def test_out_of_fold_errors_come_from_fits_that_never_saw_the_family(monkeypatch):
    samples, _ = synthetic_samples(60)
    folds = lt.family_folds(samples, list(range(60)), 3, seed=0)
    fitted: list[set[str]] = []
    scored: list[set[str]] = []
    real_fit, real_predict = lt.fit, lt.predict_samples
    monkeypatch.setattr(lt, "fit", lambda s, rows, config, report=None: (
        fitted.append({lt.family_of(s[i]) for i in rows}), real_fit(s, rows, config))[1])
    monkeypatch.setattr(lt, "predict_samples", lambda w, s, rows: (
        scored.append({lt.family_of(s[i]) for i in rows}), real_predict(w, s, rows))[1])
    residuals = lt.out_of_fold_residuals(samples, folds, lt.Config(epochs=1, hidden=8, embed=4))
    assert len(residuals) == 60 and np.isfinite(residuals).all()
    assert len(fitted) == len(scored) == 3
    assert all(not (seen & judged) for seen, judged in zip(fitted, scored))


def test_conformal_half_width_covers_the_level():
    residuals = np.linspace(-1, 1, 101)
    half = lt.conformal_half(residuals, 0.9)
    assert 0.89 <= (np.abs(residuals) <= half).mean() <= 0.93


def test_a_head_answers_with_an_interval_around_its_value():
    head = head_for()
    value, low, high = head.predict(chain([("linear", 10**6), ("relu", 0)]))
    assert low < value < high and high / value == pytest.approx(math.exp(0.2), rel=1e-6)


def test_operations_never_measured_make_the_head_say_so():
    head = head_for()
    graph = chain([("linear", 10), ("lstm", 10**7), ("lstm", 10**7)])
    answer = head.predict(graph)
    assert isinstance(answer, str) and answer.startswith("n/a:") and "lstm" in answer


def test_a_model_far_bigger_than_the_reference_set_is_out_of_range():
    head = head_for(ranges={"macs": [1e3, 1e6], "params": [0.0, 1e8], "nodes": [2, 500]})
    answer = head.predict(chain([("linear", 10**9)]))
    assert isinstance(answer, str) and answer.startswith("out of range:") and "MACs" in answer and "above the largest" in answer


def test_saved_heads_load_and_a_damaged_one_is_refused(tmp_path):
    head = head_for()
    lat.save_head(head, tmp_path)
    loaded = lat.load_head(tmp_path)
    graph = chain([("linear", 10**6), ("relu", 0)])
    assert loaded.predict(graph) == pytest.approx(head.predict(graph))
    assert lat.load_head(tmp_path / "nowhere") is None
    (tmp_path / lat.FILES[1]).write_bytes(b"garbage")
    lat._load.cache_clear()
    with pytest.raises(NarError, match="latency head .* unusable"):
        lat.load_head(tmp_path)


def test_a_head_saved_by_an_older_nar_says_so(tmp_path):
    import json

    lat.save_head(head_for(), tmp_path)
    card = json.loads((tmp_path / lat.FILES[0]).read_text())
    (tmp_path / lat.FILES[0]).write_text(json.dumps(card | {"version": lat.CARD_VERSION - 1}))
    lat._load.cache_clear()
    with pytest.raises(NarError, match=f"trained by another version of nar: card version {lat.CARD_VERSION - 1}.*"
                                       "retrain with `nar train latency`"):
        lat.load_head(tmp_path)


def test_the_bundled_head_answers_for_the_zoo_kinds_beyond_timm():
    from narcli.predict.bundle import load_bundle, predict_graph
    from narcli.zoo.store import Zoo

    bundle = load_bundle()
    assert bundle.latency is not None, "the reference latency head ships with nar"
    answered = {}
    with Zoo() as zoo:
        for name in ("resnet50", "smp/unet_resnet34", "monai/basic_unet_2d", "classics/lstm_forecaster_base",
                     "pyg/gcn_small_graph"):
            model = zoo.resolve(name)
            rows = predict_graph(zoo.graph(model), bundle, macs=model.macs, params=model.params)
            (row,) = [r for r in rows if r.head == lat.HEAD_NAME]
            answered[name] = row
    assert all(r.status == "ok" and r.low < r.value < r.high for r in answered.values()), \
        {k: r.reason for k, r in answered.items()}
    assert answered["resnet50"].value > answered["pyg/gcn_small_graph"].value * 10


def test_kindred_operations_share_rates_and_a_slice_moves_no_memory():
    graph = chain([("linear", 10**6), ("gru", 10**6), ("clamp", 0), ("slice", 0)])  # nodes 1-4
    ops, _, work = lat.node_features(graph)
    from narcli.encode.features import op_index

    assert ops[3] == op_index("relu")  # a clamp costs as a relu
    assert lat.cost_op("gather") == "index_select"  # rows gathered at scale, as PyG's message passing does
    assert work[4, 1] == 0 and work[3, 1] > 0  # the slice is a view; the clamp reads and writes
    head = head_for(seen=("input", "output", "linear", "gru", "relu", "slice"))
    assert head.why_not(graph, lat.size_figures(graph)) == ("", "")  # the clamp counts as seen through its kin
    kinds = latency_network.op_kinds(max(op_index("gru"), op_index("lstm"), op_index("conv2d")) + 1)
    assert kinds[op_index("gru")] == kinds[op_index("lstm")] != kinds[op_index("conv2d")]  # a GRU starts from its kind


def test_a_slice_costs_one_dispatch_whatever_the_network_says():
    """A TCN's causal-padding slices were costed at 120 µs each by rates learnt from a few slices."""
    weights = lt.fit(*synthetic_samples(8), lt.Config(epochs=1, hidden=8, embed=4))
    graph = chain([("linear", 10**6), ("slice", 0), ("relu", 0), ("slice", 0)])
    ops, numeric, work = lat.node_features(graph)
    terms = lat.node_cost_terms(weights, ops, numeric, work)
    assert terms[2].tolist() == terms[4].tolist() == pytest.approx([0.0, 0.0, lat.SLICE_CALL_MS])
    assert terms[3, 2] != pytest.approx(lat.SLICE_CALL_MS)  # a relu keeps its learnt call cost
    big = {**weights, "base": weights["base"] + 5.0}  # every learnt rate e^5 times larger
    assert lat.node_cost_terms(big, ops, numeric, work)[2, 2] == pytest.approx(lat.SLICE_CALL_MS)


def test_training_costs_a_slice_as_the_numpy_head_does():
    import torch
    from narcli.encode.features import OP_INDEX

    samples, rows = synthetic_samples(6)
    graph = chain([("linear", 10**6), ("slice", 0), ("relu", 0), ("slice", 0)])
    o, n, w, c = lt._deduplicated(*lat.node_features(graph))
    samples.append(lt.Sample(dict(samples[0].row, model="sliced"), o, n, w, c, lat.graph_features(graph),
                             {x.op for x in graph.nodes}, 0.0))
    config = lt.Config(epochs=2, hidden=8, embed=4)
    weights = lt.fit(samples, rows, config)
    numpy_log = lt.predict_samples(weights, samples, [len(samples) - 1])[0]
    torch.manual_seed(config.seed)
    net = latency_network.network(len(OP_INDEX), config)
    state = net.state_dict()
    for name in ("overhead", "base", "global_mean", "global_std"):  # the numpy head's weights, back in torch
        state[name] = torch.from_numpy(weights[name])
    for i in range(3):
        state[f"layers.{i}.weight"], state[f"layers.{i}.bias"] = torch.from_numpy(weights[f"w{i}"]), torch.from_numpy(weights[f"b{i}"])
    for i in range(2):
        state[f"whole.{i}.weight"], state[f"whole.{i}.bias"] = torch.from_numpy(weights[f"g{i}"]), torch.from_numpy(weights[f"gb{i}"])
    state["embed.weight"] = torch.from_numpy(weights["embed"])
    state["kind_embed.weight"] = torch.zeros_like(state["kind_embed.weight"])  # the exported embedding holds both
    net.load_state_dict(state)
    ops, numeric, work, count, owner = lt._batch(samples, [len(samples) - 1])
    with torch.no_grad():
        torch_log = float(net(ops, numeric, work, count, owner, 1, torch.from_numpy(samples[-1].figures[None]).float())[0])
    assert torch_log == pytest.approx(numpy_log, abs=1e-4)


def test_an_interpolation_traced_as_unknown_is_costed_as_one():
    from narcli.encode.features import op_index

    assert lat.cost_op("unknown:interpolate") == "upsample_linear"
    assert lat.cost_op("unknown:argsort") == "sort"  # Reformer's hashed attention sorts its buckets
    assert lat.cost_op("unknown:fft_fftn") == "unknown:fft_fftn"  # the rest stay unknown
    graph = chain([("unknown:interpolate", 0), ("unknown:addcmul", 0)])
    ops, _, _ = lat.node_features(graph)
    assert ops[1] == op_index("upsample_linear") and ops[2] == op_index("add")


def test_a_reparametrised_weight_costs_its_layer_what_computing_it_moves():
    plain = chain([("linear", 10**6)])
    standardised = chain([("linear", 10**6)])
    standardised.nodes[1].attrs["reparam_elements"] = 5000  # an NFNet convolution's weight, standardised at each call
    _, _, before = lat.node_features(plain)
    _, _, after = lat.node_features(standardised)
    assert after[1, 1] - before[1, 1] == 5000 and after[1, 0] == before[1, 0]


def test_the_offset_decay_pulls_each_operation_towards_its_kind():
    # relu and its kindred sigmoid are both activations: a strong pull leaves their embeddings close
    samples, rows = synthetic_samples(8)
    from narcli.encode.features import op_index

    def gap(decay: float) -> float:
        weights = lt.fit(samples, rows, lt.Config(epochs=20, batch=4, hidden=8, embed=4, lr=3e-2, offset_decay=decay))
        return float(np.linalg.norm(weights["embed"][op_index("relu")] - weights["embed"][op_index("sigmoid")]))

    assert gap(10.0) < 0.5 * gap(0.0)
    with pytest.raises(Exception, match="offset_decay"):
        lt.Config(offset_decay=-1)


def test_a_folded_permute_costs_its_reader_a_strided_copy():
    # SegFormer's decoder: a linear layer's (B, HW, C) output read as (B, C, H, W) by an interpolation
    nodes = [Node("input", [1, 1024, 64]), Node("linear", [1, 1024, 256], macs=64 * 256 * 1024),
             Node("upsample_linear", [1, 256, 32, 32]), Node("output", [1, 256, 32, 32])]
    permuted = ArchGraph(nodes, [(0, 1), (1, 2), (2, 3)])
    straight = ArchGraph([Node("input", [1, 1024, 64]), Node("linear", [1, 1024, 256], macs=64 * 256 * 1024),
                          Node("upsample_linear", [1, 1024, 256]), Node("output", [1, 1024, 256])], [(0, 1), (1, 2), (2, 3)])
    _, _, moved = lat.node_features(permuted)
    _, _, kept = lat.node_features(straight)
    linear_out = 1024 * 256
    assert moved[2, 1] - kept[2, 1] == pytest.approx(2 * linear_out)  # read + write of the copy
    # a stride-2 convolution doubling the channels of a square map is not a permute
    assert not lat._relaid([1, 64, 128, 128], [1, 128, 64, 64])
    assert lat._relaid([1, 96, 56, 56], [1, 56, 56, 96]) and lat._relaid([1, 256, 32, 32], [1, 1024, 256])
    assert not lat._relaid([1, 64], [1, 64, 1]) and not lat._relaid([1, "s", 8], [1, 8, 2, 2])


def test_the_split_prediction_sums_to_the_prediction():
    head = head_for()
    graph = chain([("linear", 4_000_000), ("relu", 0), ("linear", 10_000), ("relu", 0)])
    value, _, _ = head.predict(graph)
    parts = head.parts(graph)
    split = len(latency_parts.PARTS) + len(latency_parts.THREAD_PARTS)
    assert parts.shape == (split + 1,) and (parts >= 0).all()
    work, threads = parts[:len(latency_parts.PARTS)], parts[len(latency_parts.PARTS):split]
    assert work.sum() == pytest.approx(value, rel=1e-6) and threads.sum() == pytest.approx(value, rel=1e-6)
    assert work[1] > 0 and work[0] == 0  # the 4 M-MAC product is a matrix product; the 10 k one is other work
    # the last column counts the four operation calls (not the input or output), at DISPATCH_MS each,
    # each weighted by its output's size: 64 numbers against DISPATCH_ELEMENTS
    weight = 64 / (64 + latency_parts.DISPATCH_ELEMENTS)
    assert parts[split] == pytest.approx(4 * weight * latency_parts.DISPATCH_MS)
    wide = head.parts(chain([("linear", 4_000_000), ("relu", 0)], width=1_000_000))
    assert wide[split] == pytest.approx(2 * latency_parts.DISPATCH_MS, rel=0.01)  # large outputs count whole
    assert head.parts(chain([("lstm", 10)])) is None  # not answered: never measured


def test_convolutions_pytorch_runs_as_a_matrix_product_count_as_matrix_products():
    def conv(kernel, stride=1, groups=1, channels=64, side=32, op="conv2d"):
        return Node(op, [1, channels, side, side], macs=10**8, attrs={
            "kernel": [kernel, kernel], "stride": [stride, stride], "dilation": [1, 1], "groups": groups})

    big_input = 64 * 32 * 32  # above GEMM_INPUT_ELEMENTS: oneDNN
    assert latency_parts.convolution_runs_as_gemm(conv(1), big_input)  # pointwise: im2col + GEMM at one thread
    assert not latency_parts.convolution_runs_as_gemm(conv(1, stride=2), big_input)
    assert not latency_parts.convolution_runs_as_gemm(conv(3), big_input)
    assert latency_parts.convolution_runs_as_gemm(conv(3, channels=256, side=8), 256 * 8 * 8)  # a CIFAR net's last stage
    assert not latency_parts.convolution_runs_as_gemm(conv(5, channels=256, side=8), 256 * 8 * 8)  # kernel sides above 3
    assert not latency_parts.convolution_runs_as_gemm(conv(3, groups=256, channels=256, side=8), 256 * 8 * 8)
    assert not latency_parts.convolution_runs_as_gemm(conv(3, op="conv_transpose2d"), 100)
    head = head_for(seen=("input", "output", "conv2d"))
    graph = ArchGraph([Node("input", [1, 64, 32, 32]), conv(1), Node("output", [1, 64, 32, 32])], [(0, 1), (1, 2)])
    work = head.parts(graph)[:len(latency_parts.PARTS)]
    assert work[0] == 0 and work[1] > 0  # the pointwise convolution is costed as a matrix product


def test_pointwise_convolutions_that_go_to_onednn_over_one_thread_have_a_thread_part_of_their_own():
    def conv(kernel, groups=1, channels=64, side=32):
        return Node("conv2d", [1, channels, side, side], macs=10**8, attrs={
            "kernel": [kernel, kernel], "stride": [1, 1], "dilation": [1, 1], "groups": groups})

    leaves = latency_parts.convolution_leaves_gemm_over_one_thread
    assert leaves(conv(1), 64 * 32 * 32)  # above GEMM_INPUT_ELEMENTS: oneDNN once PyTorch has two threads
    assert not leaves(conv(1, channels=96, side=10), 96 * 10 * 10)  # small: the matrix product at any count
    assert leaves(conv(1, groups=4, channels=96, side=10), 96 * 10 * 10)  # grouped: oneDNN over one thread
    assert not leaves(conv(3), 64 * 32 * 32)  # oneDNN at one thread already
    head = head_for(seen=("input", "output", "conv2d"))
    graph = ArchGraph([Node("input", [1, 64, 32, 32]), conv(1), conv(3), Node("output", [1, 64, 32, 32])],
                      [(0, 1), (1, 2), (2, 3)])
    parts = head.parts(graph)
    threads = parts[len(latency_parts.PARTS):-1]
    alone = head.parts(ArchGraph([Node("input", [1, 64, 32, 32]), conv(1), Node("output", [1, 64, 32, 32])],
                                 [(0, 1), (1, 2)]))
    assert threads[-1] > 0 and threads.sum() == pytest.approx(parts[:len(latency_parts.PARTS)].sum(), rel=1e-6)
    assert threads[-1] < alone[len(latency_parts.PARTS):-1].sum()  # only the pointwise convolution's compute


def test_a_small_operation_spreads_less_of_its_compute_over_threads():
    big, small = chain([("linear", 400_000_000)]), chain([("linear", 40_000)])
    assert latency_parts.parallel_share(big)[1] > 0.98 and latency_parts.parallel_share(small)[1] < 0.02
    assert latency_parts.parallel_share(big)[0] == 0  # the input does no arithmetic
    conv = ArchGraph([Node("input", [1, 64, 128]), Node("conv1d", [1, 64, 384], macs=64 * 1_000_000)], [(0, 1)])
    assert latency_parts.parallel_share(conv)[1] > 0.9


def test_a_recurrence_spreads_over_threads_as_pytorch_runs_it():
    # 2 layers, 128 inputs, 192 hidden, 64 steps, as `recurrent_attrs` records them
    def whole(op: str, hidden: int = 192, **attrs) -> ArchGraph:
        matrix = 4 * hidden * (128 + hidden) + 4 * hidden * (2 * hidden)
        sizes = {"hidden": hidden, "input_size": 128, "matrix_size": matrix} | attrs
        return ArchGraph([Node("input", [1, 64, 128]), Node(op, [1, 64, hidden], macs=64 * matrix, attrs=sizes)],
                         [(0, 1)])

    # a GRU or plain RNN is PyTorch's own loop of small calls: none of it spreads, whatever its size
    assert latency_parts.parallel_share(whole("gru"))[1] == 0 == latency_parts.parallel_share(whole("gru", 1024))[1]
    assert latency_parts.parallel_share(whole("rnn"))[1] == 0
    # an LSTM is oneDNN's kernel: one layer's step against ONEDNN_STEP_MACS, so a wider one spreads more
    narrow, wide = latency_parts.parallel_share(whole("lstm", 64))[1], latency_parts.parallel_share(whole("lstm", 1024))[1]
    step = 4 * 1024 * (128 + 1024)  # about one layer's step (the second reads 1024 inputs: the layers are estimated)
    assert narrow < 0.2 and wide > 0.9 and wide == pytest.approx(step / (step + latency_parts.ONEDNN_STEP_MACS), abs=0.05)
    # traced without its sizes: one step's MACs against PARALLEL_MACS, as before
    bare = ArchGraph([Node("input", [1, 64, 128]), Node("lstm", [1, 64, 384], macs=64 * 1_000_000)], [(0, 1)])
    assert latency_parts.parallel_share(bare)[1] == pytest.approx(1e6 / (1e6 + latency_parts.PARALLEL_MACS))


def test_a_recurrence_that_does_not_spread_is_a_thread_part_of_its_own():
    from narcli.predict.bundle import load_bundle

    head = load_bundle().latency  # the bundled head: it was trained on recurrent models
    matrix = 3 * 192 * (128 + 192)
    graph = ArchGraph([Node("input", [1, 64, 128]), Node("gru", [1, 64, 192], macs=64 * matrix,
                                                          attrs={"hidden": 192, "input_size": 128, "matrix_size": matrix}),
                       Node("linear", [1, 64, 10], macs=64 * 1920, attrs={"in_features": 192, "out_features": 10}),
                       Node("output", [1, 64, 10])], [(0, 1), (1, 2), (2, 3)])
    parts = head.parts(graph, macs=64 * (matrix + 1920), params=matrix + 1930)
    threads = dict(zip(latency_parts.THREAD_PARTS, parts[len(latency_parts.PARTS):-1]))
    assert threads["recurrent steps"] > 0 and threads["recurrent steps"] > threads["serial"]
    # a whole LSTM is oneDNN's kernel: what of it does not spread is serial, not PyTorch's own steps
    lstm = ArchGraph([Node(n.op if n.op != "gru" else "lstm", n.shape, macs=n.macs, attrs=n.attrs) for n in graph.nodes],
                     graph.edges)
    split = dict(zip(latency_parts.THREAD_PARTS, head.parts(lstm, macs=64 * (matrix + 1920),
                                                            params=matrix + 1930)[len(latency_parts.PARTS):-1]))
    assert split["recurrent steps"] == 0 and split["serial"] > 0
    cell = Node("lstm", [1, 192], macs=matrix, attrs={"hidden": 192, "input_size": 128, "matrix_size": matrix})
    assert latency_parts.recurrent_steps(cell)  # a cell a Python loop calls is one of PyTorch's own steps


def test_a_gpu_head_names_itself_and_its_column(tmp_path):
    head = head_for()
    head.device = {"kind": "cuda", "name": "Test GPU", "threads": 0}
    assert head.name == lat.GPU_HEAD_NAME and head.column == lat.GPU_COLUMN and "Test GPU" in head.title
    lat.save_head(head, tmp_path)
    loaded = lat.load_head(tmp_path)
    assert loaded.gpu and loaded.column == "reference-cuda"


def test_the_shipped_head_fits_every_family_and_keeps_the_held_out_fit_beside_it(tmp_path, monkeypatch):
    samples, _ = synthetic_samples(120)
    _, calibration, _ = lt.family_split(samples, seed=0)
    for i in calibration:  # an operation only the calibration families hold
        samples[i].op_names = samples[i].op_names | {"gelu"}
    monkeypatch.setattr(lt, "load_samples", lambda folder, report: (samples, {"device": {"kind": "cpu"}}))
    card = lt.train(out=tmp_path, config=lt.Config(epochs=3, batch=16, hidden=8, embed=4))
    shipped, held_out = lat.load_head(tmp_path), lat.load_head(tmp_path / lat.HELD_OUT_FOLDER)
    assert card == tmp_path / "latency.json"
    families = sorted({lt.family_of(samples[i]) for i in calibration})
    assert held_out.metrics["held_out_families"] == shipped.metrics["held_out_families"] == families
    assert "gelu" in shipped.seen_ops and "gelu" not in held_out.seen_ops
    assert shipped.half == held_out.half  # every family's out-of-fold error sets both intervals
    assert shipped.trained_on.startswith(f"{len(samples)} reference-CPU measurements of 7 families")
    assert held_out.trained_on.startswith(f"{len(samples) - len(calibration)} reference-CPU measurements")
    out_of_fold = shipped.metrics["out_of_fold"]
    assert len(calibration) < out_of_fold["models"] <= len(samples)
    assert f"interval from the errors of {out_of_fold['models']} models" in shipped.trained_on
    assert 90 <= out_of_fold["coverage90"] <= 100
    assert shipped.fingerprint != held_out.fingerprint


def test_a_retrained_head_keeps_the_families_held_out_before_unless_resplit(tmp_path, monkeypatch):
    """A family more or less in the reference set redraws a fresh split wholesale: calibration runs
    measured on the old held-out families would then be scored by a head that fitted them."""
    samples, _ = synthetic_samples(120)
    monkeypatch.setattr(lt, "load_samples", lambda folder, report: (samples, {"device": {"kind": "cpu"}}))
    config = lt.Config(epochs=2, batch=16, hidden=8, embed=4)
    lt.train(out=tmp_path, config=config)
    first = lat.load_head(tmp_path / lat.HELD_OUT_FOLDER).metrics["held_out_families"]
    moved = [s for s in samples if lt.family_of(s) != "f3"]  # the reference set lost a family
    monkeypatch.setattr(lt, "load_samples", lambda folder, report: (moved, {"device": {"kind": "cpu"}}))
    lines: list[str] = []
    lt.train(out=tmp_path, config=config, report=lines.append)
    again = lat.load_head(tmp_path / lat.HELD_OUT_FOLDER).metrics["held_out_families"]
    assert again == first  # f3 has no rows today; if it comes back, it comes back held out
    assert any(line.startswith(f"keeping the {len(first)} families held out") for line in lines)
    fresh = lt.family_split(moved, seed=5)[1]
    lt.train(out=tmp_path, config=config, seed=5, resplit=True)
    assert lat.load_head(tmp_path / lat.HELD_OUT_FOLDER).metrics["held_out_families"] == \
        sorted({lt.family_of(moved[i]) for i in fresh})


def test_a_measured_model_traced_again_since_keeps_its_measurement_at_the_same_sizes(tmp_path):
    """A tracer change renames a graph; the model measured is the same, so its time still counts.
    Rebuilt at other sizes (another input, another config), it does not."""
    import csv
    import json

    from narcli.zoo.store import Zoo, bundled_zoo_path

    with Zoo([bundled_zoo_path()]) as zoo:
        models = [zoo.resolve(name) for name in ("classics/lenet5_relu_maxpool", "classics/mlp_mnist_1x256",
                                                  "classics/mlp_mnist_2x512")]
    rows = [[models[0].graph_hash, models[0].id, models[0].macs, models[0].params],  # as it is
            ["0" * 32, models[1].id, models[1].macs, models[1].params],  # its graph renamed since
            ["f" * 32, models[2].id, models[2].macs * 2, models[2].params]]  # measured at another size
    with open(tmp_path / lat.CSV_NAME, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(lat.COLUMNS)
        for graph_hash, model, macs, params in rows:
            writer.writerow([graph_hash, model, "classics", "f", "mlp", params, macs, 1.5, 0.01, 10])
    (tmp_path / lat.CARD_NAME).write_text(json.dumps({"device": {"kind": "cpu"}}))
    lines: list[str] = []
    samples, _ = lt.load_samples(tmp_path, lines.append)
    assert [s.row["model"] for s in samples] == [models[0].id, models[1].id]
    assert lines[-1].endswith("(1 traced again since they were measured)")
    assert lt.retraced_alike(models[1], {"macs": models[1].macs, "params": models[1].params})
    assert not lt.retraced_alike(models[1], {"macs": models[1].macs, "params": models[1].params + 1})


def test_a_reference_set_with_none_of_the_held_out_families_draws_a_fresh_split(tmp_path, monkeypatch):
    samples, _ = synthetic_samples(120)
    monkeypatch.setattr(lt, "load_samples", lambda folder, report: (samples, {"device": {"kind": "cpu"}}))
    (tmp_path / lat.HELD_OUT_FOLDER).mkdir()
    (tmp_path / lat.HELD_OUT_FOLDER / "latency.json").write_text('{"metrics": {"held_out_families": ["gru"]}}')
    lt.train(out=tmp_path, config=lt.Config(epochs=2, batch=16, hidden=8, embed=4))
    fresh = lt.family_split(samples, seed=0)[1]
    assert lat.load_head(tmp_path / lat.HELD_OUT_FOLDER).metrics["held_out_families"] == \
        sorted({lt.family_of(samples[i]) for i in fresh})


def test_a_previous_held_out_card_that_cannot_be_read_draws_a_fresh_split(tmp_path):
    assert lt.previous_held_out_families(tmp_path) == set()
    (tmp_path / "latency.json").write_text("{not json")
    assert lt.previous_held_out_families(tmp_path) == set()
    (tmp_path / "latency.json").write_text('{"metrics": {"held_out_families": "gru"}}')
    assert lt.previous_held_out_families(tmp_path) == set()
    (tmp_path / "latency.json").write_text('{"metrics": {"held_out_families": ["gru", 3]}}')
    assert lt.previous_held_out_families(tmp_path) == {"gru"}


def test_the_bundled_head_keeps_its_held_out_fit_for_nar_eval_calibration():
    from narcli.bench.calibration_eval import held_out_head, unfitted_families
    from narcli.predict.bundle import DATA_DIR

    shipped, held_out = lat.load_head(DATA_DIR), held_out_head()
    assert held_out is not None and held_out.fingerprint != shipped.fingerprint
    assert unfitted_families() == set(shipped.metrics["held_out_families"])
    assert len(unfitted_families()) > 10
    fitted = int(held_out.trained_on.split()[0].replace(",", ""))
    assert fitted < int(shipped.trained_on.split()[0].replace(",", ""))


def test_dispatch_calls_weigh_each_call_by_its_output_size():
    graph = chain([("linear", 10), ("relu", 0)], width=4096)  # two calls of exactly DISPATCH_ELEMENTS numbers
    assert latency_parts.dispatch_calls(graph, 4096) == pytest.approx(1.0)
    assert latency_parts.dispatch_calls(graph, 0) == 2.0  # counted whole, as before 2026-12-08
    graph.meta["structure"] = {"nodes": [{"op": "add", "shape": [1, 12288]}, {"op": "output", "shape": [1, 12288]}]}
    assert latency_parts.dispatch_calls(graph, 4096) == pytest.approx(1.75)  # folded-out work counts; outputs do not
    tiny, large = chain([("relu", 0)], width=16), chain([("relu", 0)], width=10_000_000)
    assert latency_parts.dispatch_calls(tiny) < 0.01 and latency_parts.dispatch_calls(large) > 0.99
