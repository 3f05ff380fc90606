"""Reading the zoo: name resolution, filters, families, bad databases, the `nar zoo` commands, and
zoo-source plugins (`nar plugins`)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from narcli.errors import ZooError
from narcli.zoo import plugins
from narcli.zoo.build import BuildOptions, build_zoo
from narcli.zoo.store import Zoo
from tests import fake_source
from tests.conftest import run_nar


@pytest.fixture(scope="module")
def fake_zoo(tmp_path_factory):
    """A zoo built from the two fake sources (the well-behaved models only)."""
    db = tmp_path_factory.mktemp("zoo") / "zoo.db"
    plugins.register(fake_source, name="fake-zoo")
    try:
        names = ["mlp_*", "cnn_*", "resnet*", "broken"]
        build_zoo(BuildOptions(db=db, sources=["fake", "other"], patterns=names, jobs=2, timeout=60))
    finally:
        plugins.unregister("fake-zoo")
    return db


@pytest.fixture
def zoo(fake_zoo, monkeypatch):
    monkeypatch.setenv("NAR_ZOO", str(fake_zoo))
    return Zoo()


def test_exact_id_wins(zoo):
    assert zoo.resolve("ot/resnet50").id == "ot/resnet50"
    assert zoo.resolve("FK/CNN_TINY").id == "fk/cnn_tiny"


def test_a_bare_name_in_several_sources_goes_to_the_best_ranked_one(zoo):
    assert zoo.resolve("resnet50").id == "fk/resnet50"


def test_a_unique_prefix_resolves(zoo):
    assert zoo.resolve("resnet1").id == "ot/resnet101"


def test_an_ambiguous_prefix_lists_the_candidates(zoo):
    with pytest.raises(ZooError, match="ambiguous: fk/cnn_base, fk/cnn_tiny"):
        zoo.resolve("cnn")


def test_an_unknown_name_suggests_close_ones(zoo):
    with pytest.raises(ZooError, match="no model 'resnt50' .*did you mean .*resnet50"):
        zoo.resolve("resnt50")
    assert zoo.resolve("resnet5").id == "fk/resnet50"  # a prefix of one name only


def test_a_failed_model_says_why(zoo):
    with pytest.raises(ZooError, match="failed to build .*cannot be built"):
        zoo.resolve("fk/broken")


def test_filters_and_globs(zoo):
    assert [m.id for m in zoo.models(family="mlp")] == ["fk/mlp_small", "fk/mlp_small_copy", "fk/mlp_wide"]
    assert [m.id for m in zoo.models("resnet*")] == ["fk/resnet50", "ot/resnet101", "ot/resnet50"]
    assert [m.id for m in zoo.models(source="other", coarse="convolutional")] == ["ot/resnet101", "ot/resnet50"]
    assert [m.id for m in zoo.models(failed=True)] == ["fk/broken"]
    assert zoo.models(task="no-such-task") == []


def test_families_count_models_and_distinct_architectures(zoo):
    families = {f["family"]: f for f in zoo.families()}
    assert families["mlp"]["models"] == 3 and families["mlp"]["architectures"] == 2
    assert families["convnet"]["sources"] == ["fake", "other"]
    assert families["convnet"]["coarse"] == "convolutional"


def test_the_user_zoo_is_read_beside_the_bundled_one(zoo, fake_zoo, nar_home, monkeypatch):
    nar_home.mkdir(parents=True, exist_ok=True)
    user = nar_home / "zoo.db"
    shutil.copy(fake_zoo, user)
    with sqlite3.connect(user) as conn:
        conn.execute("update models set id = 'fk/mine', name = 'mine' where id = 'fk/cnn_tiny'")
    assert Zoo().resolve("mine").id == "fk/mine"
    assert Zoo().resolve("fk/cnn_base").id == "fk/cnn_base"


def test_a_missing_zoo_says_how_to_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv("NAR_ZOO", str(tmp_path / "nope.db"))
    with pytest.raises(ZooError, match="missing; rebuild it with `nar zoo build --db"):
        Zoo().resolve("resnet50")


def test_a_corrupt_zoo_says_how_to_rebuild(tmp_path, monkeypatch):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"\x00garbage" * 512)
    monkeypatch.setenv("NAR_ZOO", str(bad))
    with pytest.raises(ZooError, match="unreadable .*nar zoo build"):
        Zoo().models()


# -- the commands -----------------------------------------------------------------------------------
def test_zoo_show_prints_the_record_without_importing_torch(fake_zoo):
    code = ("import sys; from narcli.cli.app import app; sys.argv = ['nar', 'zoo', 'show', 'resnet50'];\n"
            "try:\n    app()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "assert 'torch' not in sys.modules, 'torch was imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "NAR_ZOO": str(fake_zoo), "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    for expected in ("fk/resnet50", "convnet", "convolutional", "image-classification", "params", "conv2d"):
        assert expected in done.stdout


def test_zoo_list_and_families_commands(cli, fake_zoo, monkeypatch):
    monkeypatch.setenv("NAR_ZOO", str(fake_zoo))
    monkeypatch.setenv("COLUMNS", "200")
    listed = cli("zoo", "list", "--family", "mlp")
    assert listed.exit_code == 0, listed.output
    assert "fk/mlp_wide" in listed.stdout and "fk/cnn_tiny" not in listed.stdout
    families = cli("zoo", "families")
    assert families.exit_code == 0 and "convnet" in families.stdout
    failed = cli("zoo", "list", "--failed")
    assert "build: ValueError" in failed.stdout


def test_zoo_commands_fail_cleanly(cli, fake_zoo, tmp_path, monkeypatch):
    monkeypatch.setenv("NAR_ZOO", str(fake_zoo))
    unknown = cli("zoo", "show", "resnt50")
    assert unknown.exit_code == 1 and "did you mean" in unknown.stderr and "Traceback" not in unknown.output
    nothing = cli("zoo", "list", "--family", "nosuchfamily")
    assert nothing.exit_code == 1 and "no zoo models match family=nosuchfamily" in nothing.stderr
    monkeypatch.setenv("NAR_ZOO", str(tmp_path / "missing.db"))
    missing = run_nar("zoo", "show", "resnet50", env={**os.environ, "NAR_ZOO": str(tmp_path / "missing.db")})
    assert missing.returncode == 1 and "nar zoo build" in missing.stderr and "Traceback" not in missing.stderr


def test_plugins_lists_the_fake_source(cli):
    plugins.register(fake_source, name="fake-cli")
    try:
        result = cli("plugins", "--json")
    finally:
        plugins.unregister("fake-cli")
    assert result.exit_code == 0, result.output
    found = {p["name"]: p for p in json.loads(result.stdout)}
    assert [s["name"] for s in found["fake-cli"]["sources"]] == ["fake", "other"]


class FailingHook:
    """A plugin whose hook raises, as a third-party plugin broken by an upgrade would."""

    @plugins.hookspecs.hookimpl
    def nar_zoo_sources(self):
        raise RuntimeError("this plugin is broken")


def test_a_broken_plugin_is_named_and_the_others_still_listed(cli, tmp_path, monkeypatch):
    # one that cannot even be imported, installed as an entry point; one whose hook raises
    dist = tmp_path / "broken_nar_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-nar-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[nar]\nunimportable = broken_nar_plugin_module\n")
    (tmp_path / "broken_nar_plugin_module.py").write_text("raise ImportError('needs a library not installed')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_manager", None)  # load the entry points afresh
    monkeypatch.setattr(plugins, "_broken", {})
    plugins.register(fake_source, name="fake-cli")
    plugins.register(FailingHook(), name="failing-hook")
    result = cli("plugins", "--json")
    table = cli("plugins")
    build = cli("zoo", "build", "--source", "nosuch", "--db", tmp_path / "zoo.db")
    assert result.exit_code == 0 and table.exit_code == 0, result.output + table.output
    found = {p["name"]: p for p in json.loads(result.stdout)}
    assert "needs a library not installed" in found["unimportable"]["error"]
    assert "RuntimeError: this plugin is broken" in found["failing-hook"]["error"]
    assert [s["name"] for s in found["fake-cli"]["sources"]] == ["fake", "other"] and not found["fake-cli"]["error"]
    assert "unimportable" in table.stdout and "broken" in table.stdout and "fake-cli" in table.stdout
    assert build.exit_code == 2 and "plugin failing-hook is broken" in build.stderr


def test_scan_of_a_zoo_name_shows_its_record(cli, fake_zoo, monkeypatch):
    monkeypatch.setenv("NAR_ZOO", str(fake_zoo))
    result = cli("scan", "resnet50", "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["name"] == "fk/resnet50" and model["kind"] == "zoo" and model["params"] > 0
    graph = cli("scan", "fk/cnn_tiny", "--graph")
    assert json.loads(graph.stdout)["models"][0]["graph"]["nodes"]
    unknown = cli("scan", "resnt50")
    assert unknown.exit_code == 1 and "did you mean" in unknown.stderr


def test_zoo_embeddings_are_stored_as_float16_and_read_as_float32():
    import numpy as np

    from narcli.zoo.store import pack_vector, unpack_vector

    vector = np.random.default_rng(0).standard_normal(1024).astype(np.float32)
    vector /= np.linalg.norm(vector)
    stored = pack_vector(vector.tobytes())
    assert len(stored) < 0.51 * len(vector.tobytes())
    back = np.frombuffer(unpack_vector(stored), dtype=np.float32)
    assert back.shape == vector.shape and float(back @ vector) > 0.9999
    assert unpack_vector(vector.tobytes()) == vector.tobytes()  # a zoo from before: float32 as it was


def test_a_source_whose_library_is_missing_names_the_pip_command_with_torch_pinned():
    from narcli.zoo.sources import ZooSource, module_version

    class Segmentation(ZooSource):
        name = "seg"
        library = "no_such_segmentation_library"
        distribution = "no-such-segmentation-library"

    reason = Segmentation().missing()
    torch = module_version("torch").split("+")[0]
    assert reason == f"needs `no_such_segmentation_library` (pip install no-such-segmentation-library torch=={torch})"
    assert Segmentation().version() == ""


# a missing plugin is named, with the one command that installs it and keeps the installed torch
def test_a_missing_zoo_source_names_its_plugin_and_a_torch_keeping_install(cli, monkeypatch):
    import json

    from narcli.zoo import plugins
    from narcli.zoo.sources import module_version

    monkeypatch.setattr(plugins, "zoo_sources", lambda: {})  # as on a machine with no plugins
    torch = module_version("torch").split("+")[0]
    line = plugins.missing_source_message("hf/bert", "transformers")
    assert "plugin nar-transformers" in line and f"plugins/nar-transformers torch=={torch}`" in line
    listed = {p["name"]: p for p in json.loads(cli("plugins", "--json").stdout)}
    assert listed["nar-timm"]["installed"] is False and listed["nar-timm"]["sources"] == ["timm"]
    assert f"plugins/nar-timm torch=={torch}" in listed["nar-timm"]["install"]
    assert "not installed nar-timm (timm): pip install" in cli("plugins").output.replace("\n", " ")


# did-you-mean for zoo list filters
def test_zoo_list_suggests_close_filter_values(cli):
    result = cli("zoo", "list", "-t", "image-clasification")
    assert result.exit_code == 1 and "did you mean image-classification" in result.stderr


@pytest.mark.parametrize("args", [["zoo", "list", "--family", "vit"], ["zoo", "list", "--family", "nosuch"],
                                  ["zoo", "show", "resnet50"]])
def test_zoo_list_and_show_read_the_zoo_without_numpy_or_torch(args):
    # `nar zoo list` imported numpy (0.1-0.2 s of a 0.3 s budget) through the filter check it
    # borrowed from `nar similar`
    probe = ("import sys\nfrom narcli.cli.app import app\n"
             f"try:\n    app({args!r})\nexcept SystemExit:\n    pass\n"
             "assert 'numpy' not in sys.modules and 'torch' not in sys.modules, 'imported'\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "vit" in done.stdout or "resnet" in done.stdout or "nosuch" in done.stderr


def test_a_graph_two_equally_common_families_share_is_named_after_the_root_of_their_design(fake_zoo, tmp_path,
                                                                                            monkeypatch):
    from narcli.zoo import lineage

    db = tmp_path / "zoo.db"
    shutil.copy(fake_zoo, db)
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("select * from models where status = 'ok' and source = 'fake' order by id").fetchone())
        # one graph, two families of two models each: the derived one's ids sort first
        for name, family in (("aa_child", "child"), ("ab_child", "child"), ("zz_root", "root"), ("zy_root", "root")):
            values = {**row, "id": f"fake/{name}", "name": name, "family": family, "graph_hash": "sharedhash"}
            conn.execute(f"insert into models ({','.join(values)}) values ({','.join('?' * len(values))})",
                         tuple(values.values()))
    monkeypatch.setattr(lineage, "lineage_table", lambda: {"child": "root"})
    with Zoo([db]) as zoo:
        assert [m.id for m in zoo.models_by_hash(["sharedhash"])["sharedhash"]] == \
            ["fake/zy_root", "fake/zz_root", "fake/aa_child", "fake/ab_child"]


def test_sources_by_hash_names_every_source_that_lists_a_graph(fake_zoo, tmp_path):
    db = tmp_path / "zoo.db"
    shutil.copy(fake_zoo, db)
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("select * from models where status = 'ok' and source = 'fake' order by id").fetchone())
        for source, status in (("other", "ok"), ("third", "ok"), ("broken", "failed")):
            values = {**row, "id": f"{source}/{row['name']}", "source": source, "status": status}
            conn.execute(f"insert into models ({','.join(values)}) values ({','.join('?' * len(values))})",
                         tuple(values.values()))
    with Zoo([db]) as zoo:
        listed = zoo.sources_by_hash([row["graph_hash"], "no-such-hash"])
    # a failed row lists nothing; a hash no row has is left out
    assert listed == {row["graph_hash"]: frozenset({"fake", "other", "third"})}
