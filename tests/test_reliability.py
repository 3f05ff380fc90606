"""The defects a hostile but realistic user found (issue 18), one test each: every bad input gets one
clean line and the right exit code, and a damaged cache heals."""

import json
import os
import sqlite3
from pathlib import Path

import onnx
import pytest

from narcli.scan.cache import Cache

from .conftest import FIXTURES, run_nar

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


# 2
@pytest.mark.parametrize("command", [["scan"], ["similar"], ["motifs"], ["compare", "resnet50"]])
def test_an_empty_path_is_a_usage_error(cli, command, write, tmp_path, monkeypatch):
    write("model.py", TINY)  # an empty path must not mean "the current directory"
    monkeypatch.chdir(tmp_path)
    result = cli(*command, "")
    assert result.exit_code == 2
    one_error_line(result, "empty model name or path")


# 3
def _damage(path):
    conn = sqlite3.connect(path)
    conn.execute("pragma wal_checkpoint(truncate)")
    conn.close()
    size = path.stat().st_size
    with open(path, "r+b") as f:  # keep the header page, garble every other one
        for page in range(1, size // 4096):
            f.seek(page * 4096)
            f.write(os.urandom(4096))


def test_a_damaged_cache_says_so_and_clear_always_works(cli, write, nar_home):
    model = write("tiny.py", TINY)
    assert cli("scan", model).exit_code == 0
    _damage(nar_home / "nar.db")
    for command in (["scan", model], ["similar", model], ["compare", model, "resnet50"], ["cache", "info"]):
        result = cli(*command)
        assert result.exit_code == 1, command
        one_error_line(result, "is damaged", "nar cache clear")
    cleared = cli("cache", "clear", "-y")
    assert cleared.exit_code == 0 and "was damaged" in cleared.stdout
    assert cli("cache", "info").exit_code == 0
    again = cli("scan", model, "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["models"][0]["cached"] is False


def test_cache_info_reports_health(cli, write):
    assert cli("scan", write("tiny.py", TINY)).exit_code == 0
    info = json.loads(cli("cache", "info", "--json").stdout)
    assert info["health"] == "ok" and info["models"] == 1


# 5
@pytest.mark.parametrize("command", [["scan"], ["similar"], ["motifs"], ["check"], ["compare", "resnet50"]])
def test_a_file_name_too_long_is_one_line(cli, command):
    result = cli(*command, "x" * 300 + ".py")
    assert result.exit_code != 0
    line = one_error_line(result, "File name too long")
    assert len(line) < 250


# 6
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


# 7
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


# 8
def test_a_huge_zoo_name_is_not_a_broken_zoo(cli):
    result = cli("zoo", "show", "a" * 100_000)
    assert result.exit_code == 1
    line = one_error_line(result, "no model", "100,000 characters")
    assert "unreadable" not in line and len(line) < 300
    pattern = cli("zoo", "list", "[a" * 50_000)
    assert pattern.exit_code == 2
    one_error_line(pattern, "characters")


# 9
def test_a_giant_model_spec_is_refused_with_context(cli, write):
    result = cli("scan", write("tiny.py", TINY), "--model", "-" * 50_000 + "1")
    assert result.exit_code == 2
    one_error_line(result, "bad --model", "50,001 characters")


# 10
def test_nar_home_that_is_a_file(cli, write, tmp_path, monkeypatch):
    home = tmp_path / "home-file"
    home.write_text("")
    monkeypatch.setenv("NAR_HOME", str(home))
    result = cli("scan", write("tiny.py", TINY))
    assert result.exit_code == 1
    one_error_line(result, "NAR_HOME", "not a directory")


def test_an_index_folder_that_is_a_file(cli, nar_home):
    nar_home.mkdir(parents=True)
    (nar_home / "index").write_text("")
    result = cli("index", "build")
    assert result.exit_code == 1
    one_error_line(result, "is a file, not a directory")


# 11
@pytest.mark.parametrize("setting, message", [
    ("check-paths = 5", "must be a glob or a list of globs"),
    ("check-paths = [5]", "must be a glob or a list of globs"),
    ('check-paths = ["nothing/*.py"]', "matched no files"),
])
def test_check_paths_that_are_wrong_say_so(cli, tmp_path, monkeypatch, setting, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.nar]\n{setting}\n")
    monkeypatch.chdir(tmp_path)
    result = cli("check")
    assert result.exit_code == 2
    one_error_line(result, message)


# 12
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


# 13
@pytest.mark.slow  # ~13 s of killed builds: the opt-in job
def test_index_build_removes_temporaries_of_killed_builds(cli, nar_home):
    folder = nar_home / "index"
    folder.mkdir(parents=True)
    dead = 2**22 + 12345  # above the default pid_max: no process has it
    stale = [folder / f"zoo-index.{dead}.ann.tmp", folder / f"zoo-index.json.{dead}.tmp"]
    live = folder / f"user-index.{os.getpid()}.ann.tmp"  # a build still running is left alone
    for path in stale + [live]:
        path.write_bytes(b"partial")
    assert cli("index", "build").exit_code == 0
    assert not any(p.exists() for p in stale) and live.exists()


# 14
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


def test_the_cache_is_untouched_by_every_case_above(cli, write):
    model = write("tiny.py", TINY)
    assert cli("scan", model).exit_code == 0
    before = Cache().info()
    for args in (["scan", ""], ["scan", model, "--timeout", "nan"], ["scan", model, "--input-shape", "1,²"],
                 ["zoo", "show", "a" * 5000], ["scan", model, "--model", "system('x')"]):
        assert cli(*args).exit_code != 0
    assert Cache().info() == before


# issue 43, item 6: counts beyond 64 bits; one bad file is one failed row
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


def test_counts_beyond_64_bits_are_stored_clamped(nar_home):
    from narcli.graph.arch_graph import ArchGraph, Node
    from narcli.scan.cache import Cache, ModelRecord

    graph = ArchGraph([Node("input"), Node("matmul")], [(0, 1)])
    record = ModelRecord("m", "m.onnx", "onnx", "onnx", [], None, 2**70, 2**120, 2, 2, 1, graph.content_hash(), [])
    cache = Cache()
    cache.store("key", "m.onnx", [record], [graph])
    cache.store_embedding(record, "enc", b"\0" * 16, None, [])  # an OverflowError from SQLite before
    [stored] = cache.embeddings("enc")
    assert stored["macs"] == 2**63 - 1 and stored["params"] == 2**63 - 1


def test_one_file_that_breaks_a_reader_is_one_failed_row_of_a_directory_scan(cli, tmp_path, monkeypatch):
    import shutil

    from narcli.scan import scanner

    folder = tmp_path / "models"
    folder.mkdir()
    for name in ("a_deep", "b_good", "c_overflow"):
        shutil.copy(FIXTURES / "tiny.onnx", folder / f"{name}.onnx")
    real = scanner.scan_file

    def hostile(path, *args, **kwargs):  # what a reader deep inside may raise on a hostile file
        if path.name == "a_deep.onnx":
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON object")
        if path.name == "c_overflow.onnx":
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(scanner, "scan_file", hostile)
    result = cli("scan", folder, "--json")
    assert result.exit_code == 1 and "Traceback" not in result.output
    files = {Path(f["path"]).name: f for f in json.loads(result.stdout)["files"]}
    assert files["b_good.onnx"]["models"] and files["b_good.onnx"]["error"] is None
    assert "RecursionError" in files["a_deep.onnx"]["error"] and "OverflowError" in files["c_overflow.onnx"]["error"]
