"""Bare checkpoints: read only names and shapes, never run pickled code, name the zoo architecture."""

import json
import pickle
import re
import subprocess
import sys

import pytest

from narcli.errors import LoadError
from narcli.search.identify import identify_checkpoint
from narcli.trace.checkpoint import canonical_name, is_checkpoint_path, read_checkpoint, write_safetensors_header
from narcli.zoo import plugins
from narcli.zoo.build import BuildOptions, build_zoo, compute_signatures
from narcli.zoo.signatures import load_sketches
from narcli.zoo.store import Zoo

from . import fake_source


def write_safetensors(path, shapes, prefix=""):
    """A safetensors file whose data is a hole: the header is real, the weights cost no disk."""
    return write_safetensors_header(path, {prefix + name: shape for name, shape in shapes.items()})


@pytest.fixture(scope="module")
def fake_zoo(tmp_path_factory):
    """A zoo of the fake source's models, built (signatures included) once for this file."""
    plugins.register(fake_source, name="fake-checkpoints")
    db = tmp_path_factory.mktemp("zoo") / "zoo.db"
    build_zoo(BuildOptions(db=db, sources=["fake"], patterns=["mlp_*", "cnn_*", "resnet50"], jobs=2, timeout=60))
    yield db
    plugins.unregister("fake-checkpoints")


def fake_state(name):
    """The state dict (name -> shape) of one fake-source model, built the way the source builds it."""
    entry = next(e for e in fake_source.FakeSource().list_models() if e.name == name)
    module = fake_source.FakeSource().build(entry).module
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


def test_a_build_stores_each_models_signature(fake_zoo):
    table = load_sketches(Zoo([fake_zoo]))
    assert set(table.ids) == {"fk/mlp_small", "fk/mlp_wide", "fk/mlp_small_copy", "fk/cnn_tiny", "fk/cnn_base",
                              "fk/resnet50"}
    assert dict(zip(table.ids, table.sizes))["fk/cnn_base"] == 8  # three convs and a head, weight and bias


def test_zoo_signatures_fills_in_what_is_missing_and_resumes(fake_zoo, tmp_path):
    import shutil
    import sqlite3

    db = tmp_path / "copy.db"
    shutil.copy(fake_zoo, db)
    with sqlite3.connect(db) as conn:
        conn.execute("delete from signatures where id in ('fk/cnn_base', 'fk/mlp_wide')")
    [report] = compute_signatures(db, ["fake"], jobs=1, timeout=60)
    assert (report.missing, report.ok, report.failed) == (2, 2, 0)
    assert compute_signatures(db, ["fake"], jobs=1, timeout=60) == []  # nothing left to do
    assert len(load_sketches(Zoo([db])).ids) == 6


def test_a_checkpoint_of_a_zoo_model_is_an_exact_match(fake_zoo, tmp_path):
    path = write_safetensors(tmp_path / "cnn.safetensors", fake_state("cnn_base"))
    found = identify_checkpoint(path, zoo=Zoo([fake_zoo]))
    assert found.identified and found.best.id == "fk/cnn_base" and found.best.exact
    assert (found.best.matched, found.best.zoo_tensors) == (8, 8)


def test_models_with_the_same_tensors_are_listed_together(fake_zoo, tmp_path):
    path = write_safetensors(tmp_path / "mlp.safetensors", fake_state("mlp_small"))
    found = identify_checkpoint(path, zoo=Zoo([fake_zoo]))
    assert {found.best.id, *found.best.same_as} == {"fk/mlp_small", "fk/mlp_small_copy"}
    assert all(m.id not in found.best.same_as for m in found.matches[1:])


@pytest.mark.parametrize("wrapper", ["module.", "_orig_mod.module.", "model."])
def test_wrapper_prefixes_do_not_hide_the_architecture(fake_zoo, tmp_path, wrapper):
    path = write_safetensors(tmp_path / "w.safetensors", fake_state("resnet50"), prefix=wrapper)
    found = identify_checkpoint(path, zoo=Zoo([fake_zoo]))
    assert found.best.id == "fk/resnet50" and found.best.exact


def test_a_new_head_is_reported_as_reshaped_tensors(fake_zoo, tmp_path):
    state = fake_state("cnn_base")
    state["head.weight"], state["head.bias"] = (3, 8), (3,)  # fine-tuned for 3 classes
    found = identify_checkpoint(write_safetensors(tmp_path / "ft.safetensors", state), zoo=Zoo([fake_zoo]))
    best = found.best
    assert best.id == "fk/cnn_base" and not best.exact and best.matched == 6
    assert {(n, c, z) for n, c, z in best.reshaped} == {("head.weight", (3, 8), (10, 8)), ("head.bias", (3,), (10,))}


