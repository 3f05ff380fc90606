"""A graph network's edge-index bookkeeping is not architecture (`graph/structure_idioms.py`)."""

import json

import pytest

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.idioms import normalise_idioms
from narcli.graph.structure_idioms import as_run, fold_graph_structure

GCN_LAYERS = '''
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(1433, 16), GCNConv(16, 7)
'''

TAKES_THE_GRAPH = GCN_LAYERS + '''
    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)
'''

BUILDS_A_RING = GCN_LAYERS + '''
    def forward(self, x):
        n = x.size(0)
        src = torch.arange(n, device=x.device)
        edge_index = torch.stack([torch.cat([src, (src + 1) % n]), torch.cat([(src + 1) % n, src])])
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)
'''


def scan(cli, write, name: str, source: str) -> dict:
    result = cli("scan", write(name, source), "--json", "--graph")
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.stdout)["models"]
    return record


def test_a_gcn_that_builds_its_graph_inside_is_the_gcn_that_takes_it(cli, write):
    # the breadth set's GCNs build a ring inside forward; the zoo's take edge_index: they were
    # 0.54 apart (the normalisation on the index traced as 24 nodes on one side, constants on the other)
    pytest.importorskip("torch_geometric")
    taking = scan(cli, write, "takes.py", TAKES_THE_GRAPH)
    ring = scan(cli, write, "ring.py", BUILDS_A_RING)
    assert taking["graph_hash"] == ring["graph_hash"]
    ops = [n["op"] for n in taking["graph"]["nodes"]]
    assert ops.count("input") == 1 and "pow" not in ops and "masked_fill" not in ops
    assert ops.count("linear") == 2 and ops.count("scatter") == 2 and ops.count("mul") == 2
    # the features keep a graph's worth of nodes though the model takes no edges
    assert [i["shape"] for i in ring["inputs"]] == [[200, 1433]]
    assert "graph built inside forward" in ring["assumed"]
    assert ring["macs"] > 200 * 1433 * 16


def _graph(dtype: str, reader_params: int) -> ArchGraph:
    """features -> linear -> gather(index) -> mul(weight from the index) -> scatter(index) -> output,
    with the index's degree and weight computed from an integer input."""
    nodes = [Node("input", [50, 800]), Node("input", [2, 120]), Node("split", [120]),
             Node("scatter", [50], macs=120), Node("pow", [50]), Node("gather", [120]),
             Node("linear", [50, 4], params=3200, macs=160000), Node("index_select", [120, 4]), Node("mul", [120, 4]),
             Node("scatter", [50, 4]), Node("output", [50, 4])]
    edges = [(0, 6), (1, 2), (2, 3), (3, 4), (4, 5), (2, 5), (6, 7), (2, 7), (7, 8), (5, 8), (8, 9), (2, 9),
             (9, 10)]
    if reader_params:  # the index also read alone by a layer with weights: token ids, not a graph
        nodes.insert(10, Node("embedding", [120, 4], params=reader_params))
        edges = [(s, d + (d >= 10)) for s, d in edges] + [(1, 10), (10, 11)]
    meta = {"inputs": [{"shape": [50, 800], "dtype": "float32"}, {"shape": [2, 120], "dtype": dtype}]}
    return ArchGraph(nodes, edges, meta).canonicalize()


def test_the_work_on_an_integer_index_alone_folds_and_its_macs_stay_counted():
    graph = _graph("int64", 0)
    folded = fold_graph_structure(graph)
    assert [n.op for n in folded.nodes] == ["input", "linear", "index_select", "mul", "scatter", "output"]
    assert folded.params == graph.params and folded.macs == graph.macs
    assert folded.meta["constant_macs"] == 120
    assert fold_graph_structure(folded) is folded  # a fixed point, as stored graphs need
    assert normalise_idioms(graph).content_hash() == normalise_idioms(folded).content_hash()


def test_what_runs_comes_back_for_the_latency_head():
    # the index's bookkeeping costs time: the latency head is given the graph as it runs
    graph = _graph("int64", 0)
    folded = fold_graph_structure(graph)
    assert as_run(graph) is graph
    run = as_run(folded)
    assert run.content_hash() == graph.content_hash() and run.macs == graph.macs
    assert "structure" not in run.meta and "constant_macs" not in run.meta
    assert all("structure_inputs" not in n.attrs for n in run.nodes)


def test_a_stored_graph_network_costs_what_it_did_before_the_fold():
    from narcli.predict.bundle import DATA_DIR
    from narcli.predict.latency import load_head

    head = load_head(DATA_DIR)
    graph = _graph("int64", 0)
    before = head.predict(graph)
    assert isinstance(before, tuple), before  # a figure, not a reason there is none
    assert head.predict(fold_graph_structure(graph)) == before
    assert (head.parts(fold_graph_structure(graph)) == head.parts(graph)).all()


@pytest.mark.parametrize("dtype, reader_params", [("float32", 0), ("int64", 40)])
def test_a_float_input_or_token_ids_an_embedding_reads_stay(dtype, reader_params):
    graph = _graph(dtype, reader_params)
    assert fold_graph_structure(graph) is graph


def test_a_graph_without_declared_inputs_is_left_alone():
    graph = _graph("int64", 0)
    graph.meta.pop("inputs")
    assert fold_graph_structure(graph) is graph


def test_a_node_that_reads_only_two_indices_keeps_them_both():
    # judged one input at a time, `batch[edge_index[0]]`-like work passes for each: folding both
    # would leave its reader with no input
    nodes = [Node("input", [50, 800]), Node("input", [2, 120]), Node("input", [50]),
             Node("index_select", [120]), Node("linear", [50, 4], params=3200, macs=160000),
             Node("scatter", [50, 4]), Node("output", [50, 4])]
    edges = [(1, 3), (2, 3), (0, 4), (4, 5), (3, 5), (5, 6)]
    meta = {"inputs": [{"shape": [50, 800], "dtype": "float32"}, {"shape": [2, 120], "dtype": "int64"},
                       {"shape": [50], "dtype": "int64"}]}
    graph = ArchGraph(nodes, edges, meta).canonicalize()
    assert fold_graph_structure(graph) is graph
