"""The NAS spaces of the `nar-nas` plugin: architecture strings, networks, the DARTS classes."""

import collections

import pytest
import torch

nb201 = pytest.importorskip("nar_nas.nb201", reason="the nar-nas plugin is not installed")
from nar_nas import darts

from narcli.graph.canonical import build_graph
from narcli.trace.torch_tracer import trace_module

ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


def traced(model, shape=(1, 3, 32, 32)):
    raw, _ = trace_module(model, [torch.empty(shape, device="meta")])
    return build_graph(raw)


def test_the_space_has_every_string_once_and_parses_back():
    archs = nb201.all_archs()
    assert len(archs) == len(set(archs)) == 5 ** 6
    assert ARCH in archs
    assert nb201.parse(ARCH)[2] == [("skip_connect", 0), ("nor_conv_3x3", 1), ("skip_connect", 2)]
    with pytest.raises(ValueError, match="not a NAS-Bench-201"):
        nb201.parse("|conv~0|+|x~0|")


def test_the_nb201_network_has_the_published_shape():
    with torch.device("meta"):
        model = nb201.network(ARCH)
    graph = traced(model)
    ops = graph.op_histogram()
    # per cell 3 nor_conv_3x3 edges; 15 cells; 2 convs per reduction block + 1 shortcut; stem
    assert ops["conv2d"] == 15 * 3 + 2 * 3 + 1
    assert ops["avg_pool2d"] == 15 + 2  # one per cell, one per reduction shortcut
    assert graph.nodes[-2].op == "linear" or ops["linear"] == 1
    assert graph.params == sum(p.numel() for p in model.parameters())


def test_none_edges_are_computed_as_the_reference_code_runs_them():
    empty = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
    with torch.device("meta"):
        graph = traced(nb201.network(empty))
    ops = graph.op_histogram()
    assert ops["conv2d"] == 1 + 2 * 3  # stem and reduction blocks only: nothing to convolve in a cell
    assert ops["mul"] == 15 * 6  # every none edge multiplies its input by zero, as NAS-Bench-201's Zero op
    # sum() from 0 per node (1 + 2 + 3 adds a cell) and the two reduction shortcuts
    assert ops["add"] == 15 * 6 + 2


def test_cells_that_differ_only_in_none_or_skip_edges_are_different_graphs():
    with_skip = "|skip_connect~0|+|nor_conv_3x3~0|skip_connect~1|+|skip_connect~0|nor_conv_1x1~1|avg_pool_3x3~2|"
    variants = [with_skip, with_skip.replace("skip_connect~1", "none~1"), with_skip.replace("|skip_connect~0|+", "|none~0|+"),
                with_skip.replace("skip_connect~0|nor_conv_1x1", "none~0|nor_conv_1x1")]
    hashes = set()
    for arch in variants:
        with torch.device("meta"):
            hashes.add(traced(nb201.network(arch)).content_hash())
    assert len(hashes) == len(variants)


def test_architecture_strings_must_list_every_edge_once():
    with pytest.raises(ValueError, match="not a NAS-Bench-201"):
        nb201.parse("|none~0|+|none~0|none~0|+|none~0|none~1|none~2|")


def test_darts_source_is_reproducible_balanced_and_round_trips():
    first = darts.generate(2000, seed=3)
    assert first == darts.generate(2000, seed=3)
    assert first != darts.generate(2000, seed=4)
    assert len({g for g, _ in first}) == 2000
    counts = collections.Counter(k for _, k in first)
    assert len(counts) == darts.CLASSES and set(counts.values()) == {200}
    genotype = first[10][0]
    assert darts.decode(darts.encode(genotype)) == genotype
    with pytest.raises(ValueError, match="not a DARTS genotype"):
        darts.decode("normal:conv~0")
    with torch.device("meta"):
        graph = traced(darts.network(genotype))
    assert graph.op_histogram()["concat"] >= 8
