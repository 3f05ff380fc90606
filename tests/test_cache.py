"""The scan cache: what `nar scan` stores and reuses, `nar cache info/list/clear`, cached names and cache hits,
a damaged or foreign store, and a cache that bad input leaves untouched."""

import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys

import pytest

from narcli.encode.features import FEATURES_VERSION
from narcli.graph.arch_graph import ArchGraph, Node
from narcli.scan.cache import Cache, ModelRecord

from .conftest import FIXTURES, mlp_source, run_nar
from .test_bad_input import TINY, one_error_line

TINY_ONNX = FIXTURES / "tiny.onnx"

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


def test_one_record_is_read_by_its_id(cli, nar_home):
    assert Cache().record("nothing:0") is None  # no cache yet
    data = scan_json(cli, FIXTURES / "tiny.onnx")["models"][0]
    record = Cache().record(data["id"])
    assert record is not None and record.cached and record.graph_hash == data["graph_hash"]
    assert record == next(r for r in Cache().records() if r.id == data["id"])
    assert Cache().record(data["id"] + "0") is None


def test_a_cached_model_gone_between_listing_and_reading_is_one_line(cli, nar_home, monkeypatch):
    from narcli.errors import UsageError
    from narcli.scan.targets import find_cached_record

    data = scan_json(cli, FIXTURES / "tiny.onnx")["models"][0]
    assert find_cached_record(data["name"], Cache()).id == data["id"]
    monkeypatch.setattr(Cache, "record", lambda self, model_id: None)  # another process removed it
    with pytest.raises(UsageError, match="no longer in the cache"):
        find_cached_record(data["name"], Cache())


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
    # what a lookup sees while another process has created the file (in WAL mode) but not yet its tables
    nar_home.mkdir(parents=True)
    sqlite3.connect(nar_home / "nar.db").execute("pragma journal_mode = wal").connection.close()
    result = cli("scan", FIXTURES / "tiny.onnx", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["models"][0]["cached"] is False
    assert Cache().info()["scans"] == 1


def _another_programs_database(path):
    conn = sqlite3.connect(path)
    conn.execute("create table accounts (owner text, balance integer)")
    conn.execute("insert into accounts values ('someone', 100)")
    conn.commit()
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize("store, reader", [("nar.db", ["scan", TINY_ONNX]), ("bench.db", ["predict", "resnet50"])])
def test_a_store_that_is_a_symlink_is_refused_and_its_target_untouched(cli, nar_home, tmp_path, store, reader):
    before = _another_programs_database(tmp_path / "other.db")
    nar_home.mkdir(parents=True)
    (nar_home / store).symlink_to(tmp_path / "other.db")
    for command in (reader, ["cache", "info"], ["cache", "clear", "-y"]):
        result = cli(*command)
        assert result.exit_code == 1, (command, result.output)
        one_error_line(result, "symlink", store)
    assert (tmp_path / "other.db").read_bytes() == before and not (tmp_path / "other.db-wal").exists()
    assert (nar_home / store).is_symlink()


def test_another_programs_database_is_not_taken_for_the_cache(cli, nar_home):
    nar_home.mkdir(parents=True)
    before = _another_programs_database(nar_home / "nar.db")
    for command in (["scan", TINY_ONNX], ["cache", "list"], ["cache", "info"], ["cache", "clear", "-y"]):
        result = cli(*command)
        assert result.exit_code == 1, (command, result.output)
        one_error_line(result, "not nar's", "accounts")
    assert (nar_home / "nar.db").read_bytes() == before  # no tables of ours, no WAL mode
    assert not (nar_home / "nar.db-wal").exists()


# -- every store nar keeps under NAR_HOME, damaged three ways (issue 43, item 5) ------------------
def _populate_every_store(home):
    """A NAR_HOME holding something in each store: a scan, measurements, a zoo of one's own, a
    device head, featurised graphs, an index."""
    import numpy as np
    from typer.testing import CliRunner

    from narcli.bench import calibrate, store, transfer
    from narcli.cli.app import app
    from narcli.encode.feature_cache import save_features
    from narcli.encode.features import encode_graph
    from narcli.search.index import build_index
    from narcli.zoo.build import ZooWriter
    from narcli.zoo.store import Zoo

    from .conftest import write_file

    assert CliRunner().invoke(app, ["scan", str(TINY_ONNX)]).exit_code == 0
    graph = Cache().graph(Cache().records()[0].graph_key)
    result = {"median_ms": 1.5, "iqr_ms": 0.1, "runs": 3, "device": {"kind": "cpu", "name": "x", "key": "k"}}
    for graph_hash in (graph.content_hash(), Zoo().resolve("resnet50").graph_hash):
        store.save(graph_hash, 1, "k", "m", result)
    writer = ZooWriter(home / "zoo.db")
    writer.conn.execute("insert or replace into sources values ('mine', 'mine', 50, 'my models', '1', 1)")
    writer.store({"id": "mine/net", "source": "mine", "name": "net", "family": "mlp", "status": "ok",
                  "graph_hash": graph.content_hash(), "params": graph.params, "macs": graph.macs,
                  "nodes": graph.num_nodes, "edges": len(graph.edges), "depth": graph.depth, "inputs": "[]",
                  "top_ops": "[]"}, graph.to_json())
    writer.conn.execute("pragma wal_checkpoint(truncate)")
    writer.close()
    head = transfer.ridge_fit(np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]), np.array([0.0, 1.0, 2.0]))
    write_file(home / "devices" / "local.json", json.dumps(head | {"columns": list(calibrate.CPU_COLUMNS),
                                                                   "models": [], "name": "local"}))
    save_features(home / "features" / f"items-v{FEATURES_VERSION}.npz", {"h": encode_graph(graph)})
    build_index(home / "index" / "user.json", ["a", "b", "c"], np.eye(3, dtype=np.float32))
    conn = sqlite3.connect(home / "nar.db")
    conn.execute("pragma wal_checkpoint(truncate)")  # everything in the file that is damaged
    conn.close()


