"""The command line itself: version and help, what `nar scan` prints for files, directories and
archives, shared model options, number formatting, and output kept clean of prints and library warnings."""

import json
import subprocess
import sys

import pytest
import torch
from torch import nn

from narcli import __version__

from .conftest import FIXTURES, mlp_source


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"nar {__version__}"


def test_help_does_not_import_torch():
    probe = ("import sys\nfrom narcli.cli.app import app\n"
             "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
             "assert 'torch' not in sys.modules and 'onnx' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "scan" in done.stdout


def test_scan_summary_names_what_was_assumed(cli, write):
    path = write("cnn.py", """
        from torch import nn
        class SmallCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.head = nn.Linear(8, 10)
            def forward(self, x):
                return self.head(self.conv(x).mean((2, 3)))
    """)
    result = cli("scan", path)
    assert result.exit_code == 0, result.output
    out = result.stdout
    # one unstrided convolution before a global pool: a design for small images, traced at 32 px
    for expected in ("SmallCNN", "runtime", "float32[1,3,32,32]", "assumed", "image", "params", "MACs",
                     "conv2d", "CIFAR-sized"):
        assert expected in out


def test_scan_with_model_spec_and_token_input(cli):
    result = cli("scan", FIXTURES / "llama7b.py", "--model", "tiny_llama", "--input-shape", "1,32",
                 "--input-dtype", "long", "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["name"] == "tiny_llama" and model["inputs"] == [{"shape": [1, 32], "dtype": "int64"}]
    assert dict(model["top_ops"])["linear"] == 2 * 7 + 1


def test_user_prints_do_not_corrupt_json(cli, write):
    path = write("noisy.py", """
        print("hello from import")
        from torch import nn
        class Net(nn.Sequential):
            def __init__(self):
                print("building")
                super().__init__(nn.Linear(3, 3))
    """)
    result = cli("scan", path, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["models"][0]["name"] == "Net"


def test_scan_pt2_archive(cli, tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    program = torch.export.export(model, (torch.randn(1, 4),))
    path = tmp_path / "mlp.pt2"
    torch.export.save(program, str(path))
    result = cli("scan", path, "--json")
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.stdout)["models"]
    assert record["kind"] == "pt2" and record["params"] == 4 * 8 + 8 + 8 * 2 + 2
    assert dict(record["top_ops"]) == {"linear": 2, "relu": 1}


def test_scan_directory_reports_each_file(cli, write, tmp_path):
    write("proj/model.py", "from torch import nn\nclass Net(nn.Sequential):\n    def __init__(self):\n"
                           "        super().__init__(nn.Linear(3, 3))\n")
    write("proj/utils.py", "import torch\nSCALE = 2\n")
    write("proj/readme_helpers.py", "def f():\n    return 1\n")
    write("proj/broken.py", "import torch\nraise ImportError('missing dependency')\n")
    write("proj/.venv/lib/ignored.py", "import torch\nraise SystemExit(3)\n")
    (tmp_path / "proj" / "tiny.onnx").write_bytes((FIXTURES / "tiny.onnx").read_bytes())
    result = cli("scan", tmp_path / "proj", "--json")
    assert result.exit_code == 1  # broken.py failed
    files = {f["path"].split("/")[-1]: f for f in json.loads(result.stdout)["files"]}
    assert set(files) == {"model.py", "utils.py", "readme_helpers.py", "broken.py", "tiny.onnx"}
    assert files["model.py"]["models"][0]["name"] == "Net"
    assert files["tiny.onnx"]["models"][0]["kind"] == "onnx"
    assert files["utils.py"]["skipped"] == "no models"
    assert files["readme_helpers.py"]["skipped"] == "does not use torch"
    assert "missing dependency" in files["broken.py"]["error"]
    table = cli("scan", tmp_path / "proj")
    assert "2 model(s)" in table.stdout and "1 failed" in table.stdout


@pytest.mark.parametrize("command", ["scan", "similar", "compare", "check", "motifs"])
def test_every_command_that_takes_a_model_file_takes_the_same_model_options(command):
    import typer.main

    from narcli.cli.app import app

    group = typer.main.get_command(app)
    options = {opt for param in group.commands[command].params for opt in param.opts}
    assert {"--model", "--input-shape", "--input-dtype", "--timeout"} <= options


def test_motifs_of_a_file_with_model_and_input_options(cli, write):
    path = write("two.py", """
        from torch import nn
        class A(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.body = nn.Sequential(*[nn.Linear(width, width) for _ in range(3)])
            def forward(self, x):
                return self.body(x)
    """)
    result = cli("motifs", path, "--model", "A(width=6)", "--input-shape", "2,6", "--json")
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["nodes"] == 5  # input, three linears, output


def test_scanning_a_directory_names_the_files_it_skipped(cli, write, tmp_path):
    write("proj/utils.py", "import torch\nSCALE = 2\n")
    write("proj/readme_helpers.py", "def f():\n    return 1\n")
    result = cli("scan", tmp_path / "proj")
    text = " ".join(result.stdout.split())
    assert "2 skipped" in text
    assert "skipped (no models):" in text and "utils.py" in text
    assert "skipped (does not use torch):" in text and "readme_helpers.py" in text


def test_a_float_input_to_a_token_model_suggests_the_integer_dtype(cli, write):
    path = write("lm.py", "from torch import nn\n\nclass LM(nn.Module):\n    def __init__(self):\n"
                          "        super().__init__()\n        self.tok = nn.Embedding(100, 8)\n"
                          "        self.head = nn.Linear(8, 100)\n\n    def forward(self, ids):\n"
                          "        return self.head(self.tok(ids))\n")
    result = cli("scan", path, "-i", "1,16")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "pass --input-dtype int64" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert cli("scan", path, "-i", "1,16", "--input-dtype", "int64").exit_code == 0


@pytest.mark.parametrize("n, text", [(2.16e14, "216 T"), (2.16e16, "21.6 P"), (3e19, "30 E"), (2.16e26, "2.16e+26"),
                                     (1234567, "1.23 M"), (5, "5")])
def test_huge_counts_read_as_numbers(n, text):
    from narcli.search.text import human

    assert human(n) == text


# nar's output stays clean whatever its dependencies (or the model's imports) warn
def test_library_warnings_do_not_reach_the_output(write):
    model = write("noisy.py", "import warnings\nwarnings.warn('jit.script is deprecated', FutureWarning)\n"
                  + mlp_source(4, 8, 2))
    result = subprocess.run([sys.executable, "-W", "default", "-m", "narcli", "scan", str(model)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "FutureWarning" not in result.stderr and "deprecated" not in result.stderr, result.stderr
    debug = subprocess.run([sys.executable, "-m", "narcli", "--debug", "scan", str(model), "--no-cache"],
                           capture_output=True, text=True)
    assert "FutureWarning" in debug.stderr  # --debug shows everything
