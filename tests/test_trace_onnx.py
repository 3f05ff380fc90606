from collections import Counter

import onnx
import pytest
import torch
from onnx import TensorProto, helper

from narcli.errors import LoadError
from narcli.graph.canonical import build_graph
from narcli.trace.onnx_tracer import load_onnx, trace_onnx
from narcli.trace.torch_tracer import trace_module

from .models import SmallResNet, SmallTransformer, export_onnx


def histogram_gap(a: Counter, b: Counter) -> int:
    """How many nodes would have to change for the two op histograms to be equal."""
    return sum(((a - b) + (b - a)).values())


def torch_graph(model, inputs):
    raw, _ = trace_module(model, list(inputs))
    return build_graph(raw)


@pytest.mark.parametrize("make, inputs", [
    (SmallResNet, lambda: (torch.randn(1, 3, 32, 32),)),
    (SmallTransformer, lambda: (torch.randint(0, 100, (1, 16)),)),
])
def test_pytorch_and_its_onnx_export_give_nearly_the_same_graph(tmp_path, make, inputs):
    torch.manual_seed(0)
    model = make().eval()
    example = inputs()
    from_torch = torch_graph(model, example)
    from_onnx = build_graph(trace_onnx(load_onnx(export_onnx(model, example, tmp_path / "m.onnx"))))
    gap = histogram_gap(from_torch.op_histogram(), from_onnx.op_histogram())
    assert gap <= 3, (from_torch.op_histogram(), from_onnx.op_histogram())
    # exporters fold each batch norm into its conv: 2 vectors (scale, shift) become 1 (bias)
    assert abs(from_onnx.params - from_torch.params) <= 0.01 * from_torch.params
    assert abs(from_onnx.macs - from_torch.macs) <= 0.01 * from_torch.macs
    assert abs(from_onnx.depth - from_torch.depth) <= 3
    raw = trace_onnx(load_onnx(tmp_path / "m.onnx"))
    assert list(raw.input_dtypes.values()) == [str(example[0].dtype).replace("torch.", "")]


def onnx_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_conv_gemm_and_attributes(tmp_path):
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 3, 3, 3], [0.0] * 216)
    fc = helper.make_tensor("fc", TensorProto.FLOAT, [10, 8], [0.0] * 80)
    model = onnx_model(
        [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], [w, fc])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    g = build_graph(trace_onnx(load_onnx(path)))
    assert sorted(g.op_histogram().elements()) == ["conv2d", "global_avg_pool", "input", "linear", "output", "relu"]
    conv = next(n for n in g.nodes if n.op == "conv2d")
    assert conv.attrs["stride"] == [2, 2] and conv.attrs["padding"] == [1, 1] and conv.shape == [1, 8, 8, 8]
    linear = next(n for n in g.nodes if n.op == "linear")
    assert linear.attrs == {"in_features": 8, "out_features": 10}
    assert g.params == 216 + 80


def test_op_outside_the_vocabulary_is_kept_as_unknown(tmp_path):
    model = onnx_model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Hardmax", ["r"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert build_graph(trace_onnx(load_onnx(path))).op_histogram()["unknown:Hardmax"] == 1


def test_custom_domain_op_is_unknown(tmp_path):
    model = onnx_model(
        [helper.make_node("Relu", ["x"], ["y"], domain="com.example")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert build_graph(trace_onnx(load_onnx(path))).op_histogram()["unknown:Relu"] == 1


def test_truncated_and_foreign_files_raise_load_error(tmp_path):
    model = SmallResNet().eval()
    path = export_onnx(model, (torch.randn(1, 3, 32, 32),), tmp_path / "good.onnx")
    data = path.read_bytes()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 3])
    foreign = tmp_path / "notes.onnx"
    foreign.write_text("these are not the weights you are looking for\n" * 20)
    for bad in (truncated, foreign):
        with pytest.raises(LoadError):
            load_onnx(bad)