def _garbage(path):
    path.write_bytes(b"\x13not what nar wrote\x00" * 400)


def _truncated(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _sqlite_value(table, column, key_column, key=None):
    def damage(path):
        conn = sqlite3.connect(path)
        where = f" where {key_column} = (select {key_column} from {table} limit 1)" if key is None else ""
        conn.execute(f"update {table} set {column} = ?{where}", (b"\x78\x9c not zlib, not json",))
        conn.commit()
        conn.close()
    return damage


def _not_a_head(path):
    path.write_text(json.dumps({"mean": "x", "weights": [1.0]}))


def _bad_layout(path):
    import zipfile

    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members["layout.npy"] = b"\x93NUMPY garbage"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _flipped_index(path):
    ann = next(path.parent.glob("user-*.ann"))
    data = bytearray(ann.read_bytes())
    data[8:40] = bytes(32)
    ann.write_bytes(bytes(data))


# store -> (the file damaged, under NAR_HOME; commands that read it; how its values are made undecodable)
STORES = {
    "nar.db": ("nar.db", [["scan", TINY_ONNX, "--graph"]], _sqlite_value("graphs", "data", "key")),
    "bench.db": ("bench.db", [["scan", TINY_ONNX], ["predict", "resnet50"]],
                 _sqlite_value("measurements", "info", "rowid", key="all")),
    "zoo.db": ("zoo.db", [["scan", "mine/net", "--graph"]], _sqlite_value("graphs", "data", "hash")),
    "devices": ("devices/local.json", [["predict", "resnet50"]], _not_a_head),
    "features": (f"features/items-v{FEATURES_VERSION}.npz", [], _bad_layout),  # read by training, which featurises again
    "index": ("index/user.json", [], _flipped_index),  # read by searches, which rebuild it
}
DAMAGE = {"garbage": _garbage, "truncated": _truncated, "undecodable": None}


@pytest.fixture(scope="module")
def populated_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("populated") / "nar-home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NAR_HOME", str(home))
        _populate_every_store(home)
    return home


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("store", sorted(STORES))
class TestEveryDamagedStore:
    """Each store nar keeps, damaged: read, it gives one line naming the file and the repair (or, for
    a cache nar makes again, the answer); `cache info` names it; `cache clear -y` repairs it."""

    @pytest.fixture(autouse=True)
    def damaged(self, populated_home, nar_home, store, damage):
        import shutil

        shutil.copytree(populated_home, nar_home)
        name, _, undecodable = STORES[store]
        (DAMAGE[damage] or undecodable)(nar_home / name)
        return nar_home / name

    def test_reading_it_gives_one_line_naming_the_file_and_the_repair(self, cli, store, damaged):
        for command in STORES[store][1]:
            result = cli(*command)
            assert result.exit_code == 1, (command, result.output)
            one_error_line(result, "damaged", "nar cache clear")
            assert damaged.name in result.stderr

    def test_info_names_it_and_clear_repairs_it(self, cli, store, damaged):
        info = cli("cache", "info", "--json")
        assert info.exit_code == 1
        assert str(damaged) in json.loads(info.stdout)["damaged"][0] or \
            str(damaged.parent) in json.loads(info.stdout)["damaged"][0]
        one_error_line(cli("cache", "info"), "is damaged", "nar cache clear")
        cleared = cli("cache", "clear", "-y")
        assert cleared.exit_code == 0, cleared.output
        after = cli("cache", "info", "--json")
        assert after.exit_code == 0 and json.loads(after.stdout)["damaged"] == [], after.output
        for command in STORES[store][1]:  # read again: what the damage lost is gone, nothing is damaged
            again = cli(*command)
            assert "damaged" not in again.output and "Traceback" not in again.output, (command, again.output)


