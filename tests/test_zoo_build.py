"""`nar zoo build` with a tiny fake source: labels, aliases, failures, resuming, locking."""

import contextlib
import sqlite3

import pytest

from narcli import hookimpl
from narcli.errors import UsageError, ZooError
from narcli.sources import ZooEntry
from narcli.zoo import plugins
from narcli.zoo.build import BuildOptions, ZooWriter, build_zoo
from narcli.zoo.store import Zoo
from tests import fake_source


@pytest.fixture(autouse=True)
def fake_plugin():
    plugins.register(fake_source, name="fake-tests")
    yield
    plugins.unregister("fake-tests")


def options(db, **kwargs):
    return BuildOptions(db=db, sources=kwargs.pop("sources", ["fake"]), timeout=kwargs.pop("timeout", 20),
                        jobs=kwargs.pop("jobs", 2), **kwargs)


def statuses(db):
    with contextlib.closing(sqlite3.connect(db)) as conn:  # closed now: an open reader stops compaction
        return dict(conn.execute("select id, coalesce(reason, status) from models"))


def test_build_records_every_model_and_every_failure_with_its_reason(tmp_path):
    db = tmp_path / "zoo.db"
    [report] = build_zoo(options(db))
    assert (report.listed, report.ok, report.failed) == (10, 6, 4)
    found = statuses(db)
    assert found["fk/broken"] == "build: ValueError"
    assert found["fk/untraceable"] == "trace: RuntimeError"
    assert found["fk/hangs"] == "timeout"
    assert found["fk/crashes"] == "crash (SIGSEGV)"
    assert found["fk/mlp_small"] == "ok"
    assert report.reasons == {"build: ValueError": 1, "trace: RuntimeError": 1, "timeout": 1, "crash (SIGSEGV)": 1}
    with sqlite3.connect(db) as conn:
        summary = conn.execute("select summary from builds").fetchone()[0]
    assert "crash (SIGSEGV)" in summary


def test_identical_graphs_are_aliases_of_one_architecture(tmp_path):
    db = tmp_path / "zoo.db"
    build_zoo(options(db, patterns=["mlp_*"]))
    zoo = Zoo([db])
    small = zoo.resolve("fk/mlp_small")
    assert zoo.aliases(small) == ["fk/mlp_small_copy"]
    assert zoo.resolve("fk/mlp_wide").graph_hash != small.graph_hash
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from graphs").fetchone()[0] == 2
    graph = zoo.graph(small)
    assert graph.content_hash() == small.graph_hash
    assert graph.op_histogram()["linear"] == 2


def test_labels_come_from_the_source_structure_and_the_table(tmp_path):
    db = tmp_path / "zoo.db"
    build_zoo(options(db, patterns=["mlp_small", "cnn_tiny"]))
    zoo = Zoo([db])
    mlp, cnn = zoo.resolve("fk/mlp_small"), zoo.resolve("fk/cnn_tiny")
    assert (mlp.family, mlp.coarse, mlp.labelled_by) == ("mlp", "mlp", "structure")
    assert (cnn.family, cnn.coarse) == ("convnet", "convolutional")
    assert (cnn.params, cnn.task, cnn.source) == (3 * 4 * 9 + 4 + 2 * (4 * 4 * 9 + 4) + 4 * 10 + 10,
                                                  "image-classification", "fake")


def test_a_second_build_skips_what_is_done_and_can_retry_failures(tmp_path):
    db = tmp_path / "zoo.db"
    build_zoo(options(db, patterns=["mlp_small", "broken"]))
    [again] = build_zoo(options(db, patterns=["mlp_small", "broken", "cnn_tiny"]))
    assert (again.listed, again.already, again.ok, again.failed) == (3, 2, 1, 0)
    [retry] = build_zoo(options(db, patterns=["mlp_small", "broken"], retry_failed=True))
    assert (retry.already, retry.failed) == (1, 1)


def test_limit_caps_new_models_per_source(tmp_path):
    db = tmp_path / "zoo.db"
    [report] = build_zoo(options(db, patterns=["mlp_*", "cnn_*"], limit=2))
    assert report.ok == 2
    [report] = build_zoo(options(db, patterns=["mlp_*", "cnn_*"], limit=2))
    assert (report.already, report.ok) == (2, 2)


def test_a_second_build_on_the_same_database_refuses(tmp_path):
    db = tmp_path / "zoo.db"
    holder = ZooWriter(db)
    try:
        with pytest.raises(ZooError, match="another `nar zoo build` is writing"):
            build_zoo(options(db, patterns=["mlp_small"]))
    finally:
        holder.close()
    [report] = build_zoo(options(db, patterns=["mlp_small"]))
    assert report.ok == 1