def test_a_training_checkpoint_with_ema_and_optimizer_is_read_by_torch_load(fake_zoo, tmp_path):
    import torch

    state = {k: torch.zeros(s) for k, s in fake_state("cnn_tiny").items()}
    path = tmp_path / "last.pth"
    torch.save({"epoch": 7, "optimizer": {"state": {}, "param_groups": [{"lr": 0.1}]},
                "state_dict": {f"module.{k}": v for k, v in state.items()},
                "state_dict_ema": {f"module.{k}": v for k, v in state.items()}}, path)
    checkpoint = read_checkpoint(path)
    assert checkpoint.nested_key == "state_dict" and "optimizer" in checkpoint.ignored
    found = identify_checkpoint(path, zoo=Zoo([fake_zoo]))
    assert found.best.id == "fk/cnn_tiny" and found.best.exact


def test_a_flat_file_holding_an_ema_copy_folds_it_into_the_weights(fake_zoo, tmp_path):
    state = fake_state("cnn_tiny")
    both = {**{f"model.{k}": s for k, s in state.items()}, **{f"model_ema.{k}": s for k, s in state.items()}}
    found = identify_checkpoint(write_safetensors(tmp_path / "ema.safetensors", both), zoo=Zoo([fake_zoo]))
    assert found.best.id == "fk/cnn_tiny" and found.best.exact


def test_a_folder_of_shards_is_one_checkpoint(fake_zoo, tmp_path):
    state = list(fake_state("resnet50").items())
    folder = tmp_path / "sharded"
    folder.mkdir()
    write_safetensors(folder / "model-00001-of-00002.safetensors", dict(state[:4]))
    write_safetensors(folder / "model-00002-of-00002.safetensors", dict(state[4:]))
    assert is_checkpoint_path(folder)
    found = identify_checkpoint(folder, zoo=Zoo([fake_zoo]))
    assert found.files == 2 and found.best.id == "fk/resnet50" and found.best.exact


def test_an_unknown_architecture_is_not_identified(fake_zoo, tmp_path):
    path = write_safetensors(tmp_path / "odd.safetensors", {"encoder.w": (7, 13), "decoder.w": (13, 7)})
    found = identify_checkpoint(path, zoo=Zoo([fake_zoo]))
    assert not found.identified and found.matches == []  # nothing in common with any zoo model


def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(cli, tmp_path):
    import torch

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('x')",))

    zipped = tmp_path / "evil.pt"
    torch.save({"weight": torch.zeros(2), "payload": Payload()}, zipped)
    legacy = tmp_path / "evil.bin"
    legacy.write_bytes(pickle.dumps({"payload": Payload()}, protocol=2))  # torch.save's legacy format
    for path in (zipped, legacy):
        result = cli("scan", path)
        assert result.exit_code == 1
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "refused" in lines[0], result.stderr
        assert not marker.exists()
    with pytest.raises(LoadError, match="refused"):
        read_checkpoint(zipped)
    assert not marker.exists()


def test_a_folder_with_neither_config_nor_weights_is_one_line(cli, tmp_path):
    (tmp_path / "empty-model").mkdir()
    (tmp_path / "empty-model" / "README.md").write_text("weights coming soon\n")
    result = cli("scan", tmp_path / "empty-model")
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no model config (config.json) and no checkpoint" in lines[0]


def test_canonical_names_drop_only_leading_wrappers():
    assert canonical_name("module._orig_mod.layer1.0.conv1.weight") == "layer1.0.conv1.weight"
    assert canonical_name("model_ema.blocks.model.weight") == "blocks.model.weight"
    assert canonical_name("model") == "model"  # a name made only of wrappers keeps its last part


