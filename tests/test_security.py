"""No code from data files: `.pt2` archives, our feature cache and training checkpoints are read
without unpickling or evaluating anything they hold."""

import json
import os
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
    from narcli.scan.walk import model_targets

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

    from narcli.trace.pt2_archive import load_exported_program

    path = _bomb(tmp_path / "bomb.pt2", 300 << 20, claimed)
    assert path.stat().st_size < 1 << 20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # a lying header: zipfile stops at the size it claims, and the CRC then fails
    with pytest.raises(LoadError, match="zip bomb|inflates past|larger than|Bad CRC"):
        load_exported_program(path)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200 << 10  # KiB: under 200 MB more


def test_a_pt2_program_past_the_size_limit_is_refused_with_the_limit(tmp_path):
    from narcli.trace.pt2_archive import MAX_PROGRAM_BYTES, load_exported_program

    path = tmp_path / "huge.pt2"
    with zipfile.ZipFile(path, "w") as archive:  # stored, as torch writes it: no ratio to check
        archive.writestr("huge/models/model.json", b" " * (MAX_PROGRAM_BYTES + 1))
    with pytest.raises(LoadError, match="larger than 64 MB"):
        load_exported_program(path)


# -- nar never writes through a symlink (issue 43) ---------------------------------------------------
# Every file narcli creates goes through narcli/fsutil.py: an atomic write that refuses a symlink at
# the destination, a lock or log opened with O_NOFOLLOW, a database refused when it is a symlink.
# The scan below finds the calls that create or write a file anywhere else in the package.
import ast  # noqa: E402
from pathlib import Path  # noqa: E402

PACKAGE = Path(__file__).resolve().parent.parent / "narcli"
PATH_WRITERS = {"save", "savez", "savez_compressed", "savetxt"}  # np.* / torch.save: a path or a handle
OS_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC")
SAFE_HANDLES = {"atomic_writer", "fresh_file"}  # handles from fsutil: what is written into them is safe
# module -> what may stay there, and why
ALLOWED_WRITES = {
    "fsutil.py": {"*"},  # the helper itself
    # annoy writes its own file; it unlinks the name before creating it (never writes through a
    # link), and the name is a temporary in nar's own index folder, renamed under the index lock
    "search/index.py": {"annoy.save"},
}


def _call_name(node: ast.Call) -> str:
    return ast.unparse(node.func)


def _mode(node: ast.Call, position: int) -> str:
    for keyword in node.keywords:
        if keyword.arg == "mode":
            return ast.unparse(keyword.value)
    return ast.unparse(node.args[position]) if len(node.args) > position else "'r'"


def file_writes(source: str) -> list[str]:
    """`line: call` for each call in `source` that creates or writes a file without fsutil."""
    tree = ast.parse(source)
    safe_handles = {item.optional_vars.id for node in ast.walk(tree) if isinstance(node, ast.With)
                    for item in node.items if isinstance(item.context_expr, ast.Call)
                    and _call_name(item.context_expr).split(".")[-1] in SAFE_HANDLES
                    and isinstance(item.optional_vars, ast.Name)}
    guarded = set()  # sqlite3.connect calls in a function that refuses a symlinked database first
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            calls = [c for c in ast.walk(function) if isinstance(c, ast.Call)]
            if any(_call_name(c).split(".")[-1] == "refuse_symlink" for c in calls):
                guarded.update(id(c) for c in calls)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        last = name.split(".")[-1]
        position = 1 if name.startswith("torch") else 0  # where the file goes: torch.save(obj, f), np.save(f, a)
        target = node.args[position] if len(node.args) > position else None
        writes = (
            (name in ("open", "io.open") and any(c in _mode(node, 1) for c in "wax+"))
            or (last == "open" and name not in ("open", "io.open", "os.open") and any(c in _mode(node, 0) for c in "wax+"))
            or (isinstance(node.func, ast.Attribute) and last in ("write_text", "write_bytes")
                and not name.startswith("fsutil."))
            or (name == "os.open" and any(flag in ast.unparse(node) for flag in OS_WRITE_FLAGS))
            or last == "save_file"
            or (name.split(".")[0] in ("np", "numpy", "torch") and last in PATH_WRITERS
                and not (isinstance(target, ast.Name) and target.id in safe_handles))
            or (name == "sqlite3.connect" and "mode=ro" not in ast.unparse(node) and id(node) not in guarded)
            or (name.startswith("shutil.") and last in ("copy", "copy2", "copyfile", "copytree", "move"))
            or (last == "save" and "annoy" in name.lower())
        )
        if writes:
            found.append(f"{node.lineno}: {name}")
    return found


def test_no_module_writes_a_file_except_through_fsutil():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        allowed = ALLOWED_WRITES.get(module, set())
        if "*" in allowed:
            continue
        calls = [c for c in file_writes(path.read_text()) if c.split(": ", 1)[1] not in allowed]
        if calls:
            offenders[module] = calls
    assert offenders == {}, "route these through narcli.fsutil (atomic_writer, write_text, open_lock_file, ...)"


