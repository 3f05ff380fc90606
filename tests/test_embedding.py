"""Embedding real inputs with the bundled encoder: the largest graphs, odd graphs, a model against
its ONNX export, `nar zoo embed`, and the options of `nar eval retrieval` / `nar train encoder`."""

import sqlite3
import zlib

import numpy as np
import pytest
import torch

from narcli.encode.dataset import Item
from narcli.encode.features import encode_graph
from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.synthetic import residual_stack

torch = pytest.importorskip("torch")


def small_trained(items, **changes):
    from narcli.encode.training import TrainConfig, train_encoder

    config = TrainConfig(hidden=8, dim=8, epochs=1, motif_epochs=0, batches_per_epoch=1, families_per_batch=2,
                         per_family=2, **changes)
    return train_encoder(items, list(range(len(items))), config)


def mlp_items(count=4):
    def mlp(layers):
        nodes = [Node("input")] + [Node(op) for _ in range(layers) for op in ("linear", "relu")] + [Node("output")]
        return ArchGraph(nodes, [(i, i + 1) for i in range(len(nodes) - 1)])
    return [Item(f"h{i}", f"m{i}", "a" if i % 2 else "b", "mlp", encode_graph(mlp(i + 1))) for i in range(count)]


def test_the_combined_embedding_has_unit_length_and_a_learned_part():
    from narcli.encode.training import embed_items

    trained = small_trained(mlp_items(), wl_mix=0.6, robust_mix=0.0, decoder_mix=0.0)
    graphs = [i.encoded for i in mlp_items()]
    both = embed_items(trained.model, graphs)
    learned = embed_items(trained.model, graphs, learned_only=True)
    # two branches of 8 (motifs, full graph) and the 256-d WL sketch
    assert both.shape == (4, 2 * 8 + 256) and learned.shape == (4, 2 * 8)
    assert np.allclose(np.linalg.norm(both, axis=1), 1, atol=1e-5)
    assert np.allclose(both[:, :16], learned * 0.6 ** 0.5, atol=1e-5)  # cosine = 0.6 learned + 0.4 WL
    # the robust sketch (the read-out before the decoder sketch) takes its share from the learned part
    trained.model.robust_mix = 0.3
    trained.model.register_buffer("robust_sketch", torch.randn(4096, 256) / 16, persistent=False)
    three = embed_items(trained.model, graphs)
    assert three.shape == (4, 2 * 8 + 256 + 256)
    assert np.allclose(np.linalg.norm(three, axis=1), 1, atol=1e-5)
    assert np.allclose(three[:, :16], learned * 0.3 ** 0.5, atol=1e-5)  # 0.3 learned + 0.4 WL + 0.3 robust
    assert np.allclose(three[:, 16:272], both[:, 16:], atol=1e-5)
    for branch in (learned[:, :8], learned[:, 8:]):  # each branch counts half of the learned cosine
        assert np.allclose(np.linalg.norm(branch, axis=1), 0.5 ** 0.5, atol=1e-5)


def test_a_100k_node_graph_and_an_all_unknown_graph_embed():
    from narcli.encode.training import embed_items

    model = small_trained(mlp_items()).model
    big = encode_graph(residual_stack(100_000))
    unknown = encode_graph(ArchGraph([Node("unknown:a"), Node("unknown:b"), Node("unknown:c")], [(0, 1), (1, 2)]))
    vectors = embed_items(model, [big, unknown])
    assert np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_a_model_and_its_onnx_export_embed_alike(tmp_path):
    from narcli.encode.training import embed_items
    from narcli.encode.weights import load_encoder
    from narcli.graph.canonical import build_graph
    from narcli.trace.onnx_tracer import load_onnx, trace_onnx
    from narcli.trace.torch_tracer import trace_module

    from .models import SmallResNet, SmallTransformer, export_onnx

    model_weights, _ = load_encoder()  # the bundled weights
    for make, example in ((SmallResNet, (torch.randn(1, 3, 32, 32),)), (SmallTransformer, (torch.randint(0, 100, (1, 16)),))):
        torch.manual_seed(0)
        model = make().eval()
        raw, _ = trace_module(model, list(example))
        from_torch = build_graph(raw)
        from_onnx = build_graph(trace_onnx(load_onnx(export_onnx(model, example, tmp_path / "m.onnx"))))
        a, b = embed_items(model_weights, [encode_graph(from_torch), encode_graph(from_onnx)])
        assert float(a @ b) >= 0.95, make.__name__


