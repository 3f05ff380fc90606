"""The DARTS benchmark space: genotypes, edits, the 10-class sample, and the directly written graph."""

import random

import pytest

from narcli.nas.darts_space import (
    OPS,
    STEPS,
    centres,
    distance,
    edit,
    random_genotype,
    sample_dataset,
)


def test_random_genotype_is_a_valid_cell():
    rng = random.Random(1)
    for _ in range(50):
        genotype = random_genotype(rng)
        for cell in (genotype.normal, genotype.reduce):
            assert len(cell) == STEPS
            for node, pair in enumerate(cell):
                (op_a, a), (op_b, b) = pair
                assert op_a in OPS and op_b in OPS
                assert 0 <= a < b < node + 2  # two distinct earlier states


def test_one_edit_is_distance_one():
    rng = random.Random(2)
    genotype = random_genotype(rng)
    assert distance(genotype, genotype) == 0
    for _ in range(200):
        edited = edit(genotype, rng)
        assert distance(genotype, edited) == 1 == distance(edited, genotype)


def test_centres_are_far_apart():
    chosen = centres(10, random.Random(0))
    assert all(distance(a, b) >= 12 for i, a in enumerate(chosen) for b in chosen[i + 1:])


def test_sample_is_distinct_and_labelled_by_nearest_centre():
    data = sample_dataset(per_class=40, seed=3)
    genotypes = [g for g, _ in data]
    assert len(set(genotypes)) == len(data) == 400
    assert sorted({label for _, label in data}) == list(range(10))
    assert all(sum(1 for _, label in data if label == k) == 40 for k in range(10))
    centre_list = centres(10, random.Random(3))
    for genotype, label in data[::7]:
        distances = [distance(genotype, c) for c in centre_list]
        assert distances[label] == min(distances)


def test_sample_is_reproducible():
    assert sample_dataset(per_class=5, seed=4) == sample_dataset(per_class=5, seed=4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_written_graph_equals_the_traced_network(seed):
    torch = pytest.importorskip("torch")
    from narcli.graph.canonical import build_graph
    from narcli.nas.darts_graph import darts_graph
    from narcli.nas.darts_net import DartsNetwork
    from narcli.trace.torch_tracer import trace_module

    genotype = random_genotype(random.Random(seed))
    with torch.device("meta"):
        network = DartsNetwork(genotype)
    raw, _ = trace_module(network, [torch.empty(1, 3, 32, 32, device="meta")])
    traced, written = build_graph(raw), darts_graph(genotype)
    assert written.content_hash() == traced.content_hash()
    assert [n.to_dict() for n in written.nodes] == [n.to_dict() for n in traced.nodes]
    assert written.edges == traced.edges
    assert written.params == sum(p.numel() for p in network.parameters())


def test_genotype_text_parses_back_and_bad_text_is_refused():
    from narcli.nas.darts_space import parse

    rng = random.Random(6)
    for _ in range(20):
        genotype = random_genotype(rng)
        assert parse(genotype.text()) == genotype
    for bad in ("", "normal:skip_connect~0", "normal:" + "|".join(["conv~0+conv~1"] * 4) + ";reduce:x"):
        with pytest.raises(ValueError, match="not a DARTS genotype"):
            parse(bad)