@pytest.mark.parametrize("line", [
    "open(p, 'w')", "open(p, mode='ab')", "Path(p).open('w')", "p.write_text('x')", "p.write_bytes(b'')",
    "os.open(p, os.O_RDWR | os.O_CREAT)", "np.savez(p, a=a)", "torch.save(x, p)", "save_file(t, str(p))",
    "sqlite3.connect(p)", "shutil.copy(a, b)", "annoy.save(str(p))",
])
def test_the_write_scan_sees_each_kind_of_write(line):
    assert len(file_writes(line)) == 1, line


@pytest.mark.parametrize("source", [
    "open(p)", "open(p, 'rb')", "os.open(p, os.O_RDONLY)", "sqlite3.connect(f'file:{p}?mode=ro', uri=True)",
    "with atomic_writer(p, 'wb') as h:\n    np.savez(h, a=a)\n    torch.save(x, h)",
    "def f(p):\n    refuse_symlink(p)\n    sqlite3.connect(p)",
])
def test_the_write_scan_passes_reads_and_fsutil_handles(source):
    assert file_writes(source) == []


@pytest.fixture
def victim(tmp_path):
    """A file of the user's that a planted symlink points at; it must come through untouched."""
    path = tmp_path / "victim.rc"
    path.write_text("precious\n")
    return path


