"""`nar zoo upgrade`: stored graphs take the current canonical form, models follow their new hash."""

import sqlite3
import zlib

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.zoo import plugins
from narcli.zoo.build import BuildOptions, ZooWriter, build_zoo
from narcli.zoo.store import Zoo
from narcli.zoo.upgrade import current_form, upgrade_zoo

from . import fake_source


def hand_written_silu() -> ArchGraph:
    """input -> linear -> (x * sigmoid(x)) -> output: silu as an older canonicaliser stored it."""
    nodes = [Node("input", [1, 4]), Node("linear", [1, 8], {"in_features": 4, "out_features": 8}, 40, 32),
             Node("sigmoid", [1, 8]), Node("mul", [1, 8]), Node("output", [1, 8])]
    return ArchGraph(nodes, [(0, 1), (1, 2), (1, 3), (2, 3), (3, 4)], {"source": "old"})


def test_upgrade_rewrites_old_graphs_and_moves_their_models(tmp_path):
    plugins.register(fake_source, name="fake-upgrade")
    try:
        db = tmp_path / "zoo.db"
        build_zoo(BuildOptions(db=db, sources=["fake"], patterns=["mlp_small", "cnn_tiny"], jobs=1, timeout=60))
    finally:
        plugins.unregister("fake-upgrade")
    old = hand_written_silu()
    old_hash = old.content_hash()
    writer = ZooWriter(db)
    with writer.conn:
        writer.conn.execute("insert into graphs values (?, ?)", (old_hash, zlib.compress(old.to_json().encode())))
        writer.conn.execute("update models set graph_hash = ? where id = 'fk/mlp_small'", (old_hash,))
        writer.conn.execute("insert into embeddings values (?, 'enc', x'00')", (old_hash,))
        writer.conn.execute("create table if not exists predictions (id text primary key, predictor text, data text)")
        writer.conn.executemany("insert into predictions values (?, 'p', '[]')", [("fk/mlp_small",), ("fk/cnn_tiny",)])
    writer.close()
    with Zoo([db]) as zoo:
        untouched = zoo.resolve("fk/cnn_tiny").graph_hash

    counts = upgrade_zoo(db)

    assert (counts["rewritten"], counts["models"], counts["predictions_dropped"]) == (1, 1, 1)
    with sqlite3.connect(db) as conn:  # made on the old graph: predicted again by `nar zoo embed`
        assert [r for (r,) in conn.execute("select id from predictions")] == ["fk/cnn_tiny"]
    zoo = Zoo([db])
    model = zoo.resolve("fk/mlp_small")
    new = zoo.graph(model)
    assert "silu" in new.op_histogram() and "mul" not in new.op_histogram()
    assert model.graph_hash == current_form(old).content_hash() != old_hash and model.nodes == 4
    assert zoo.resolve("fk/cnn_tiny").graph_hash == untouched
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from graphs where hash = ?", (old_hash,)).fetchone() == (0,)
        assert conn.execute("select count(*) from embeddings where hash = ?", (old_hash,)).fetchone() == (0,)
    assert upgrade_zoo(db)["rewritten"] == 0  # idempotent


def test_upgrading_a_missing_zoo_creates_nothing(cli, tmp_path):
    result = cli("zoo", "upgrade", "--db", tmp_path / "none.db")
    assert result.exit_code != 0 and "missing" in result.stderr
    assert not (tmp_path / "none.db").exists()


def test_upgrade_keeps_each_models_own_macs_when_models_share_a_graph(tmp_path):
    """Issue 44's first cause: two models of one architecture traced at different inputs share one
    stored graph; the upgrade gave both the MACs of whichever was stored (a 384-px model carried
    its 224-px twin's). Each now keeps its own, scaled by what the rewrite changed."""
    plugins.register(fake_source, name="fake-upgrade")
    try:
        db = tmp_path / "zoo.db"
        build_zoo(BuildOptions(db=db, sources=["fake"], patterns=["mlp_small"], jobs=1, timeout=60))
    finally:
        plugins.unregister("fake-upgrade")
    old = hand_written_silu()
    old.meta["inputs"] = [{"shape": [1, 4], "dtype": "float32"}]
    old_hash = old.content_hash()
    writer = ZooWriter(db)
    with writer.conn:
        writer.conn.execute("insert into graphs values (?, ?)", (old_hash, zlib.compress(old.to_json().encode())))
        writer.conn.execute("update models set graph_hash = ?, macs = ?, params = ?, inputs = ? where id = 'fk/mlp_small'",
                            (old_hash, old.summary()["macs"], old.summary()["params"],
                             '[{"shape": [1, 4], "dtype": "float32"}]'))
        columns = [r[1] for r in writer.conn.execute("pragma table_info(models)")]
        row = dict(zip(columns, writer.conn.execute("select * from models where id = 'fk/mlp_small'").fetchone()))
        row.update(id="fk/mlp_small_x16", name="mlp_small_x16", macs=16 * row["macs"], params=row["params"] + 7,
                   inputs='[{"shape": [16, 4], "dtype": "float32"}]')  # + a table sized by the input
        writer.conn.execute(f"insert into models ({', '.join(row)}) values ({', '.join('?' * len(row))})",
                            tuple(row.values()))
    writer.close()
    upgrade_zoo(db)
    zoo = Zoo([db])
    small, big = zoo.resolve("fk/mlp_small"), zoo.resolve("fk/mlp_small_x16")
    new_macs = current_form(old).summary()["macs"]
    assert small.graph_hash == big.graph_hash
    assert small.macs == new_macs and big.macs == round(16 * old.summary()["macs"] * new_macs / old.summary()["macs"])
    assert big.macs != small.macs
    assert big.params == small.params + 7  # its own parameters too, never the other model's
