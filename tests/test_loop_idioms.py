"""A Python loop of parameter-free steps keeps one step (`graph/loop_idioms.py`)."""

import json

import pytest

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.idioms import normalise_idioms
from narcli.graph.loop_idioms import MIN_COPIES, REPEATS, expand_loops, fold_loops
from narcli.graph.structure_idioms import as_run

SAMPLED_POINTS = '''
import torch
from torch import nn

def farthest_points(xyz, count):
    """PointNet++'s sampling: `count` steps of subtract, square, sum, compare, pick."""
    b, n, _ = xyz.shape
    chosen = torch.zeros(b, count, dtype=torch.long)
    distance = torch.full((b, n), 1e10)
    farthest = torch.zeros(b, dtype=torch.long)
    rows = torch.arange(b)
    for i in range(count):
        chosen[:, i] = farthest
        centre = xyz[rows, farthest, :].view(b, 1, 3)
        d = torch.sum((xyz - centre) ** 2, -1)
        distance = torch.minimum(distance, d)
        farthest = torch.max(distance, -1)[1]
    return chosen

class SetNet(nn.Module):
    def __init__(self, count=COUNT):
        super().__init__()
        self.count = count
        self.mlp = nn.Sequential(nn.Conv1d(3, 64, 1), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU())
        self.head = nn.Linear(128, 10)

    def forward(self, xyz):  # (B, N, 3)
        idx = farthest_points(xyz, self.count)
        picked = torch.gather(xyz, 1, idx.unsqueeze(-1).expand(-1, -1, 3))
        return self.head(self.mlp(picked.transpose(1, 2)).max(-1)[0])
'''


def scan(cli, write, name: str, count: int) -> dict:
    result = cli("scan", write(name, SAMPLED_POINTS.replace("COUNT", str(count))), "-i", "2,256,3",
                 "--json", "--graph")
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.stdout)["models"]
    return record


def test_a_sampling_loop_keeps_one_step_whatever_its_length(cli, write):
    long, short = scan(cli, write, "long.py", 96), scan(cli, write, "short.py", 48)
    assert long["graph_hash"] == short["graph_hash"]  # how many points it samples is data, not design
    nodes = long["graph"]["nodes"]
    assert len(nodes) < 40  # unrolled, 96 steps made over 500 nodes
    def repeats(record):
        return max(n.get("attrs", {}).get(REPEATS, 0) for n in record["graph"]["nodes"])

    assert 90 < repeats(long) <= 96 and 40 < repeats(short) <= 48  # the first and last steps stay
    assert long["macs"] > short["macs"]  # the MACs are every step's
    ops = [n["op"] for n in nodes]
    assert ops.count("conv1d") == 2 and ops.count("linear") == 1


def _chain(steps: int, layer_params: int = 0) -> ArchGraph:
    """input -> conv -> `steps` × (sub, pow, compare[, a layer with weights]) -> linear -> output."""
    nodes = [Node("input", [2, 3, 64]), Node("conv1d", [2, 8, 64], params=32, macs=3072, scope="mlp")]
    edges, last = [(0, 1)], 1
    for _ in range(steps):
        step = [Node("sub", [2, 64], scope="sample"), Node("pow", [2, 64], macs=128, scope="sample"),
                Node("compare", [2, 64], scope="sample")]
        if layer_params:
            step.append(Node("linear", [2, 64], params=layer_params, macs=8192, scope="sample"))
        for node in step:
            nodes.append(node)
            edges.append((last, len(nodes) - 1))
            last = len(nodes) - 1
        edges.append((1, len(nodes) - len(step)))  # every step also reads the features
    nodes += [Node("linear", [2, 10], params=650, macs=1280, scope="head"), Node("output", [2, 10])]
    edges += [(last, len(nodes) - 2), (len(nodes) - 2, len(nodes) - 1)]
    return ArchGraph(nodes, edges, {}).canonicalize()


def test_a_long_parameter_free_loop_folds_and_keeps_its_macs():
    graph = _chain(MIN_COPIES + 8)
    folded = fold_loops(graph)
    assert folded.num_nodes < 25 and folded.macs == graph.macs and folded.params == graph.params
    repeats = [n.attrs[REPEATS] for n in folded.nodes if REPEATS in n.attrs]
    assert len(repeats) == 3 and all(MIN_COPIES + 4 <= r < MIN_COPIES + 8 for r in repeats)  # ends kept
    # the network around the loop is intact: input to output through conv, the loop, the head
    ops = [n.op for n in folded.nodes]
    assert ops[0] == "input" and ops[-1] == "output" and ops.count("conv1d") == 1 and ops.count("linear") == 1
    assert fold_loops(folded) is folded and normalise_idioms(folded).content_hash() == folded.content_hash()


def test_short_loops_and_decoders_unrolled_with_their_layers_stay_as_written():
    short = _chain(MIN_COPIES - 8)
    assert fold_loops(short) is short  # a few copies: a block repeated by hand, not a loop
    decoder = _chain(MIN_COPIES + 8, layer_params=4160)
    assert fold_loops(decoder) is decoder  # a step with its own layer: the step is the architecture


def test_the_latency_head_costs_every_step_of_a_folded_loop():
    graph = _chain(MIN_COPIES + 8)
    folded = fold_loops(graph)
    back = expand_loops(folded)
    assert back.num_nodes == graph.num_nodes and back.macs == graph.macs
    assert sorted(n.op for n in back.nodes) == sorted(n.op for n in graph.nodes)
    assert as_run(folded).num_nodes == graph.num_nodes
    assert expand_loops(graph) is graph


def test_the_latency_prediction_of_a_folded_loop_is_the_unrolled_ones():
    from narcli import DATA_DIR
    from narcli.predict.latency import load_head

    head = load_head(DATA_DIR)
    if head is None:
        pytest.skip("no bundled latency head")
    graph, folded = _chain(MIN_COPIES + 8), fold_loops(_chain(MIN_COPIES + 8))
    unrolled, rolled = head.predict(graph), head.predict(folded)
    assert not isinstance(unrolled, str) and not isinstance(rolled, str), (unrolled, rolled)
    assert abs(rolled[0] / unrolled[0] - 1) < 0.02


def test_an_exported_graph_shows_a_folded_step_with_its_count():
    from narcli.graph.dot import graph_dot

    folded = fold_loops(_chain(MIN_COPIES + 8))
    steps = [n.attrs[REPEATS] for n in folded.nodes if REPEATS in n.attrs]
    assert f"loop step ×{steps[0]}" in graph_dot(folded, "chain")
    assert "loop step" not in graph_dot(_chain(4), "chain")