def test_unknown_source_names_close_ones(tmp_path):
    with pytest.raises(UsageError, match="unknown zoo source 'fak'.*did you mean fake"):
        build_zoo(options(tmp_path / "zoo.db", sources=["fak"]))


def test_a_corrupt_database_is_not_overwritten(tmp_path):
    db = tmp_path / "zoo.db"
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ZooError, match="unreadable"):
        build_zoo(options(db, patterns=["mlp_small"]))
    assert db.read_bytes() == b"this is not sqlite" * 100


def test_bad_options_are_refused_before_anything_is_written(tmp_path):
    db = tmp_path / "zoo.db"
    with pytest.raises(UsageError, match="--jobs must be at least 1"):
        build_zoo(options(db, jobs=0))
    assert not db.exists()


def test_relabelling_a_missing_zoo_does_not_create_one(tmp_path):
    from narcli.zoo.upgrade import relabel_zoo

    with pytest.raises(ZooError, match="missing; build it with `nar zoo build"):
        relabel_zoo(tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()


def test_a_reader_of_the_zoo_does_not_fail_the_build_at_compaction(tmp_path):
    """Leaving WAL mode at the end of a build needs the only connection: a `nar similar` that had
    read the zoo during the build made the whole build fail ("database is locked") after every row
    was committed. The compaction is skipped instead; the next build compacts."""
    db = tmp_path / "zoo.db"
    reader: list[sqlite3.Connection] = []

    class ReadWhileBuilding:
        def start(self, source, total):
            pass

        def advance(self, source, result):  # another process reading the zoo mid-build
            reader.append(sqlite3.connect(db))
            reader[-1].execute("select count(*) from models").fetchone()

    try:
        [report] = build_zoo(options(db, patterns=["mlp_small", "cnn_tiny"]), ReadWhileBuilding())
        assert report.ok == 2 and statuses(db) == {"fk/mlp_small": "ok", "fk/cnn_tiny": "ok"}
    finally:
        for conn in reader:
            conn.close()
    build_zoo(options(db, patterns=["mlp_small", "cnn_tiny"]))  # alone: compacts
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("pragma journal_mode").fetchone() == ("delete",)


class SizedSource(fake_source.FakeSource):
    """One architecture at two input sizes, as timm lists a 224-px and a 384-px Swin."""

    name = "sized"
    prefix = "sz"

    def list_models(self):
        return [ZooEntry("cnn_16px", "convnet", "image-classification", {"channels": 4, "side": 16}),
                ZooEntry("cnn_48px", "convnet", "image-classification", {"channels": 4, "side": 48})]


class SizedPlugin:
    @hookimpl
    def nar_zoo_sources(self):
        return [SizedSource()]


def test_models_sharing_an_architecture_keep_their_own_trace_sizes_and_predictions(tmp_path):
    plugins.register(SizedPlugin(), name="sized-tests")
    try:
        db = tmp_path / "zoo.db"
        build_zoo(options(db, sources=["sized"], jobs=1))
        with Zoo([db]) as zoo:
            small, large = zoo.resolve("sz/cnn_16px"), zoo.resolve("sz/cnn_48px")
            assert small.graph_hash == large.graph_hash  # one architecture for retrieval
            assert 8.9 * small.macs < large.macs <= 9 * small.macs  # its own MACs: 9x the pixels (the head the same)
            own = zoo.graph(large)
            assert own.nodes[0].shape == [1, 3, 48, 48] and own.macs == large.macs
            assert zoo.graph(small).nodes[0].shape == [1, 3, 16, 16]
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.execute("create table if not exists predictions (id text primary key, predictor text, data text)")
            conn.execute("insert into predictions values ('sz/cnn_48px', 'old', '[]')")
            conn.commit()
        build_zoo(options(db, sources=["sized"], jobs=1))  # done: nothing traced again
        assert _predictions(db) == ["sz/cnn_48px"]
        build_zoo(options(db, sources=["sized"], jobs=1, refresh=True, patterns=["cnn_48px"]))
        assert _predictions(db) == []  # traced again: predictions from the old row are gone
        with Zoo([db]) as zoo:
            assert zoo.graph(zoo.resolve("sz/cnn_48px")).nodes[0].shape == [1, 3, 48, 48]
    finally:
        plugins.unregister("sized-tests")


def _predictions(db):
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return [i for (i,) in conn.execute("select id from predictions")]
