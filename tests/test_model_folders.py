"""Hugging Face / timm model folders: built from config.json on meta; no weights read, no folder code run."""

import json

import pytest

from narcli.errors import LoadError
from narcli.trace.model_folders import folder_kind

TINY_BERT = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
             "intermediate_size": 37, "vocab_size": 100, "max_position_embeddings": 64}


def needs(library):
    # find, not import: importing timm here would load torchvision without nar's compat guard
    import importlib.util

    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")


def folder(tmp_path, config, name="model"):
    path = tmp_path / name
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return path


def one_line_error(result):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code != 0 and len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_a_transformers_folder_builds_the_base_model_of_its_type(cli, tmp_path):
    needs("transformers")
    result = cli("scan", folder(tmp_path, TINY_BERT), "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["name"] == "BertModel" and model["kind"] == "folder"
    assert model["inputs"][0]["dtype"] == "int64"
    ops = dict(model["top_ops"])
    assert ops["attention"] == 2 and ops["layer_norm"] >= 4


def test_architectures_names_the_class_and_a_second_scan_is_cached(cli, tmp_path):
    needs("transformers")
    path = folder(tmp_path, {**TINY_BERT, "architectures": ["BertForSequenceClassification"], "num_labels": 3})
    first = json.loads(cli("scan", path, "--json").stdout)["models"][0]
    assert first["name"] == "BertForSequenceClassification" and not first["cached"]
    assert json.loads(cli("scan", path, "--json").stdout)["models"][0]["cached"]
    (path / "config.json").write_text(json.dumps({**TINY_BERT, "num_hidden_layers": 3}))
    changed = json.loads(cli("scan", path, "--json").stdout)["models"][0]
    assert not changed["cached"] and changed["name"] == "BertModel"


def test_similar_takes_a_model_folder(cli, tmp_path):
    needs("transformers")
    result = cli("similar", folder(tmp_path, TINY_BERT), "--json", "-k", "3")
    assert result.exit_code == 0, result.output
    [found] = json.loads(result.stdout)["results"]
    assert found["prediction"]["family"] in {"bert", "roberta", "big_bird", "electra"}, found["prediction"]


def test_a_timm_folder_builds_its_architecture(cli, tmp_path):
    needs("timm")
    config = {"architecture": "resnet18", "num_classes": 10, "pretrained_cfg": {"input_size": [3, 64, 64]}}
    result = cli("scan", folder(tmp_path, config), "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["name"] == "resnet18" and model["inputs"][0]["shape"] == [1, 3, 64, 64]
    assert model["params"] == 11_181_642  # resnet18 with a 10-class head


def test_an_unknown_model_type_is_one_line(cli, tmp_path):
    needs("transformers")
    line = one_line_error(cli("scan", folder(tmp_path, {"model_type": "frobnicator", "hidden_size": 8})))
    assert "unknown model_type 'frobnicator'" in line


def test_a_folder_that_needs_its_own_code_is_refused(cli, tmp_path):
    config = {**TINY_BERT, "auto_map": {"AutoModel": "modeling_evil.EvilModel"}}
    path = folder(tmp_path, config)
    (path / "modeling_evil.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w')\n")
    line = one_line_error(cli("scan", path))
    assert "does not run code from model folders" in line and not (tmp_path / "ran").exists()


def test_a_config_of_neither_library_is_one_line(cli, tmp_path):
    line = one_line_error(cli("scan", folder(tmp_path, {"hidden_size": 8})))
    assert "neither a transformers config (model_type) nor a timm config (architecture)" in line
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    assert "not a readable JSON config" in one_line_error(cli("scan", broken))


def test_a_missing_library_says_what_to_install(cli, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    path = folder(tmp_path, TINY_BERT)
    with pytest.raises(LoadError, match=r"pip install transformers"):
        folder_kind(path)
    assert "pip install transformers" in one_line_error(cli("scan", path))


# issue 43: a config nested thousands deep is one failed row, never a crash of the whole scan
def test_a_config_nested_too_deep_is_one_failed_row_and_the_scan_goes_on(cli, tmp_path):
    from narcli.trace.model_folders import holds_model_config, read_config

    from .conftest import mlp_source

    project = tmp_path / "project"
    deep = project / "deep"
    deep.mkdir(parents=True)
    (deep / "config.json").write_text('{"model_type": "bert", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (project / "net.py").write_text(mlp_source(4, 8, 2))
    with pytest.raises(LoadError, match="nested too deep"):
        read_config(deep)
    assert holds_model_config(deep)  # unreadable: the safe guess, its code is never imported
    result = cli("scan", project, "--json", "-i", "1,4")
    files = {entry["path"].split("/")[-1]: entry for entry in json.loads(result.stdout)["files"]}
    assert "nested too deep" in files["deep"]["error"] and not files["net.py"].get("error")
    assert "nested too deep" in one_line_error(cli("scan", deep))
