import json
import multiprocessing
import sqlite3
import subprocess
import sys

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.scan.cache import Cache, ModelRecord

from .conftest import FIXTURES, run_nar

NET = """
    from torch import nn
    from blocks import Block
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = Block()
        def forward(self, x):
            return self.body(x)
"""
BLOCK = """
    from torch import nn
    class Block(nn.Sequential):
        def __init__(self):
            super().__init__(nn.Linear(4, 8), nn.ReLU())
"""


def scan_json(cli, *args):
    result = cli("scan", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_second_scan_is_a_cache_hit_and_identical(cli, write):
    path = write("m/net.py", NET)
    write("m/blocks.py", BLOCK)
    first = scan_json(cli, path)["models"][0]
    second = scan_json(cli, path)["models"][0]
    assert (first["cached"], second["cached"]) == (False, True)
    for key in ("name", "params", "macs", "graph_hash", "inputs", "tracer"):
        assert first[key] == second[key]


def test_editing_an_imported_sibling_invalidates_the_cache(cli, write):
    path = write("m/net.py", NET)
    write("m/blocks.py", BLOCK)
    assert scan_json(cli, path)["models"][0]["params"] == 40
    write("m/blocks.py", BLOCK.replace("nn.Linear(4, 8)", "nn.Linear(4, 16)"))
    again = scan_json(cli, path)["models"][0]
    assert again["cached"] is False and again["params"] == 80


def test_input_spec_and_model_are_part_of_the_key(cli, write):
    path = write("m/net.py", NET)
    write("m/blocks.py", BLOCK)
    scan_json(cli, path)
    other = scan_json(cli, path, "--input-shape", "2,4")["models"][0]
    assert other["cached"] is False and other["inputs"] == [{"shape": [2, 4], "dtype": "float32"}]


def test_no_cache_neither_reads_nor_writes(cli, write):
    path = write("m/net.py", NET)
    write("m/blocks.py", BLOCK)
    assert scan_json(cli, path, "--no-cache")["models"][0]["cached"] is False
    assert Cache().info()["scans"] == 0


def test_graph_is_stored_and_returned(cli):
    data = scan_json(cli, FIXTURES / "tiny.onnx", "--graph")["models"][0]
    graph = ArchGraph.from_dict(data["graph"])
    assert graph.content_hash() == data["graph_hash"]
    cached = scan_json(cli, FIXTURES / "tiny.onnx", "--graph")["models"][0]
    assert cached["cached"] and cached["graph"] == data["graph"]


def test_database_uses_wal_and_info_and_clear_work(cli, nar_home):
    scan_json(cli, FIXTURES / "tiny.onnx")
    conn = sqlite3.connect(nar_home / "nar.db")
    assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"
    conn.close()
    info = json.loads(cli("cache", "info", "--json").stdout)
    assert info["scans"] == 1 and info["models"] == 1 and info["graphs"] == 1
    assert cli("cache", "clear", "--yes").exit_code == 0
    assert json.loads(cli("cache", "info", "--json").stdout)["scans"] == 0
    assert scan_json(cli, FIXTURES / "tiny.onnx")["models"][0]["cached"] is False


def test_corrupt_cache_is_reported_not_a_traceback(cli, nar_home):
    nar_home.mkdir(parents=True)
    (nar_home / "nar.db").write_bytes(b"this is not sqlite" * 100)
    result = cli("scan", FIXTURES / "tiny.onnx")
    assert result.exit_code == 1 and "cache" in result.stderr and "Traceback" not in result.stderr
    assert cli("cache", "clear", "--yes").exit_code == 0
    assert cli("scan", FIXTURES / "tiny.onnx").exit_code == 0


def test_cache_hit_does_not_import_torch(write, nar_home):
    path = write("m/net.py", NET)
    write("m/blocks.py", BLOCK)
    run_nar("scan", path, check=True)
    probe = (
        "import sys\n"
        "from narcli.cli.app import app\n"
        f"try:\n    app(['scan', {str(path)!r}])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'sqlite_utils' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "from cache" in done.stdout


def test_concurrent_scans_share_the_database(write):
    paths = []
    for i in range(4):
        paths.append(write(f"c{i}/net.py", NET.replace("Block()", f"Block()  # {i}")))
        write(f"c{i}/blocks.py", BLOCK)
    procs = [subprocess.Popen([sys.executable, "-m", "narcli", "scan", str(p)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for p in paths]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    assert Cache().info()["scans"] == 4


def _store_many(path, worker, barrier):
    graph = ArchGraph([Node("input"), Node("relu")], [(0, 1)])
    record = ModelRecord(f"m{worker}", "src", "py", "export", [], None, 0, 0, 2, 2, 1, graph.content_hash(), [])
    barrier.wait()  # all writers hit the fresh database at once
    for j in range(5):
        Cache(path).store(f"{worker}-{j}", "src", [record], [graph])
        assert Cache(path).lookup(f"{worker}-{j}")[0].name == f"m{worker}"


def test_simultaneous_writers_on_a_fresh_database(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(6)
    path = tmp_path / "fresh" / "nar.db"
    workers = [ctx.Process(target=_store_many, args=(path, i, barrier)) for i in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0] * 6
    assert Cache(path).info()["scans"] == 30


def test_database_whose_schema_is_not_made_yet_reads_as_empty(cli, nar_home):
    # what a lookup sees while another process has created the file but not yet its tables
    nar_home.mkdir(parents=True)
    sqlite3.connect(nar_home / "nar.db").execute("create table unrelated (x)").connection.close()
    result = cli("scan", FIXTURES / "tiny.onnx", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["models"][0]["cached"] is False
    assert Cache().info()["scans"] == 1
