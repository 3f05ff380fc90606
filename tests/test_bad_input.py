"""Every bad input: one clear error line, a non-zero exit code, and the cache left as it was."""

import json

import pytest

from narcli.scan.cache import Cache

from .conftest import FIXTURES

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
