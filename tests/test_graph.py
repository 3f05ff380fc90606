import json
import random

from narcli.graph.arch_graph import ArchGraph, Node


def diamond(order=(0, 1, 2, 3), width=64):
    """input -> conv -> (relu, sigmoid) -> add, listed in the given order."""
    base = [Node("input", [1, 3, 8, 8]),
            Node("conv2d", [1, width, 8, 8], {"in_channels": 3, "out_channels": width, "kernel": [3, 3]}, params=27 * width),
            Node("relu", [1, width, 8, 8]),
            Node("add", [1, width, 8, 8])]
    edges = [(0, 1), (1, 2), (1, 3), (2, 3)]
    position = {old: new for new, old in enumerate(order)}
    nodes = [None] * 4
    for old, node in enumerate(base):
        nodes[position[old]] = node
    return ArchGraph(nodes, [(position[s], position[d]) for s, d in edges], {"source": "test"})


def test_json_round_trip_is_exact():
    g = diamond().canonicalize()
    again = ArchGraph.from_json(g.to_json())
    assert again.to_json() == g.to_json()
    assert again.content_hash() == g.content_hash()


def test_json_is_deterministic_and_sorted():
    text = diamond().canonicalize().to_json()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))


def test_hash_ignores_listing_order_names_and_shapes():
    a = diamond()
    b = diamond(order=(0, 2, 1, 3))  # relu listed before conv: not topological, same graph
    b_nodes = [Node(n.op, None if n.shape is None else [2] + n.shape[1:], n.attrs, n.params, scope=f"x{i}")
               for i, n in enumerate(b.nodes)]
    b = ArchGraph(b_nodes, b.edges)
    assert a.content_hash() == b.content_hash()
    assert a.canonicalize().to_dict()["edges"] == diamond(order=(0, 2, 1, 3)).canonicalize().to_dict()["edges"]


def test_hash_sees_structure_attributes_and_edges():
    base = diamond().content_hash()
    assert diamond(width=32).content_hash() != base
    g = diamond()
    assert ArchGraph(g.nodes, g.edges[:-1]).content_hash() != base
    relabelled = [Node("sigmoid" if n.op == "relu" else n.op, n.shape, n.attrs, n.params) for n in g.nodes]
    assert ArchGraph(relabelled, g.edges).content_hash() != base


def test_hash_is_stable_under_random_permutations_of_a_larger_graph():
    rng = random.Random(0)
    nodes = [Node("input")] + [Node(rng.choice(["conv2d", "relu", "add", "linear"])) for _ in range(60)]
    edges = sorted({(rng.randrange(0, i), i) for i in range(1, 61)} | {(rng.randrange(0, i), i) for i in range(2, 61)})
    g = ArchGraph(nodes, edges)
    for _ in range(5):
        perm = list(range(61))
        rng.shuffle(perm)
        shuffled = [None] * 61
        for old, new in enumerate(perm):
            shuffled[new] = nodes[old]
        h = ArchGraph(shuffled, [(perm[s], perm[d]) for s, d in edges])
        assert h.content_hash() == g.content_hash()
        assert h.canonicalize().to_json() == g.canonicalize().to_json()


def test_metrics():
    g = diamond().canonicalize()
    assert g.num_nodes == 4
    assert g.depth == 4  # input -> conv -> relu -> add
    assert g.params == 27 * 64
    assert g.op_histogram()["conv2d"] == 1
    assert set(g.summary()) >= {"params", "macs", "depth", "nodes", "edges", "hash"}


def test_canonical_order_is_topological():
    g = diamond(order=(3, 2, 1, 0)).canonicalize()
    assert all(s < d for s, d in g.edges)
    assert g.nodes[0].op == "input"


def test_from_dict_rejects_edges_outside_the_graph():
    import pytest

    with pytest.raises(ValueError):
        ArchGraph.from_dict({"nodes": [{"op": "input"}], "edges": [[0, 3]]})
