"""What a target string means (`narcli.scan.targets`), and every command against every kind of target:
each one answers, or says in one line (exit 2) that it does not take that kind."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from narcli.errors import UsageError
from narcli.scan.scanner import ScanOptions
from narcli.scan.targets import (CachedName, Checkpoint, Directory, ModelFile, ModelFolder, ZooName, cache_name,
                                 is_cache_name, resolve_target, zoo_hash, zoo_key)
from narcli.trace.checkpoint import write_safetensors_header
from narcli.zoo.store import Zoo

from .conftest import write_file

NET = """
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(8, 10))

    def forward(self, x):
        return self.body(x)
"""
TINY_BERT = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
             "intermediate_size": 37, "vocab_size": 100, "max_position_embeddings": 64}
KINDS = ("zoo", "cache", "file", "module", "checkpoint", "folder", "directory")
ZOO_MODEL_THAT_BUILDS = "classics/actor_critic_lunar"  # nar bench builds it: a plugin CI installs


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """One project holding a target of every kind, and a NAR_HOME where its model file is cached."""
    root = tmp_path_factory.mktemp("targets")
    write_file(root / "proj" / "net.py", NET)
    write_file(root / "proj" / "pkgmod" / "__init__.py", "")
    write_file(root / "proj" / "pkgmod" / "layers.py", NET)
    write_file(root / "proj" / "models" / "other.py", NET.replace("8, 10", "8, 4"))
    (root / "proj" / "bert").mkdir()
    (root / "proj" / "bert" / "config.json").write_text(json.dumps(TINY_BERT))
    from narcli.zoo.signatures import load_signatures

    state = dict(load_signatures(Zoo(), ["timm/resnet18"])["timm/resnet18"])
    write_safetensors_header(root / "proj" / "finetuned.safetensors", state)
    return root


@pytest.fixture
def project(place, monkeypatch):
    monkeypatch.setenv("NAR_HOME", str(place / "home"))  # one cache for the module: each file is traced once
    monkeypatch.chdir(place / "proj")
    return place / "proj"


TEXT = {"zoo": "resnet18", "cache": "cache:net.py", "file": "net.py", "module": "pkgmod.layers:Net",
        "checkpoint": "finetuned.safetensors", "folder": "bert", "directory": "models"}


def ensure_cached(cli):
    result = cli("scan", "net.py", "-i", "1,3,32,32")
    assert result.exit_code == 0, result.output


def test_each_kind_of_text_resolves_to_its_type(project):
    expected = {"zoo": ZooName, "cache": CachedName, "file": ModelFile, "module": ModelFile,
                "checkpoint": Checkpoint, "folder": ModelFolder, "directory": Directory}
    for kind, text in TEXT.items():
        target = resolve_target(text)
        assert isinstance(target, expected[kind]), (kind, target)
        assert target.text == text
    assert resolve_target("pkgmod.layers:Net").options.model == "Net"
    assert resolve_target("cache:  net.py ").name == "net.py"
    assert isinstance(resolve_target("missing.safetensors"), Checkpoint)  # its reader says it is missing
    assert isinstance(resolve_target("missing.py"), ModelFile)


def test_file_colon_class_names_a_model_in_a_file(project, cli, monkeypatch, tmp_path):
    monkeypatch.setenv("NAR_HOME", str(tmp_path / "home"))  # its scan of net.py must not meet the module's
    target = resolve_target("net.py:Net")
    assert isinstance(target, ModelFile) and target.path == Path("net.py") and target.options.model == "Net"
    assert resolve_target("models/other.py:Net(width=4)").options.model == "Net(width=4)"
    assert resolve_target("net.py:Net", ScanOptions(model="Net")).options.model == "Net"  # said twice alike
    with pytest.raises(UsageError, match="names the model already; drop --model 'Other'"):
        resolve_target("net.py:Net", ScanOptions(model="Other"))
    missing = resolve_target("missing.py:Net")  # its reader says the file is missing, not the zoo
    assert isinstance(missing, ModelFile) and missing.path == Path("missing.py")
    assert resolve_target("Net.PY: Net").options.model == "Net"  # as people type it
    write_file(project / "mypkg" / "py.py", NET)  # a module called `py` in a package: still that
    found = resolve_target("mypkg.py:Net")
    assert found.path == project / "mypkg" / "py.py" and found.options.model == "Net"
    result = cli("similar", "net.py:Net", "-i", "1,3,32,32", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["prediction"] is not None
    result = cli("similar", "missing.py:Net")
    assert result.exit_code != 0 and "no such file" in result.stderr and "zoo" not in result.stderr


def test_unusable_text_is_a_usage_error(project):
    for text, message in (("", "empty model name"), ("cache:", "empty name after cache:"),
                          ("a\0b", "NUL")):
        with pytest.raises(UsageError, match=message):
            resolve_target(text)
    with pytest.raises(UsageError, match="--input-shape applies to model files only"):
        resolve_target("resnet18", ScanOptions(input_shapes=["1,3,32,32"]))
    with pytest.raises(UsageError, match="--model applies to model files only"):
        resolve_target("cache:net.py", ScanOptions(model="Net"))


def test_library_options_are_checked_where_they_are_made():
    for timeout in (0, -1, float("nan"), float("inf"), 1e300):
        with pytest.raises(UsageError, match="--timeout must be"):
            ScanOptions(timeout=timeout)
    with pytest.raises(UsageError, match="--model is empty"):
        ScanOptions(model="  ")


def test_prefixes_are_made_and_read_in_one_place():
    assert cache_name("3fa2c1d04e:0") == "cache:3fa2c1d04e:0" and is_cache_name(cache_name("x"))
    assert zoo_hash(zoo_key("abc")) == "abc" and zoo_hash("cache:abc") is None


# command -> the kinds it answers for (the others: one line, exit 2)
ANSWERS = {
    "scan": set(KINDS),
    "motifs": set(KINDS) - {"directory"},
    "similar": set(KINDS) - {"directory"},
    "compare": set(KINDS) - {"directory"},
    "export": set(KINDS) - {"directory"},
    "predict": set(KINDS) - {"directory"},
    "bench": {"zoo", "cache", "file", "module"},
    "check": {"file", "folder", "directory"},
}
ARGS = {"similar": ["-k", "3"], "compare": [], "export": ["--out", "exported"], "bench": ["--repeat", "2", "--allow-busy"],
        "motifs": ["--limit", "3"], "check": ["--on-error", "fail"]}


def refused_in_one_line(result, command, kind):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, (command, kind, result.output)
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.mark.parametrize("command", sorted(ANSWERS))
def test_every_command_answers_every_kind_or_says_it_cannot(project, cli, command):
    if importlib.util.find_spec("transformers") is None and command != "check":
        pytest.skip("transformers is not installed (the model folder is a BERT config)")
    ensure_cached(cli)
    for kind in KINDS:
        if kind == "folder" and importlib.util.find_spec("transformers") is None:
            continue
        text = ZOO_MODEL_THAT_BUILDS if (command, kind) == ("bench", "zoo") else TEXT[kind]
        args = [command, text, *(["resnet18"] if command == "compare" else []), *ARGS.get(command, [])]
        if kind in ("file", "module", "directory"):  # the size the module's cache holds (check too, or
            args += ["-i", "1,3,32,32"]                  # it caches a 224 scan and cache:net.py turns ambiguous)
        result = cli(*args)
        if kind in ANSWERS[command]:
            assert result.exit_code == 0, (command, kind, result.output)
        else:
            line = refused_in_one_line(result, command, kind)
            assert f"nar {command} does not take" in line, line


def test_the_browser_opens_every_kind_it_can(project, cli):
    from narcli.tui.data import scan_request

    ensure_cached(cli)
    assert scan_request({"path": "resnet18"}) == Zoo().resolve("resnet18").id
    assert scan_request({"path": "cache:net.py"})[0].name == "Net"
    assert scan_request({"path": "net.py", "shape": "1,3,32,32"})[0].name == "Net"
    assert scan_request({"path": "pkgmod.layers:Net", "shape": "1,3,32,32"})[0].name == "Net"
    for text in ("finetuned.safetensors", "models"):
        with pytest.raises(UsageError, match="nar tui does not take"):
            scan_request({"path": text})


def test_a_file_named_again_without_its_inputs_reuses_its_scan(project, cli):
    ensure_cached(cli)
    again = cli("scan", "net.py", "--json")
    assert again.exit_code == 0, again.output
    [model] = json.loads(again.stdout)["models"]
    assert model["cached"] and model["inputs"][0]["shape"] == [1, 3, 32, 32]
    similar = cli("similar", "net.py", "-k", "2", "--json")  # traced at 224 before: a failure on this model
    assert similar.exit_code == 0, similar.output


def test_cached_paths_are_absolute_and_shown_from_where_you_are(project, cli, monkeypatch):
    ensure_cached(cli)
    [record] = [json.loads(cli("scan", "cache:net.py", "--json").stdout)["models"][0]]
    assert os.path.isabs(record["source"]) and record["source"] == os.path.abspath(project / "net.py")
    listed = cli("cache", "list")
    assert " net.py " in f" {listed.stdout} "
    monkeypatch.chdir(project.parent)
    elsewhere = cli("scan", "cache:net.py")
    assert elsewhere.exit_code == 0, elsewhere.output
    assert "proj/net.py" in elsewhere.stdout


def test_compare_takes_inputs_per_side(project, cli):
    write_file(project / "wide.py", NET.replace("3, 8, 3", "3, 16, 3").replace("Linear(8", "Linear(16"))
    result = cli("compare", "net.py", "wide.py", "-i", "1,3,32,32", "--input-shape-b", "1,3,64,64", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["a"]["macs"] and data["b"]["macs"]
    assert data["b"]["macs"] > 4 * data["a"]["macs"]  # twice the width at four times the pixels


def test_a_model_picked_with_model_is_remembered_with_its_inputs(project, cli):
    write_file(project / "two.py", "# two\n" + NET + NET.replace("class Net", "class Other").replace("8, 10", "8, 3"))
    first = cli("scan", "two.py", "-m", "Other", "-i", "1,3,32,32")
    assert first.exit_code == 0, first.output
    again = json.loads(cli("scan", "two.py", "--json").stdout)["models"]
    assert [(m["name"], m["cached"]) for m in again] == [("Other", True)]


def test_check_takes_a_directory_as_scan_finds_its_files(project, cli):
    result = cli("check", "models", "--json")
    assert result.exit_code == 0, result.output
    assert [Path(r["path"]).name for r in json.loads(result.stdout)["results"]] == ["other.py"]


def test_the_newest_scan_of_a_file_is_the_one_reused(project, cli):
    write_file(project / "sized.py", NET)
    for shape in ("1,3,32,32", "1,3,64,64"):
        assert cli("scan", "sized.py", "-i", shape).exit_code == 0
    [model] = json.loads(cli("scan", "sized.py", "--json").stdout)["models"]
    assert model["inputs"][0]["shape"] == [1, 3, 64, 64]
    compared = json.loads(cli("compare", "sized.py", "resnet18", "--json").stdout)
    assert compared["a"]["macs"] == model["macs"]  # not traced again at 224



def test_a_class_named_now_is_found_in_a_scan_of_its_whole_file(project, cli):
    assert cli("scan", "pkgmod/layers.py", "-i", "1,3,48,48").exit_code == 0
    for args in (["pkgmod.layers:Net"], ["pkgmod/layers.py", "-m", "Net"]):
        [model] = json.loads(cli("scan", *args, "--json").stdout)["models"]
        assert model["cached"] and model["inputs"][0]["shape"] == [1, 3, 48, 48], args


def test_bench_refuses_a_cached_scan_whose_file_changed(project, cli):
    original = NET.replace("nn.ReLU()", "nn.GELU()")  # content of its own: the cache is keyed by content
    write_file(project / "edited.py", original)
    assert cli("scan", "edited.py", "-i", "1,3,32,32").exit_code == 0
    write_file(project / "edited.py", original.replace("3, 8, 3", "3, 12, 3").replace("Linear(8", "Linear(12"))
    line = refused_in_one_line(cli("bench", "cache:edited.py", "--repeat", "2"), "bench", "cache")
    assert "is not as it was scanned" in line


def test_check_sees_every_model_of_a_file_whatever_was_scanned_before(project, cli):
    write_file(project / "pair.py", "# pair\n" + NET + NET.replace("class Net", "class Other").replace("8, 10", "8, 3"))
    assert cli("scan", "pair.py", "-m", "Other", "-i", "1,3,32,32").exit_code == 0
    checked = json.loads(cli("check", "pair.py", "-i", "1,3,32,32", "--json").stdout)
    assert sorted(r["name"].rpartition(":")[2] for r in checked["results"]) == ["Net", "Other"]


def test_a_class_named_now_gets_its_own_newest_scan(project, cli):
    write_file(project / "history.py", "# history\n" + NET + NET.replace("class Net", "class Other").replace("8, 10", "8, 3"))
    for model, shape in (("Net", "1,3,32,32"), ("Net", "1,3,40,40"), ("Other", "1,3,32,32")):
        assert cli("scan", "history.py", "-m", model, "-i", shape).exit_code == 0
    [model] = json.loads(cli("scan", "history.py", "-m", "Net", "--json").stdout)["models"]
    assert model["inputs"][0]["shape"] == [1, 3, 40, 40]


def test_a_plain_train_predictor_keeps_each_heads_epochs():
    from narcli.cli.predict_commands import _net_config
    from narcli.predict.training import NetConfig

    assert _net_config(None, 0, "cpu", 0).epochs == NetConfig().epochs  # no --epochs: not a usage error
    assert _net_config(7, 0, "cpu", 0).epochs == 7

