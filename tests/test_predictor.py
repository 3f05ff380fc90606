"""The predictor's building blocks (work in progress toward `nar predict`): tokens of a canonical
graph, random topological orders, the network's shapes, and a tiny training run that fits."""

import numpy as np
import pytest
from narcli.graph.synthetic import residual_stack
from narcli.predict.metrics import kendall_tau, mape, within
from narcli.predict.tokens import graph_tokens, random_topological_order


def test_tokens_follow_the_graph():
    graph = residual_stack(30)
    tokens = graph_tokens(graph)
    assert tokens.length == graph.num_nodes
    assert all(p < i for i, parents in enumerate(tokens.parents) for p in parents)
    assert sum(len(p) for p in tokens.parents) == len(graph.edges)
    assert tokens.numeric.shape == (graph.num_nodes, 8)


def _branchy():
    """input -> four parallel convolutions -> concat -> linear: many topological orders."""
    from narcli.graph.arch_graph import ArchGraph, Node

    nodes = [Node("input", [1, 3, 8, 8])] + [Node("conv2d", [1, 4, 8, 8]) for _ in range(4)] \
        + [Node("cat", [1, 16, 8, 8]), Node("linear", [1, 2]), Node("output")]
    edges = [(0, i) for i in range(1, 5)] + [(i, 5) for i in range(1, 5)] + [(5, 6), (6, 7)]
    return ArchGraph(nodes, edges)


def test_random_topological_orders_keep_every_edge_forward():
    tokens = graph_tokens(_branchy())
    rng = np.random.default_rng(0)
    orders = [random_topological_order(tokens, rng) for _ in range(5)]
    for rank in orders:
        assert sorted(rank.tolist()) == list(range(tokens.length))
        assert all(rank[p] < rank[i] for i, parents in enumerate(tokens.parents) for p in parents)
    assert len({tuple(r) for r in orders}) > 1  # parallel branches give real choices


def test_the_network_predicts_one_value_per_target_whatever_the_order():
    import torch

    from narcli.encode.features import OP_INDEX
    from narcli.predict.model import Batch, Predictor

    items = [graph_tokens(residual_stack(n)) for n in (12, 30, 45)]
    model = Predictor(len(OP_INDEX), items[0].numeric.shape[1], 3, dim=32, layers=1, heads=2).eval()
    rng = np.random.default_rng(1)
    with torch.no_grad():
        out = model(Batch(items, [np.arange(t.length) for t in items]))
        other = model(Batch(items, [random_topological_order(t, rng) for t in items]))
    assert out.shape == other.shape == (3, 3)
    assert torch.isfinite(out).all()


@pytest.mark.timeout(300)
def test_a_tiny_run_learns_a_size_dependent_target():
    from narcli.encode.features import OP_INDEX
    from narcli.predict.training import PredictorConfig, train_predictor

    sizes = list(range(12, 60, 3))
    items = [graph_tokens(residual_stack(n, channels=8 + n)) for n in sizes]
    target = np.array(sizes, dtype=np.float32)
    trained = train_predictor(items, target, PredictorConfig(dim=32, layers=1, heads=2, epochs=40, batch=8, lr=2e-3,
                                                             ema=0.9), len(OP_INDEX))
    predicted = trained.predict(items)[:, 0]
    assert trained.log[-1]["loss"] < trained.log[0]["loss"]
    assert kendall_tau(predicted, target) > 0.7


def _tau_b_by_definition(a, b) -> float:
    pairs = [(i, j) for i in range(len(a)) for j in range(i + 1, len(a))]
    c = sum(1 for i, j in pairs if (a[i] - a[j]) * (b[i] - b[j]) > 0)
    d = sum(1 for i, j in pairs if (a[i] - a[j]) * (b[i] - b[j]) < 0)
    ta = sum(1 for i, j in pairs if a[i] == a[j] and b[i] != b[j])
    tb = sum(1 for i, j in pairs if b[i] == b[j] and a[i] != a[j])
    return (c - d) / ((c + d + ta) * (c + d + tb)) ** 0.5


def test_metrics_against_known_values():
    rng = np.random.default_rng(0)
    a = np.round(rng.normal(size=120), 1)  # ties in both
    b = np.round(a + rng.normal(size=120), 1)
    assert kendall_tau(a, b) == pytest.approx(_tau_b_by_definition(a, b), abs=1e-12)
    assert kendall_tau(a, a) == pytest.approx(1.0) and kendall_tau(a, -a) == pytest.approx(-1.0)
    assert mape([110, 90], [100, 100]) == pytest.approx(10.0)
    assert within([109, 80], [100, 100]) == pytest.approx(50.0)
