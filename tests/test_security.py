"""No code from data files: `.pt2` archives, our feature cache and training checkpoints are read
without unpickling or evaluating anything they hold."""

import json
import pickle
import zipfile

import numpy as np
import pytest
import torch
from torch import nn

from narcli.errors import LoadError

from .conftest import run_nar


class _Planted:
    """A pickle that, when loaded, creates a file: proof that loading ran code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _export(path, dynamic=False):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.fc = nn.Linear(8, 2)
            self.register_buffer("scale", torch.ones(2))

        def forward(self, x):
            return self.fc(self.conv(x).mean((2, 3))) * self.scale

    shapes = {"x": {0: torch.export.Dim("batch")}} if dynamic else None
    program = torch.export.export(Net(), (torch.randn(2, 3, 16, 16),), dynamic_shapes=shapes)
    torch.export.save(program, str(path))
    return path


def _rewrite(source, target, change):
    """Copy a zip, passing each record's (name, bytes) through `change`."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            new.writestr(info, change(info.filename, old.read(info.filename)))
    return target


def test_pt2_sample_inputs_are_never_unpickled(tmp_path, cli):
    marker = tmp_path / "ran"
    planted = pickle.dumps(_Planted(marker))
    path = _rewrite(_export(tmp_path / "net.pt2"), tmp_path / "planted.pt2",
                    lambda name, data: planted if "sample_inputs" in name or "/weights/weight_" in name else data)
    result = cli("scan", path, "--json")
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    [record] = json.loads(result.stdout)["models"]
    assert record["params"] == 8 * 3 * 9 + 8 + 8 * 2 + 2  # shapes come from the graph, not the weights


def test_pt2_gives_the_graph_torch_export_load_gives(tmp_path):
    from narcli.trace.pt2_archive import load_exported_program
    from narcli.trace.torch_tracer import raw_from_program

    for dynamic in (False, True):
        path = _export(tmp_path / f"net-{dynamic}.pt2", dynamic)
        ours, theirs = raw_from_program(load_exported_program(path)), raw_from_program(torch.export.load(str(path)))
        assert [(o.op, str(o.shape)) for o in ours.ops] == [(o.op, str(o.shape)) for o in theirs.ops]


def test_pt2_symbolic_shape_that_would_run_code_is_refused(tmp_path):
    from narcli.trace.pt2_archive import load_exported_program

    marker = tmp_path / "ran"
    payload = f"__import__('builtins').open('{marker}', 'w')"

    def poison(name, data):
        if not name.endswith("models/model.json"):
            return data
        text = data.decode()
        assert '"expr_str": "' in text
        return text.replace('"expr_str": "', '"expr_str": "' + payload.replace("'", "\\u0027") + " + ", 1).encode()

    path = _rewrite(_export(tmp_path / "dyn.pt2", dynamic=True), tmp_path / "poisoned.pt2", poison)
    with pytest.raises(LoadError, match="not a shape symbol or function"):
        load_exported_program(path)
    assert not marker.exists()


@pytest.mark.parametrize("record, message", [
    ("archive/serialized_exported_program.json", "pre-2.8 torch.export layout"),
    ("archive/readme.txt", "no models/\\*.json"),
])
def test_pt2_layouts_nar_cannot_read_safely_are_refused(tmp_path, record, message):
    from narcli.trace.pt2_archive import load_exported_program

    path = tmp_path / "old.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(record, "{}")
    with pytest.raises(LoadError, match=message):
        load_exported_program(path)


