"""Round three of the hostile probe (issue 30, items 6-13): shared machines, read-only and full
disks, archives and files too big to read, validated options, and the small defects."""

import json

import pytest

from .conftest import mlp_source
from .test_reliability import one_error_line


# 9: NAR_HOME that is a file: every command says so in one line
@pytest.mark.parametrize("command", [["cache", "info"], ["cache", "clear", "-y"], ["zoo", "list"],
                                     ["zoo", "show", "resnet50"], ["zoo", "families"], ["zoo", "stats"],
                                     ["index", "info"], ["similar", "resnet50"]])
def test_every_command_says_nar_home_is_a_file(cli, tmp_path, monkeypatch, command):
    home = tmp_path / "home-file"
    home.write_text("")
    monkeypatch.setenv("NAR_HOME", str(home))
    result = cli(*command)
    assert result.exit_code == 1, result.output
    one_error_line(result, "NAR_HOME", "not a directory")


# 11: a cache hit shows the file that was asked for
def test_a_cache_hit_shows_the_path_asked_for(cli, write, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # the whole path on one line
    import shutil

    from .conftest import FIXTURES

    first = write("models/tiny.py", mlp_source(4, 8, 2))
    second = write("models/tiny2.py", mlp_source(4, 8, 2))
    assert json.loads(cli("scan", first, "--json").stdout)["models"][0]["source"] == str(first)
    [record] = json.loads(cli("scan", second, "--json").stdout)["models"]
    assert record["cached"] and record["source"] == str(second)
    shown = "".join(cli("scan", second).output.replace("│", "").split())  # the panel wraps long paths
    assert "tiny2.py" in shown and "tiny.py" not in shown.replace("tiny2.py", "")
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    shutil.copy(FIXTURES / "tiny.onnx", a)
    shutil.copy(FIXTURES / "tiny.onnx", b)
    cli("scan", a)
    [record] = json.loads(cli("scan", b, "--json").stdout)["models"]
    assert record["cached"] and (record["source"], record["name"]) == (str(b), "b")
