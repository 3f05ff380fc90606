"""Every bad input: one clear error line, a non-zero exit code, and the cache left as it was."""

import json
from pathlib import Path

import onnx
import pytest

from narcli.scan.cache import Cache

from .conftest import FIXTURES, run_nar

GOOD = """
    from torch import nn
    from torch.nn import Linear
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
        def forward(self, x):
            return self.fc(x)
"""

BAD_FILES = {
    "missing": (None, [], "no such file"),
    "empty": ("empty.py", [], "file is empty"),
    "syntax": ("syntax.py", [], "syntax error"),
    "import_raises": ("raises.py", [], "importing it raised ZeroDivisionError"),
    "no_module": ("plain.py", [], "no nn.Module"),
    "needs_args": ("needs.py", [], "--model"),
    "forward_fails": ("shapes.py", [], "--input-shape"),
    "bad_spec": ("tiny.py", ["--model", "Tiny("], "bad --model"),
    "unknown_model": ("tiny.py", ["--model", "Nope"], "no 'Nope'"),
    "spec_attribute": ("tiny.py", ["--model", "Tiny(x=os.environ)"], "attribute access is not allowed"),
    "spec_lambda": ("tiny.py", ["--model", "Tiny(f=lambda: 0)"], "lambdas are not allowed"),
    "spec_operator": ("tiny.py", ["--model", "Tiny(n=2 ** 99)"], "operators are not allowed"),
    "spec_imported_name": ("tiny.py", ["--model", "Tiny(nn.Linear(2, 2))"], "attribute access"),
    "spec_import_call": ("tiny.py", ["--model", "Linear(2, 2)"], "not a class or function defined in tiny.py"),
    "bad_shape": ("tiny.py", ["--input-shape", "1,x"], "bad input shape"),
    "truncated_onnx": ("model.onnx", [], "ONNX"),
    "not_onnx": ("text.onnx", [], "ONNX"),
    "wrong_suffix": ("weights.txt", [], "not a model file"),
    "not_a_checkpoint": ("weights.bin", [], "not a readable PyTorch checkpoint"),
    "truncated_safetensors": ("model.safetensors", [], "truncated"),
    "safetensors_not_json": ("garbled.safetensors", [], "corrupt safetensors header"),
    "hang": ("hang.py", ["--timeout", "3"], "timed out after 3 s"),
    "segfault": ("crash.py", [], "crashed the Python interpreter"),
}

SOURCES = {
    "empty.py": "",
    "syntax.py": "def broken(:\n    pass\n",
    "raises.py": "import torch\nx = 1 / 0\n",
    "plain.py": "import torch\nVALUE = 3\n",
    "needs.py": """
        from torch import nn
        class Net(nn.Module):
            def __init__(self, width, depth):
                super().__init__()
    """,
    "shapes.py": """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
            def forward(self, x):
                return self.fc(x.reshape(-1, 7))
    """,
    "tiny.py": GOOD,
    "text.onnx": "not protobuf at all\n",
    "weights.bin": "0000",
    "weights.txt": "0000",
    # a header that claims 4 KiB of JSON in a 40-byte file
    "model.safetensors": (4096).to_bytes(8, "little") + b'{"w": {"dtype": "F32", "shape": [2]',
    "garbled.safetensors": (8).to_bytes(8, "little") + b"\xff\xfe{[}]  ",
    "hang.py": "import time\nwhile True:\n    time.sleep(0.1)\n",
    "crash.py": "import ctypes\nctypes.string_at(0)\n",
}


