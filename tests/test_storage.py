"""Where nar keeps its data (NAR_HOME) and what goes wrong there: NAR_HOME that is a file, an index
folder that is a file, a read-only or full disk, storage trouble named as such, counts too big for
SQLite stored clamped, and the temporaries left by killed or failed index builds."""

import json
import os

import pytest

from .conftest import mlp_source
from .test_bad_input import TINY, one_error_line


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


# NAR_HOME that is a file: every command says so in one line
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


# a read-only or full NAR_HOME says so, leaves nothing behind, and never calls an intact cache damaged
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