@pytest.fixture
def lock_root(tmp_path, monkeypatch):
    """The measurement locks' fixed root, and the temporary directory the old lock used, both here."""
    import tempfile

    from narcli.bench import lock

    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(lock, "LOCK_ROOT", root, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_the_measurement_lock_is_one_place_whatever_tmpdir_or_nar_home(monkeypatch, tmp_path):
    import tempfile

    from narcli.bench.lock import lock_path

    first = lock_path("cpu")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("NAR_HOME", str(tmp_path / "other-home"))
    assert lock_path("cpu") == first and tmp_path not in first.parents
    assert first.parent.stat().st_mode & 0o777 == 0o700


def test_a_symlink_at_the_measurement_lock_is_never_written_through(lock_root, victim):
    from narcli.bench.lock import lock_path, measuring
    from narcli.fsutil import UnsafePathError

    path = lock_path("cpu")
    path.symlink_to(victim)
    with pytest.raises(UnsafePathError, match="symlink"):
        with measuring("cpu"):
            pass
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("planted", ["symlink", "open to others"])
def test_a_lock_folder_another_user_could_plant_in_is_not_used(lock_root, tmp_path, nar_home, planted):
    from narcli.bench.lock import lock_path, measuring

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    folder = lock_root / f"nar-{os.getuid()}"
    if planted == "symlink":
        folder.symlink_to(theirs, target_is_directory=True)
    else:
        folder.mkdir()
        folder.chmod(0o777)
        theirs = folder
    with measuring("cpu"):
        assert lock_path("cpu").parent == nar_home / "locks"
    assert not list(theirs.iterdir())


@pytest.mark.parametrize("name", [".lock", "", "-wal"])
def test_the_zoo_writer_never_opens_its_lock_or_database_through_a_symlink(tmp_path, victim, name):
    from narcli.errors import NarError
    from narcli.zoo.build import ZooWriter

    db = tmp_path / "zoo.db"
    Path(f"{db}{name}").symlink_to(victim)
    with pytest.raises(NarError, match="symlink"):
        ZooWriter(db).close()
    assert victim.read_text() == "precious\n"


def test_the_index_lock_is_never_opened_through_a_symlink(tmp_path, victim):
    from narcli.fsutil import UnsafePathError
    from narcli.search.index import LOCK_NAME, build_index

    (tmp_path / "index").mkdir()
    (tmp_path / "index" / LOCK_NAME).symlink_to(victim)
    with pytest.raises(UnsafePathError, match="symlink"):
        build_index(tmp_path / "index" / "user.json", ["a", "b"], np.eye(2, 4, dtype=np.float32))
    assert victim.read_text() == "precious\n"


def _chatter(text):
    print(text, flush=True)
    return text


def test_a_worker_log_planted_as_a_symlink_is_not_written_through(tmp_path, victim):
    from narcli.trace.pool import run_pool

    log = tmp_path / "zoo.db.log"
    log.symlink_to(victim)
    results = []
    run_pool(_chatter, [("a", ("worker chatter",))], results.append, jobs=1, timeout=60, log_path=str(log))
    assert [r.value for r in results] == ["worker chatter"]  # the work is done; only its chatter is dropped
    assert victim.read_text() == "precious\n"


def _save_features(path):
    from narcli.encode.feature_cache import save_features
    from narcli.encode.features import encode_graph
    from narcli.graph.synthetic import residual_stack

    save_features(path, {"a": encode_graph(residual_stack(2))})


def _write_graph(path):
    from narcli.graph.dot import write_graph
    from narcli.graph.synthetic import residual_stack

    write_graph(residual_stack(2), path.name.split(".")[0], path.parent)


def _safetensors(path):
    from narcli.trace.checkpoint import write_safetensors_header

    write_safetensors_header(path, {"w": (2, 2)})


@pytest.mark.parametrize("writer, name", [
    (lambda p: __import__("narcli.fsutil").fsutil.write_text(p, "x"), "out.txt"),
    (lambda p: __import__("narcli.fsutil").fsutil.write_bytes(p, b"x"), "out.bin"),
    (_save_features, "features.npz"), (_write_graph, "net.dot"), (_write_graph, "net.graph.json"),
    (_safetensors, "w.safetensors"),
])
def test_every_writer_refuses_a_symlink_at_its_destination_and_leaves_nothing(tmp_path, victim, writer, name):
    from narcli.fsutil import UnsafePathError

    (tmp_path / "out").mkdir()
    destination = tmp_path / "out" / name
    destination.symlink_to(victim)
    with pytest.raises(UnsafePathError, match="symlink"):
        writer(destination)
    assert victim.read_text() == "precious\n"
    assert [p.name for p in (tmp_path / "out").iterdir()] == [name]  # no temporary left behind


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    from narcli.fsutil import atomic_writer

    path = tmp_path / "card.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_writer(path) as handle:
            handle.write("half")
            raise RuntimeError("disk gone")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["card.json"]


# -- a model folder's config never makes a library load a file (issue 43) ----------------------------
def _needs(library):
    import importlib.util

    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")


@pytest.mark.parametrize("model_args", [
    lambda evil: {"checkpoint_path": evil}, lambda evil: {"pretrained": True, "num_classes": 10},
    lambda evil: {"pretrained_cfg_overlay": {"file": evil}}, lambda evil: {"weights_file": evil},
], ids=["checkpoint_path", "pretrained", "pretrained_cfg_overlay", "weights_file"])
def test_a_timm_folder_naming_a_checkpoint_builds_without_loading_it(cli, tmp_path, model_args):
    _needs("timm")
    marker = tmp_path / "ran"
    evil = tmp_path / "elsewhere" / "evil.pth"
    evil.parent.mkdir()
    evil.write_bytes(pickle.dumps({"state_dict": _Planted(marker)}))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architecture": "resnet18", "num_classes": 10, "pretrained_cfg": {},
                                                    "model_args": model_args(str(evil))}))
    result = cli("scan", folder, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["models"][0]["params"] == 11_181_642  # the architecture, as named
    assert not marker.exists()


TINY_DETR = {"model_type": "detr", "d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "num_queries": 5,
             "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32}


@pytest.mark.parametrize("backbone", [
    {"use_timm_backbone": True, "backbone": "resnet18", "backbone_kwargs": {"out_indices": [1, 2, 3, 4]}},
    {"backbone_config": {"model_type": "timm_backbone", "backbone": "resnet18", "use_pretrained_backbone": True,
                         "out_indices": [1, 2, 3, 4]}},
], ids=["backbone config from the hub (transformers 5)", "pretrained backbone weights (transformers 4)"])
def test_building_a_transformers_folder_fetches_nothing(cli, tmp_path, monkeypatch, backbone):
    _needs("transformers")
    _needs("timm")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # a fetch would be refused at once, and show
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    folder = tmp_path / "detr"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**TINY_DETR, **backbone}))
    result = cli("scan", folder, "--json")
    if result.exit_code == 0:
        assert dict(json.loads(result.stdout)["models"][0]["top_ops"])["conv2d"] >= 20
    else:
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "nar fetches nothing while building a model folder" in lines[0], result.output


# -- every walk stays inside what the user named (issue 43) -------------------------------------------
def test_a_directory_scan_never_reads_a_file_linked_from_outside_the_tree(cli, write, tmp_path):
    """`nar scan DIR` already skipped linked folders; a linked *file* led out of the tree and was
    imported. It is now listed as skipped, with where it points; `nar check`'s globs refuse the same
    (tests/test_check.py::test_globs_never_leave_the_project_and_survive_symlink_loops)."""
    marker = tmp_path / "ran"
    write("elsewhere/evil.py", f"import torch\nopen({str(marker)!r}, 'w').write('x')\n")
    write("project/net.py", "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n"
          "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
          "    def forward(self, x):\n        return self.fc(x)\n")
    (tmp_path / "project" / "evil.py").symlink_to(tmp_path / "elsewhere" / "evil.py")
    (tmp_path / "project" / "same.py").symlink_to(tmp_path / "project" / "net.py")  # inside: scanned
    result = cli("scan", str(tmp_path / "project"))
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert "evil.py" in result.output and "outside" in result.output
