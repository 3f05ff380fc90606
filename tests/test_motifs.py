"""Motif sampling and the macro graph on hand-made graphs, and `nar motifs`."""

import json

import pytest

from narcli.encode.motifs import node_labels, sample_motifs
from narcli.graph.arch_graph import ArchGraph, Node


def chain_graph(ops_and_skips):
    """A graph from a list of (op, extra parent offset or None): each node follows the previous one."""
    nodes, edges = [], []
    for i, (op, skip) in enumerate(ops_and_skips):
        nodes.append(Node(op))
        if i:
            edges.append((i - 1, i))
        if skip is not None:
            edges.append((i - skip, i))
    return ArchGraph(nodes, edges)


BLOCK = [("conv2d", None), ("batch_norm", None), ("relu", None), ("conv2d", None), ("batch_norm", None),
         ("add", 5), ("relu", None)]


def residual_stack(blocks):
    return chain_graph([("input", None), ("conv2d", None), ("relu", None)] + BLOCK * blocks
                       + [("global_avg_pool", None), ("linear", None), ("output", None)])


def test_a_stack_of_identical_blocks_is_one_motif_type_repeated():
    graph = residual_stack(6)
    motifs = sample_motifs(graph)
    counts = motifs.types()
    block_type, count = counts.most_common(1)[0]
    assert count == 6
    sizes = {len(m.nodes) for m in motifs.instances if m.type == block_type}
    assert sizes == {len(BLOCK)}


def test_instances_cover_the_graph_once_and_respect_max_size():
    graph = residual_stack(5)
    motifs = sample_motifs(graph, max_size=4)
    covered = sorted(i for m in motifs.instances for i in m.nodes)
    assert covered == list(range(graph.num_nodes))
    assert max(len(m.nodes) for m in motifs.instances) <= 4
    assert all(motifs.node_instance[i] == k for k, m in enumerate(motifs.instances) for i in m.nodes)


def test_macro_graph_joins_instances_that_share_an_edge():
    graph = residual_stack(3)
    motifs = sample_motifs(graph)
    for a, b in motifs.macro_edges:
        assert a < b
        assert any(motifs.node_instance[s] in (a, b) and motifs.node_instance[d] in (a, b)
                   for s, d in graph.edges)
    # consecutive instances along the chain are joined: the macro graph is connected
    seen, frontier = {0}, [0]
    neighbours = {}
    for a, b in motifs.macro_edges:
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
    while frontier:
        for n in neighbours.get(frontier.pop(), []):
            if n not in seen:
                seen.add(n)
                frontier.append(n)
    assert len(seen) == len(motifs.instances)


def test_paper_toy_example_two_repeated_segments():
    """Figure 2 of the paper, in spirit: a sequence A B C A B C D with a branch, s = 1."""
    graph = chain_graph([("conv2d", None), ("relu", None), ("max_pool2d", None),
                         ("conv2d", None), ("relu", None), ("max_pool2d", None),
                         ("linear", None)])
    motifs = sample_motifs(graph, steps=0)
    repeated = [t for t, n in motifs.types().items() if n == 2]
    assert len(repeated) == 1
    assert [len(m.nodes) for m in motifs.instances if m.type == repeated[0]] == [3, 3]


def test_neighbour_encoding_tells_apart_nodes_with_different_neighbours():
    graph = chain_graph([("input", None), ("relu", None), ("relu", None), ("output", None)])
    assert len(set(node_labels(graph, steps=0)[1:3])) == 1
    assert len(set(node_labels(graph, steps=1)[1:3])) == 2


def test_degenerate_graphs():
    assert sample_motifs(ArchGraph([], [])).instances == []
    single = sample_motifs(ArchGraph([Node("linear")], []))
    assert [m.nodes for m in single.instances] == [(0,)] and single.macro_edges == []
    with pytest.raises(ValueError):
        sample_motifs(residual_stack(1), max_size=0)


def test_nar_motifs_on_a_model_file(cli, write):
    path = write("net.py", """
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 8)
            def forward(self, x):
                return x + self.fc2(torch.relu(self.fc1(x)))

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.Sequential(*[Block() for _ in range(5)])
            def forward(self, x):
                return self.blocks(x)
        """)
    result = cli("motifs", path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)[0]
    top = report["motifs"][0]
    assert top["count"] == 5 and top["ops"] == {"linear": 2, "relu": 1, "add": 1}
    shown = cli("motifs", path)
    assert "×5" in shown.output and "linear×2" in shown.output


def test_nar_motifs_bad_options_and_unknown_model(cli):
    assert cli("motifs", "resnet50", "--max-size", "0").exit_code == 2
    result = cli("motifs", "no_such_model_anywhere")
    assert result.exit_code != 0 and "Traceback" not in result.output
