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


# 12: every numeric option is checked alike: one usage-error line, exit 2
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


# 13: the small ones
def test_a_binary_py_file_names_no_line(cli, write):
    result = cli("scan", write("binary.py", b"import torch\x00\x01\x02"))
    line = one_error_line(result, "binary.py: syntax error")
    assert "None" not in line


@pytest.mark.parametrize("n, text", [(2.16e14, "216 T"), (2.16e16, "21.6 P"), (3e19, "30 E"), (2.16e26, "2.16e+26"),
                                     (1234567, "1.23 M"), (5, "5")])
def test_huge_counts_read_as_numbers(n, text):
    from narcli.search.text import human

    assert human(n) == text


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


def test_check_paths_that_leave_the_project_are_refused(cli, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.nar]\ncheck-paths = ["../../../../../**"]\n')
    monkeypatch.chdir(tmp_path)
    result = cli("check")
    assert result.exit_code == 2
    one_error_line(result, "reach outside the project")


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="a pseudo-terminal")
def test_sigterm_closes_the_tui_cleanly(tmp_path):
    import os
    import pty
    import select
    import signal
    import sys
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: nar tui on a terminal of its own
        os.environ.update({"COLUMNS": "100", "LINES": "30", "NAR_HOME": str(tmp_path / "home")})
        os.execvp(sys.executable, [sys.executable, "-m", "narcli", "tui", "resnet50"])
    out = b""

    def read(seconds: float) -> None:
        nonlocal out
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:
                    return
                if not chunk:
                    return
                out += chunk

    read(8)  # started, and loading the model's details in its workers
    os.kill(pid, signal.SIGTERM)
    read(10)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 143
    assert b"internal error" not in out and b"Traceback" not in out, out[-500:]


# 6: one measurement at a time per device on a machine
def _hold_measurement_lock(ready, release):
    from narcli.bench.lock import measuring

    with measuring("cpu"):
        ready.set()
        release.wait(60)


def test_a_second_measurement_on_the_same_device_is_refused(cli, write):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_measurement_lock, args=(ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        model = write("tiny.py", mlp_source(4, 8, 2))
        result = cli("bench", model, "--repeat", "2")
        assert result.exit_code == 1
        one_error_line(result, "another nar is measuring on this machine's cpu", f"pid {holder.pid}")
        result = cli("calibrate", "--models", "3", "--device", "second")
        assert result.exit_code == 1
        one_error_line(result, "another nar is measuring")
    finally:
        release.set()
        holder.join(30)
    assert cli("bench", model, "--repeat", "2").exit_code == 0  # free again once the first is done


def test_the_measurement_lock_is_reentrant_in_one_process():
    from narcli.bench.lock import _held, measuring

    with measuring("cpu"), measuring("cpu"):
        assert _held["cpu"][1] == 2
    assert "cpu" not in _held


# 7: a read-only or full NAR_HOME says so, leaves nothing behind, and never calls an intact cache damaged
@pytest.fixture
def small_mount(tmp_path):
    """A tmpfs of its own (root only); the test is skipped where mounting is not allowed."""
    import subprocess

    point = tmp_path / "mnt"
    point.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")

    def remount(flags: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{flags}", str(point)], check=True)

    yield point, remount
    subprocess.run(["umount", "-l", str(point)], capture_output=True)


def test_a_read_only_nar_home_is_read_and_never_called_damaged(cli, write, small_mount, monkeypatch):
    point, remount = small_mount
    monkeypatch.setenv("NAR_HOME", str(point / "home"))
    model = write("tiny.py", mlp_source(4, 8, 2))
    assert cli("similar", model, "-k", "1").exit_code == 0
    (point / "home" / "nar.db-shm").unlink(missing_ok=True)  # as after a writer was killed: SQLite needs it
    remount("ro")
    info = cli("cache", "info", "--json")
    assert info.exit_code == 0 and json.loads(info.stdout)["health"] == "ok", info.output
    assert cli("scan", model).exit_code == 0  # cached: read, not written
    assert cli("similar", "resnet50", "-k", "1").exit_code == 0
    line = one_error_line(cli("scan", write("other.py", mlp_source(5, 8, 2))), "read-only file system")
    assert "damaged" not in line and "cache clear" not in line
    result = cli("index", "build")  # its progress lines come first
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines()[-1].startswith("error: cannot write the index")
    assert "read-only file system" in result.stderr


def test_a_full_nar_home_says_so_and_leaves_nothing_behind(cli, write, small_mount, monkeypatch):
    point, _ = small_mount
    home = point / "home"
    monkeypatch.setenv("NAR_HOME", str(home))
    assert cli("scan", write("tiny.py", mlp_source(4, 8, 2))).exit_code == 0
    before = sorted(p.name for p in home.rglob("*"))
    with open(point / "fill", "wb") as f:  # fill the disk
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    for argv in (["similar", write("new.py", mlp_source(7, 8, 2)), "-k", "1"], ["scan", write("new2.py", mlp_source(9, 8, 2))]):
        result = cli(*argv)
        line = one_error_line(result, "full disk")
        assert "damaged" not in line
    assert not list(home.rglob("*.tmp"))
    (point / "fill").unlink()
    info = json.loads(cli("cache", "info", "--json").stdout)
    assert info["health"] == "ok" and info["scans"] == 1 and sorted(p.name for p in home.rglob("*")) >= before


def test_an_index_build_on_a_full_disk_leaves_no_temporary(tmp_path, monkeypatch):
    import annoy
    import numpy as np

    from narcli.search.index import IndexError_, build_index

    class Full(annoy.AnnoyIndex):
        def save(self, path, *args):
            with open(path, "wb") as f:
                f.write(b"partial")
            raise OSError("Unable to open: No space left on device (28)")

    monkeypatch.setattr(annoy, "AnnoyIndex", Full)
    with pytest.raises(IndexError_, match="full disk"):
        build_index(tmp_path / "user.json", ["a", "b"], np.eye(2, dtype=np.float32))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("exc, words", [
    (OSError(30, "Read-only file system"), "read-only"), (OSError(28, "No space left on device"), "full disk"),
    (OSError("Unable to open: No space left on device (28)"), "full disk"), (OSError(13, "Permission denied"), "permission"),
    (__import__("sqlite3").OperationalError("database or disk is full"), "full disk"),
    (__import__("sqlite3").OperationalError("attempt to write a readonly database"), "read-only"),
])
def test_storage_trouble_is_named(exc, words):
    from narcli.errors import storage_trouble

    assert words in storage_trouble(exc)


def test_a_damaged_cache_is_still_called_damaged(cli, nar_home):
    from narcli.errors import storage_trouble

    nar_home.mkdir(parents=True)
    (nar_home / "nar.db").write_bytes(b"not a database at all" * 100)
    assert storage_trouble(__import__("sqlite3").DatabaseError("file is not a database"), nar_home) is None
    one_error_line(cli("cache", "info"), "damaged")


# 10: a file too big to read is refused by its size first
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