def test_zoo_embed_stores_one_vector_per_architecture_and_only_redoes_what_changed(tmp_path, monkeypatch):
    from narcli.encode.weights import save_weights
    from narcli.encode.zoo_embed import embed_zoo

    db = tmp_path / "zoo.db"
    conn = sqlite3.connect(db)
    from narcli.zoo.store import SCHEMA, SCHEMA_VERSION
    conn.executescript(SCHEMA)
    conn.execute("insert into meta values ('schema_version', ?)", (str(SCHEMA_VERSION),))
    graphs = [residual_stack(n) for n in (40, 60, 80)]
    for k, graph in enumerate(graphs):
        conn.execute("insert into graphs values (?, ?)", (graph.content_hash(), zlib.compress(graph.to_json().encode())))
        conn.execute("insert into models (id, source, name, family, coarse, status, graph_hash) values "
                     "(?, 'fake', ?, 'resnet', 'convolutional', 'ok', ?)", (f"fake/m{k}", f"m{k}", graph.content_hash()))
    conn.commit()
    conn.close()
    weights = tmp_path / "enc.safetensors"
    save_weights(small_trained(mlp_items()), weights, {})
    first = embed_zoo(db, weights)
    assert (first["embedded"], first["unchanged"]) == (3, 0)
    again = embed_zoo(db, weights)
    assert (again["embedded"], again["unchanged"]) == (0, 3)
    save_weights(small_trained(mlp_items(), seed=1), weights, {})  # a changed encoder: everything again
    third = embed_zoo(db, weights)
    assert third["embedded"] == 3 and third["encoder"] != first["encoder"]
    from narcli.zoo.store import Zoo
    with Zoo([db]) as zoo:
        hashes, vectors, encoders = zoo.embeddings()
    assert sorted(hashes) == sorted(g.content_hash() for g in graphs) and encoders == {third["encoder"]}
    # stored as float16 and read back as float32: unit norm to float16's precision
    assert all(abs(np.linalg.norm(np.frombuffer(v, np.float32)) - 1) < 2e-3 for v in vectors)


@pytest.mark.parametrize("args, message", [
    (["eval", "retrieval", "--methods", "SVM"], "unknown method 'SVM'"),
    (["eval", "retrieval", "--device", "tpu"], "--device must be cpu or cuda"),
    (["eval", "retrieval", "--split", "sideways"], "--split must be random or ood"),
    (["eval", "retrieval", "--k", "0"], "--k must be positive"),
    (["train", "encoder", "--epochs", "0"], "--epochs must be between 1 and 100,000"),
    (["train", "encoder", "--ce-weight", "-1"], "--ce-weight must not be negative"),
    (["eval", "retrieval", "--ce-weight", "-0.5"], "--ce-weight must not be negative"),
    (["train", "encoder", "--hard-families", "0.9"], "--hard-families must be between 0 and 0.5"),
    (["eval", "retrieval", "--hard-families", "nan"], "--hard-families must be between 0 and 0.5"),
    (["eval", "retrieval", "--nas", "--hard-families", "0.5"], "the DARTS set (--nas) is trained without it"),
])
def test_bad_training_options_fail_cleanly(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_zoo_embed_on_a_missing_database_says_how_to_build_it(cli, tmp_path):
    result = cli("zoo", "embed", "--db", tmp_path / "none.db")
    assert result.exit_code == 1
    assert "does not exist" in result.output and "nar zoo build" in result.output


def test_zoo_embed_with_missing_weights_says_how_to_fix(cli, tmp_path):
    from narcli.zoo.store import bundled_zoo_path

    result = cli("zoo", "embed", "--db", bundled_zoo_path(), "--weights", tmp_path / "none.safetensors")
    assert result.exit_code != 0
    assert "encoder weights not found" in result.output and "nar train encoder" in result.output


def test_the_encoder_leaves_no_generated_code_in_the_temp_directory(tmp_path):
    """torch_geometric writes each layer class's generated `propagate` to a `.py` file in $TMPDIR
    and never removes it: three files were left behind by every `nar similar NEW_FILE`."""
    import os
    import subprocess
    import sys

    temp = tmp_path / "tmp"
    temp.mkdir()
    code = ("import torch; from narcli.encode.encoder import GraphStack\n"
            "x, edges = torch.randn(4, 8), torch.tensor([[0, 1, 2], [1, 2, 3]])\n"
            "for kind in ('gcn', 'gat'):\n    assert GraphStack(8, 8, 2, kind)(x, edges).shape == (4, 8)\n")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(temp)},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in temp.rglob("*.py")) == []