def make(write, name):
    if name == "model.onnx":
        data = (FIXTURES / "tiny.onnx").read_bytes()
        return write(name, data[: len(data) // 2])
    return write(name, SOURCES[name])


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_input_is_one_line_nonzero_and_leaves_cache(case, cli, write, tmp_path):
    good = write("good.py", GOOD)
    assert cli("scan", good).exit_code == 0
    before = Cache().info()

    name, extra, message = BAD_FILES[case]
    path = tmp_path / "does-not-exist.py" if name is None else make(write, name)
    result = cli("scan", path, *extra)

    assert result.exit_code != 0
    if case.startswith("spec_") or case == "bad_spec":
        assert result.exit_code == 2  # a usage error
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error:") and message in lines[0], lines[0]
    assert "Traceback" not in result.output + result.stderr
    assert Cache().info() == before
    cached = cli("scan", good, "--json")
    assert json.loads(cached.stdout)["models"][0]["cached"] is True


def test_unknown_onnx_op_is_not_an_error(cli):
    result = cli("scan", FIXTURES / "custom_op.onnx", "--json")
    assert result.exit_code == 0, result.output
    ops = dict(json.loads(result.stdout)["models"][0]["top_ops"])
    assert ops["unknown:FancyOp"] == 1


def test_debug_shows_the_traceback(write):
    from .conftest import run_nar

    path = make(write, "raises.py")
    quiet = run_nar("scan", path)
    loud = run_nar("--debug", "scan", path)
    assert quiet.returncode == loud.returncode == 1
    assert "Traceback" not in quiet.stderr
    assert "Traceback" in loud.stderr and "ZeroDivisionError" in loud.stderr


TINY = """
    from torch import nn
    from os import system
    class Tiny(nn.Module):
        def __init__(self, width=4):
            super().__init__()
            self.fc = nn.Linear(width, 2)
        def forward(self, x):
            return self.fc(x)
"""


def one_error_line(result, *needles):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("error:"), lines[0]
    assert "internal error" not in lines[0] and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", [["scan"], ["similar"], ["motifs"], ["compare", "resnet50"]])
def test_an_empty_path_is_a_usage_error(cli, command, write, tmp_path, monkeypatch):
    write("model.py", TINY)  # an empty path must not mean "the current directory"
    monkeypatch.chdir(tmp_path)
    result = cli(*command, "")
    assert result.exit_code == 2
    one_error_line(result, "empty model name or path")


@pytest.mark.parametrize("command", [["scan"], ["similar"], ["motifs"], ["check"], ["compare", "resnet50"]])
def test_a_file_name_too_long_is_one_line(cli, command):
    result = cli(*command, "x" * 300 + ".py")
    assert result.exit_code != 0
    line = one_error_line(result, "File name too long")
    assert len(line) < 250


@pytest.mark.parametrize("extra", [["--input-shape", "5"], ["--input-shape", "5", "--input-dtype", "bool"]])
def test_a_failing_forward_prints_no_library_traceback(write, extra):
    result = run_nar("scan", write("tiny.py", TINY), *extra)
    assert result.returncode == 1
    one_error_line(result, "forward failed")


@pytest.mark.parametrize("shape", ["1,9223372036854775808", "1,99999999999", "1,²", "1," * 20 + "1"])
def test_absurd_shapes_are_refused_up_front(cli, write, shape):
    result = cli("scan", write("tiny.py", TINY), "--input-shape", shape)
    assert result.exit_code == 2
    one_error_line(result, "bad input shape")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "0", "-1"])
@pytest.mark.parametrize("command", ["scan", "similar", "check"])
def test_timeouts_that_are_not_a_number_of_seconds_are_usage_errors(cli, write, command, value):
    result = cli(command, write("tiny.py", TINY), "--timeout", value)
    assert result.exit_code == 2
    one_error_line(result, "--timeout")


@pytest.mark.parametrize("command", [["zoo", "build"], ["zoo", "signatures"]])
def test_zoo_writers_check_their_timeout_too(cli, command, tmp_path):
    result = cli(*command, "--db", tmp_path / "zoo.db", "--timeout", "nan")
    assert result.exit_code == 2
    one_error_line(result, "--timeout")
    assert not (tmp_path / "zoo.db").exists()


def test_a_huge_zoo_name_is_not_a_broken_zoo(cli):
    result = cli("zoo", "show", "a" * 100_000)
    assert result.exit_code == 1
    line = one_error_line(result, "no model", "100,000 characters")
    assert "unreadable" not in line and len(line) < 300
    pattern = cli("zoo", "list", "[a" * 50_000)
    assert pattern.exit_code == 2
    one_error_line(pattern, "characters")


def test_a_giant_model_spec_is_refused_with_context(cli, write):
    result = cli("scan", write("tiny.py", TINY), "--model", "-" * 50_000 + "1")
    assert result.exit_code == 2
    one_error_line(result, "bad --model", "50,001 characters")


def _broken_onnx(tmp_path, how):
    model = onnx.load(str(FIXTURES / "tiny.onnx"))
    if how == "cycle":
        model.graph.node[0].input[0] = model.graph.node[-1].output[0]
    elif how == "negative":
        model.graph.initializer[0].dims[0] = -5
    elif how == "twice":
        model.graph.node[-1].output[0] = model.graph.node[0].output[0]
    path = tmp_path / f"{how}.onnx"
    onnx.save(model, str(path))
    return path


@pytest.mark.parametrize("how, message", [("cycle", "has a cycle"), ("negative", "impossible shape"),
                                          ("twice", "produced by two operators")])
def test_invalid_onnx_is_refused(cli, tmp_path, how, message):
    result = cli("scan", _broken_onnx(tmp_path, how))
    assert result.exit_code == 1
    one_error_line(result, message)


@pytest.mark.parametrize("spec, message", [
    ('Tiny(**{"width": 8})', "unpacking"),
    ("Tiny(*[8])", "unpacking"),
    ("system('touch pwned')", "not a class or function defined in tiny.py"),
    ("Tiny(width=system('touch pwned'))", "not a class or function defined in tiny.py"),
])
def test_model_specs_call_only_what_the_file_defines(cli, write, tmp_path, monkeypatch, spec, message):
    monkeypatch.chdir(tmp_path)
    result = cli("scan", write("tiny.py", TINY), "--model", spec)
    assert result.exit_code == 2
    one_error_line(result, message)
    assert not (tmp_path / "pwned").exists()