def test_a_damaged_feature_cache_is_featurised_again_when_read(populated_home, nar_home):
    import shutil

    from narcli.encode.feature_cache import cached_features, file_problem, load_features

    shutil.copytree(populated_home, nar_home)
    path = nar_home / "features" / f"items-v{FEATURES_VERSION}.npz"
    good = load_features(path)
    _bad_layout(path)
    assert file_problem(path) is not None
    built = []
    assert cached_features("items", lambda: built.append(1) or good).keys() == good.keys() and built == [1]
    assert file_problem(path) is None


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


def test_the_cache_is_untouched_by_every_case_above(cli, write):
    model = write("tiny.py", TINY)
    assert cli("scan", model).exit_code == 0
    before = Cache().info()
    for args in (["scan", ""], ["scan", model, "--timeout", "nan"], ["scan", model, "--input-shape", "1,²"],
                 ["zoo", "show", "a" * 5000], ["scan", model, "--model", "system('x')"]):
        assert cli(*args).exit_code != 0
    assert Cache().info() == before


# a cache hit shows the file that was asked for
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


def test_a_damaged_cache_is_still_called_damaged(cli, nar_home):
    from narcli.errors import storage_trouble

    nar_home.mkdir(parents=True)
    (nar_home / "nar.db").write_bytes(b"not a database at all" * 100)
    assert storage_trouble(__import__("sqlite3").DatabaseError("file is not a database"), nar_home) is None
    one_error_line(cli("cache", "info"), "damaged")


# a "no" on a pipe is not consent
def test_cache_clear_without_a_terminal_needs_yes(write, nar_home):
    env = {**__import__("os").environ, "NAR_HOME": str(nar_home)}
    model = write("tiny.py", mlp_source(4, 8, 2))
    subprocess.run([sys.executable, "-m", "narcli", "scan", str(model)], env=env, check=True, capture_output=True)
    refused = subprocess.run([sys.executable, "-m", "narcli", "cache", "clear"], input="n\n", env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "pass -y" in refused.stderr, refused.stderr
    info = subprocess.run([sys.executable, "-m", "narcli", "cache", "info", "--json"], env=env, capture_output=True,
                          text=True, check=True)
    assert '"scans": 1' in info.stdout  # nothing was deleted


# every cached model has a unique name, shown by `nar cache list`; full paths name models too
def test_cached_models_have_unique_names(cli, write, tmp_path, monkeypatch):
    import json

    path = write("small_cnn.py", mlp_source(4, 8, 2))
    for shape in ("1,4", "2,4"):
        assert cli("scan", path, "-i", shape).exit_code == 0
    listed = json.loads(cli("cache", "list", "--json").stdout)
    names = [m["cache_name"] for m in listed]
    assert len(names) == 2 and len(set(names)) == 2
    assert names[0] in cli("cache", "list").output
    ambiguous = cli("similar", "cache:Net")
    assert ambiguous.exit_code == 2 and names[0] in ambiguous.stderr and "float32[2,4]" in ambiguous.stderr
    for name in names:
        result = cli("similar", name, "-k", "3", "--json")
        assert result.exit_code == 0, result.output
        neighbours = json.loads(result.stdout)["results"][0]["neighbours"]
        cached = [n["name"] for n in neighbours if n["source"] == "cache"]
        assert len(cached) == len(set(cached))  # the other scan of the same file: not twice
    by_path = cli("similar", f"cache:{path}", "-k", "1")
    assert "ambiguous" in by_path.stderr  # a full path names the file (here two scans of it)
    write("other.py", mlp_source(5, 8, 2))
    cli("scan", tmp_path / "other.py")
    assert cli("similar", f"cache:{tmp_path / 'other.py'}", "-k", "1").exit_code == 0
