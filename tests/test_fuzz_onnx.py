"""Mutated ONNX files (truncated, bytes flipped, nodes dropped or duplicated, cycles, impossible sizes)
are either read into a sound graph or refused with a LoadError; nothing else escapes, and no graph
ever has negative parameters or MACs."""

import os

import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from narcli.errors import NarError
from narcli.graph.arch_graph import ArchGraph
from narcli.scan.scanner import trace_onnx_file

from .conftest import FIXTURES


def small_convnet() -> onnx.ModelProto:
    """Conv -> BatchNorm -> Relu -> GlobalAveragePool -> Flatten -> Gemm, with real initializers."""
    import numpy as np

    def init(name, *shape):
        return numpy_helper.from_array(np.ones(shape, dtype=np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], kernel_shape=[1, 1], group=1),
        helper.make_node("Add", ["c2", "r1"], ["a1"]),
        helper.make_node("GlobalAveragePool", ["a1"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    inits = [init("w1", 8, 3, 3, 3), init("b1", 8), init("g", 8), init("beta", 8), init("mean", 8), init("var", 8),
             init("w2", 8, 8, 1, 1), init("wf", 10, 8), init("bf", 10)]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


BASES = {"convnet": small_convnet().SerializeToString(), "tiny": (FIXTURES / "tiny.onnx").read_bytes(),
         "custom": (FIXTURES / "custom_op.onnx").read_bytes()}


def _structural(data: bytes, how: str, a: int, b: int, value: int) -> bytes:
    model = onnx.load_from_string(data)
    nodes, inits = model.graph.node, model.graph.initializer
    if how == "drop" and nodes:
        del nodes[a % len(nodes)]
    elif how == "duplicate" and nodes:
        nodes.append(nodes[a % len(nodes)])
    elif how == "cycle" and nodes and nodes[a % len(nodes)].input:
        nodes[a % len(nodes)].input[0] = nodes[b % len(nodes)].output[0]
    elif how == "dims" and inits:
        tensor = inits[a % len(inits)]
        if tensor.dims:
            tensor.dims[b % len(tensor.dims)] = value
    elif how == "shape":
        dim = model.graph.input[0].type.tensor_type.shape.dim
        if dim:
            dim[b % len(dim)].dim_value = value
    elif how == "attr" and nodes:
        node = nodes[a % len(nodes)]
        for attribute in node.attribute:
            if attribute.ints:
                attribute.ints[b % len(attribute.ints)] = value
            elif attribute.type == onnx.AttributeProto.INT:
                attribute.i = value
    elif how == "rename" and nodes and nodes[a % len(nodes)].input:
        nodes[a % len(nodes)].input[b % len(nodes[a % len(nodes)].input)] = "nowhere"
    elif how == "drop_initializer" and inits:
        del inits[a % len(inits)]
    return model.SerializeToString()


structural = st.tuples(
    st.sampled_from(["drop", "duplicate", "cycle", "dims", "shape", "attr", "rename", "drop_initializer"]),
    st.integers(0, 50), st.integers(0, 50), st.sampled_from([-1, 0, 1, 2, 7, -(2**40), 2**40 + 1, 2**62, -(2**63)]))
mutations = st.one_of(  # structural edits weighted up: most byte edits only break the protobuf
    st.tuples(st.just("truncate"), st.integers(0, 10_000)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8)),
    structural, structural, structural,
)


def mutate(data: bytes, mutation) -> bytes:
    if mutation[0] == "truncate":
        return data[: mutation[1] % max(len(data), 1)]
    if mutation[0] == "flip":
        out = bytearray(data)
        for where, value in mutation[1]:
            out[where % len(out)] = value
        return bytes(out)
    return _structural(data, *mutation)


def check_file(path) -> None:
    try:
        [payload] = trace_onnx_file(path)
    except NarError:
        return  # refused with a message: fine
    graph = ArchGraph.from_dict(payload["graph"])
    assert graph.num_nodes > 0
    assert graph.params >= 0 and graph.macs >= 0, (graph.params, graph.macs)
    assert all(n.params >= 0 and n.macs >= 0 for n in graph.nodes)
    assert all(0 <= a < b < graph.num_nodes for a, b in graph.edges)  # still a DAG in topological order


def fuzz(tmp_path, examples: int) -> None:
    ran: list[int] = []

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(sorted(BASES)), st.lists(mutations, min_size=1, max_size=3))
    def run_one(base, chain):
        data = BASES[base]
        for mutation in chain:
            try:
                data = mutate(data, mutation)
            except Exception:  # a structural edit of bytes that no longer parse: keep the bytes
                pass
        path = tmp_path / "mutant.onnx"
        path.write_bytes(data)
        check_file(path)
        ran.append(1)

    run_one()
    print(f"{len(ran)} mutated ONNX files")
    assert len(ran) >= examples


def test_the_unmutated_bases_trace(tmp_path):
    for name, data in BASES.items():
        path = tmp_path / f"{name}.onnx"
        path.write_bytes(data)
        [payload] = trace_onnx_file(path)
        assert payload


def test_fuzz_onnx_mutations(tmp_path):
    fuzz(tmp_path, 300)


@pytest.mark.slow
def test_fuzz_onnx_mutations_thousands(tmp_path):
    fuzz(tmp_path, int(os.environ.get("FUZZ_EXAMPLES", "2000")))