# counts beyond 64 bits (issue 43, item 6)
def _onnx_with_initializer(path, dims):
    weight = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=dims)  # declared, no data
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["y"]), onnx.helper.make_node("Relu", ["y"], ["z"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, dims[0]])],
        [onnx.helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, dims[-1]])], [weight])
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("command", [["scan"], ["similar"], ["export", "-o", "out"], ["check"]])
def test_a_parameter_count_beyond_any_model_is_refused_naming_the_tensor(cli, tmp_path, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _onnx_with_initializer(tmp_path / "forged.onnx", [2**40, 2**40])
    result = cli(command[0], path, *command[1:])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "initializer 'w'" in result.output and "2^53" in result.output
    assert "OverflowError" not in result.output and "internal error" not in result.output


def test_one_file_that_breaks_a_reader_is_one_failed_row_of_a_directory_scan(cli, tmp_path, monkeypatch):
    import shutil

    from narcli.scan import walk  # the directory walk calls scan_file once per file

    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("a_deep", "b_good", "c_overflow"):
        shutil.copy(FIXTURES / "tiny.onnx", folder / f"{name}.onnx")
    real = walk.scan_file

    def hostile(path, *args, **kwargs):  # what a reader deep inside may raise on a hostile file
        if path.name == "a_deep.onnx":
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON object")
        if path.name == "c_overflow.onnx":
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(walk, "scan_file", hostile)
    result = cli("scan", folder, "--json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    files = {Path(f["path"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files["b_good.onnx"]["models"] and files["b_good.onnx"]["error"] is None
    assert "RecursionError" in files["a_deep.onnx"]["error"] and "OverflowError" in files["c_overflow.onnx"]["error"]


# every numeric option is checked alike: one usage-error line, exit 2
@pytest.mark.parametrize("argv, message", [
    (["zoo", "list", "--limit", "-1"], "--limit must be at least 0"),
    (["similar", "resnet50", "-k", "-1"], "-k must be between 1 and 1000"),
    (["train", "encoder", "--seed", "-1"], "--seed must be between 0 and"),
    (["eval", "retrieval", "--ce-weight", "nan"], "--ce-weight must not be negative"),
    (["eval", "predictor", "--jobs", "0"], "--jobs must be between 1 and 256"),
    (["train", "predictor", "--seed", "-3"], "--seed must be between 0 and"),
])
def test_numeric_options_out_of_range_are_usage_errors(cli, argv, message):
    result = cli(*argv)
    assert result.exit_code == 2, result.output
    one_error_line(result, message)


def test_a_binary_py_file_names_no_line(cli, write):
    result = cli("scan", write("binary.py", b"import torch\x00\x01\x02"))
    line = one_error_line(result, "binary.py: syntax error")
    assert "None" not in line


@pytest.mark.parametrize("attrs, weight, message", [
    ({"group": 0}, (8, 3, 3, 3), "group=0"),
    ({"group": 3}, (8, 3, 3, 3), "group=3"),
    ({"strides": [0, 0]}, (8, 3, 3, 3), "strides=[0, 0]"),
    ({"dilations": [-1, 1]}, (8, 3, 3, 3), "dilations=[-1, 1]"),
    ({"pads": [1]}, (8, 3, 3, 3), "pads=[1]"),
    ({"kernel_shape": [5, 5]}, (8, 3, 3, 3), "kernel_shape=[5, 5]"),
])
def test_an_onnx_conv_with_impossible_attributes_is_refused(cli, tmp_path, attrs, weight, message):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], name="bad_conv", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.ones(weight, dtype=np.float32), "w")])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    one_error_line(cli("scan", path), "'bad_conv' (Conv)", message)


# a file too big to read is refused by its size first
@pytest.mark.parametrize("suffix, message", [(".py", "at most 32 MiB"), (".onnx", "protobuf's limit"),
                                             (".pt2", "not a readable torch.export archive")])
def test_a_sparse_60_gb_model_file_is_refused_by_size(cli, tmp_path, suffix, message):
    import resource

    path = tmp_path / f"huge{suffix}"
    with open(path, "wb") as f:
        f.truncate(60 << 30)  # sparse: no disk used
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    line = one_error_line(cli("scan", path), message)
    assert "MemoryError" not in line and "internal error" not in line
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 << 10  # KiB


def test_a_directory_walk_does_not_read_a_huge_py(cli, tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    with open(folder / "huge.py", "wb") as f:
        f.truncate(60 << 30)
    result = cli("scan", folder, "--json")
    [entry] = json.loads(result.stdout)["files"]
    assert "at most 32 MiB" in entry["error"]