def test_unreadable_pt2_is_one_line_without_torch_logging(tmp_path):
    path = tmp_path / "broken.pt2"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    result = run_nar("scan", path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert "not a readable torch.export archive" in result.stderr


def test_feature_cache_is_plain_arrays_and_a_planted_pickle_is_not_loaded(tmp_path, nar_home):
    from narcli.encode.feature_cache import cached_features, load_features
    from narcli.encode.features import FEATURES_VERSION, encode_graph
    from narcli.graph.synthetic import residual_stack

    graphs = {"a": encode_graph(residual_stack(12)), "b": encode_graph(residual_stack(30, channels=8))}
    value = cached_features("t", lambda: graphs)
    path = nar_home / "features" / f"t-v{FEATURES_VERSION}.npz"
    again = load_features(path)  # allow_pickle=False inside
    assert list(again) == ["a", "b"] and np.array_equal(again["a"].edges, graphs["a"].edges)
    assert value is graphs

    marker = tmp_path / "ran"
    np.savez(path, layout=np.array([_Planted(marker)], dtype=object), allow_pickle=True)
    rebuilt = cached_features("t", lambda: graphs)
    assert not marker.exists() and list(rebuilt) == ["a", "b"]


def test_a_planted_training_checkpoint_does_not_run(tmp_path):
    from narcli.encode.training import _read_checkpoint

    marker = tmp_path / "ran"
    path = tmp_path / "encoder.pt"
    torch.save({"config": _Planted(marker)}, path)
    assert _read_checkpoint(path) is None
    assert not marker.exists()


# -- code inside a model folder is never imported by a walk ------------------------------------------
EVIL_MODELING = """
import torch
from torch import nn
open({marker!r}, "w").write("ran")


class EvilModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""


def _evil_folder(folder, marker, config=None):
    folder.mkdir(parents=True, exist_ok=True)
    config = config or {"model_type": "bert", "architectures": ["EvilModel"],
                        "auto_map": {"AutoModel": "modeling_evil.EvilModel"}}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "modeling_evil.py").write_text(EVIL_MODELING.format(marker=str(marker)))
    (folder / "inner").mkdir(exist_ok=True)
    (folder / "inner" / "helpers.py").write_text(EVIL_MODELING.format(marker=str(marker) + "-inner"))
    return folder


@pytest.mark.parametrize("depth", [["sub"], ["a", "b", "sub"]])
def test_a_directory_scan_never_imports_a_nested_model_folders_code(cli, tmp_path, depth):
    marker = tmp_path / "ran"
    root = tmp_path / "project"
    _evil_folder(root.joinpath(*depth), marker)
    result = cli("scan", root, "--json")
    assert not marker.exists() and not (tmp_path / "ran-inner").exists()
    files = {entry["path"]: entry for entry in json.loads(result.stdout)["files"]}
    folder = str(root.joinpath(*depth))
    assert "needs its own modeling code" in files[folder]["error"]  # the folder itself went through its check
    for name in ("modeling_evil.py", "inner/helpers.py"):
        assert "never imports a model folder's code" in files[f"{folder}/{name}"]["skipped"]
    assert "EvilModel" not in result.stdout.replace("modeling_evil", "")


def test_a_scan_of_a_folder_inside_a_model_folder_imports_nothing(cli, tmp_path):
    marker = tmp_path / "ran"
    folder = _evil_folder(tmp_path / "hub" / "evil", marker)
    result = cli("scan", folder / "inner", "--json")
    assert not (tmp_path / "ran-inner").exists()
    [entry] = json.loads(result.stdout)["files"]
    assert "never imports a model folder's code" in entry["skipped"]


def test_check_never_imports_a_model_folders_code(cli, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    folder = _evil_folder(tmp_path / "repo" / "weights", marker)
    monkeypatch.chdir(tmp_path / "repo")
    result = cli("check", folder / "modeling_evil.py", folder / "inner" / "helpers.py", "--json")
    assert not marker.exists() and not (tmp_path / "ran-inner").exists()
    assert all("model folder" in r["skipped"] for r in json.loads(result.stdout)["results"])


def test_a_training_config_beside_a_model_is_not_a_model_folder(cli, write, tmp_path):
    from narcli.scan.scanner import model_targets

    write("proj/train/config.json", json.dumps({"lr": 0.1, "epochs": 3}))
    model = write("proj/train/net.py", "from torch import nn\nclass Net(nn.Module):\n    pass\n")
    assert model_targets(tmp_path / "proj") == [(model, None)]


def test_naming_a_model_folders_file_is_consent(cli, tmp_path):
    """The refusal says 'scan its .py file instead': naming the file runs it, as any .py does."""
    marker = tmp_path / "ran"
    folder = _evil_folder(tmp_path / "hub", marker)
    result = cli("scan", folder / "modeling_evil.py", "--input-shape", "1,4")
    assert result.exit_code == 0, result.output
    assert marker.exists()


# -- a .pt2 that inflates without bound (issue 30) ----------------------------------------------------
def _bomb(path, inflated: int, claimed: int | None = None):
    """A .pt2 whose program record is `inflated` bytes of JSON-looking text that deflates ~1000:1."""
    import zlib

    body = b'{"a": "' + b"x" * (inflated - 10) + b'"}'
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("bomb/models/model.json", body)
    if claimed is not None:  # lie about the size in both headers, as a crafted archive can
        data = bytearray(path.read_bytes())
        for marker in (b"PK\x03\x04", b"PK\x01\x02"):
            at = data.find(marker)
            offset = 22 if marker == b"PK\x03\x04" else 24
            data[at + offset:at + offset + 4] = claimed.to_bytes(4, "little")
        path.write_bytes(bytes(data))
    del zlib
    return path


@pytest.mark.parametrize("claimed", [None, 1000])
def test_a_pt2_zip_bomb_is_refused_before_it_inflates(tmp_path, claimed):
    import resource
    import time

    from narcli.trace.pt2_archive import load_exported_program

    path = _bomb(tmp_path / "bomb.pt2", 300 << 20, claimed)
    assert path.stat().st_size < 1 << 20
    start, peak = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # a lying header: zipfile stops at the size it claims, and the CRC then fails
    with pytest.raises(LoadError, match="zip bomb|inflates past|larger than|Bad CRC"):
        load_exported_program(path)
    assert time.perf_counter() - start < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200 << 10  # KiB: under 200 MB more


def test_a_pt2_program_past_the_size_limit_is_refused_with_the_limit(tmp_path):
    from narcli.trace.pt2_archive import MAX_PROGRAM_BYTES, load_exported_program

    path = tmp_path / "huge.pt2"
    with zipfile.ZipFile(path, "w") as archive:  # stored, as torch writes it: no ratio to check
        archive.writestr("huge/models/model.json", b" " * (MAX_PROGRAM_BYTES + 1))
    with pytest.raises(LoadError, match="larger than 64 MB"):
        load_exported_program(path)