def test_identifying_a_safetensors_file_imports_no_torch(fake_zoo, tmp_path):
    path = write_safetensors(tmp_path / "cnn.safetensors", fake_state("cnn_base"))
    code = ("import sys, json; from pathlib import Path; from narcli.search.identify import identify_checkpoint; "
            "from narcli.zoo.store import Zoo; "
            f"found = identify_checkpoint(Path({str(path)!r}), zoo=Zoo([Path({str(fake_zoo)!r})])); "
            "print(json.dumps([found.best.id, 'torch' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["fk/cnn_base", False]


def bundled_signature(model_id):
    from narcli.zoo.signatures import load_signatures

    return dict(load_signatures(Zoo(), [model_id])[model_id])


def test_scan_and_similar_take_a_checkpoint_of_a_bundled_zoo_model(cli, tmp_path):
    state = bundled_signature("timm/resnet50")
    state["fc.weight"], state["fc.bias"] = (10, 2048), (10,)
    path = write_safetensors(tmp_path / "finetuned.safetensors", state, prefix="module.")
    scanned = cli("scan", path, "--json")
    assert scanned.exit_code == 0, scanned.output
    found = json.loads(scanned.stdout)
    best = found["matches"][0]
    assert found["identified"] and "timm/resnet50" in [best["id"], *best["same_as"]]
    assert {r["name"] for r in best["reshaped"]} == {"fc.weight", "fc.bias"}
    similar = cli("similar", path, "--json", "-k", "3")
    assert similar.exit_code == 0, similar.output
    [result] = json.loads(similar.stdout)["results"]
    assert result["query"]["name"] == f"finetuned.safetensors = {best['id']}"
    assert result["query"]["checkpoint"]["reshaped"] == 2


def test_similar_on_an_unknown_checkpoint_is_one_line(cli, tmp_path):
    path = write_safetensors(tmp_path / "odd.safetensors", {"encoder.w": (7, 13), "decoder.w": (13, 7)})
    result = cli("similar", path)
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no zoo architecture matches this checkpoint" in lines[0]


def test_a_narrower_copy_is_a_resized_variant_not_a_match(fake_zoo, tmp_path):
    state = {"0.weight": (16, 4), "0.bias": (16,), "2.weight": (2, 16), "2.bias": (2,)}  # an MLP of width 16
    found = identify_checkpoint(write_safetensors(tmp_path / "mlp16.safetensors", state), zoo=Zoo([fake_zoo]))
    assert not found.identified and found.resized
    assert found.best.id.startswith("fk/mlp_") and found.best.name_cover == 1.0 and found.best.matched == 1  # only 2.bias


def test_a_zoo_from_before_name_sketches_gets_them(fake_zoo, tmp_path):
    import shutil
    import sqlite3

    db = tmp_path / "old.db"
    shutil.copy(fake_zoo, db)
    with sqlite3.connect(db) as conn:
        conn.execute("alter table signatures drop column name_sketch")
    assert len(load_sketches(Zoo([db])).name_sketches) == 6  # computed from the stored data on read
    assert compute_signatures(db, ["fake"], jobs=1, timeout=60) == []  # the writer adds the column
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from signatures where name_sketch is not null").fetchone() == (6,)


# issue 43: a header that cannot describe its file is refused in one line
def _raw_safetensors(path, header, data_bytes=16):
    raw = json.dumps(header).encode() if isinstance(header, dict) else header
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0" * data_bytes)
    return path


@pytest.mark.parametrize("header, reason", [
    ({"w": {"dtype": "F32", "shape": [-2, 2], "data_offsets": [0, 16]}}, "dimensions are whole numbers"),
    ({"w": {"dtype": "F32", "shape": [2.5, 2], "data_offsets": [0, 16]}}, "dimensions are whole numbers"),
    ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 1 << 40]}}, "past the 16 bytes of data"),
    ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [8, 4]}}, "not [start, end]"),
    ({"w": {"dtype": "F32", "shape": [2, 2]}}, "not [start, end]"),
    ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}, "8 bytes of data for 4 F32 values"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, "overlap"),
    (b'{"w": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deep"),
], ids=["negative", "fraction", "past-the-end", "reversed", "missing", "wrong-size", "overlap", "deep"])
def test_a_safetensors_header_with_impossible_data_is_refused(cli, tmp_path, header, reason):
    path = _raw_safetensors(tmp_path / "bad.safetensors", header)
    with pytest.raises(LoadError, match=re.escape(reason)):
        read_checkpoint(path)
    result = cli("scan", path)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1 and reason in lines[0], result.output


def test_a_sound_header_with_several_dtypes_is_read(tmp_path):
    header = {"__metadata__": {"format": "pt"}, "a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
              "b": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]},
              "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [16, 16]}}
    found = read_checkpoint(_raw_safetensors(tmp_path / "ok.safetensors", header))
    assert found.tensors == {"a": ((2, 2), "BF16"), "b": ((1,), "I64"), "e": ((0, 3), "F32")}
