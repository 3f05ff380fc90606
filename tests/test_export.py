"""`nar export`: the files it writes, and only those (issue 43: planted symlinks, a destination that is
a directory, names two models share, an op type holding a NUL, `unet.py.graph.json`), and plain UTF-8
DOT labels."""

import json

import pytest

from narcli.graph.synthetic import residual_stack

from .conftest import mlp_source


def one_error_line(result, needle):
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.rc"
    path.write_text("precious\n")
    return path


@pytest.mark.parametrize("planted", ["timm_resnet18.graph.json", "timm_resnet18.dot"])
def test_a_symlink_at_either_output_is_refused_and_nothing_is_written(cli, tmp_path, victim, planted):
    out = tmp_path / "out"
    out.mkdir()
    (out / planted).symlink_to("../victim.rc")
    one_error_line(cli("export", "resnet18", "-o", out), "is a symlink; nar never writes through one")
    assert victim.read_text() == "precious\n"
    assert [p.name for p in out.iterdir()] == [planted]  # the other file was not written either


def test_a_destination_that_is_a_directory_leaves_no_half_export(cli, tmp_path):
    out = tmp_path / "out"
    (out / "timm_resnet18.dot").mkdir(parents=True)
    one_error_line(cli("export", "resnet18", "-o", out), "is a directory")
    assert [p.name for p in out.iterdir()] == ["timm_resnet18.dot"]
    assert not (out / "timm_resnet18.graph.json").exists()


def test_an_export_replaces_an_earlier_one(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("export", "resnet18", "-o", out).exit_code == 0
    (out / "timm_resnet18.dot").write_text("stale")
    assert cli("export", "resnet18", "-o", out).exit_code == 0
    assert (out / "timm_resnet18.dot").read_text().startswith('digraph "timm/resnet18"')
    assert sorted(p.name for p in out.iterdir()) == ["timm_resnet18.dot", "timm_resnet18.graph.json"]


def test_a_files_exports_are_named_after_the_model_without_py(cli, write, tmp_path):
    out = tmp_path / "out"
    result = cli("export", write("unet.py", mlp_source(4, 8, 2)), "-o", out, "--json")
    assert result.exit_code == 0, result.output
    assert [p.split("/")[-1] for p in json.loads(result.stdout)] == ["unet.graph.json", "unet.dot"]


def test_two_models_whose_names_share_80_characters_export_to_two_file_pairs(cli, write, tmp_path):
    prefix = "Block" * 18  # 90 characters
    source = mlp_source(4, 8, 2).replace("class Net", f"class {prefix}One")
    source += mlp_source(4, 16, 2).split("\n\n\n")[1].replace("class Net", f"class {prefix}Two")
    model = write("long.py", source)
    out = tmp_path / "out"
    result = cli("export", model, "-o", out, "--json")
    assert result.exit_code == 0, result.output
    written = json.loads(result.stdout)
    assert len(written) == len(set(written)) == 4 and sorted(p.name for p in out.iterdir()) == sorted(
        p.split("/")[-1] for p in written)
    hidden = {json.loads((out / p.split("/")[-1]).read_text())["nodes"][1]["attrs"]["out_features"]
              for p in written if p.endswith(".json")}
    assert hidden == {8, 16}  # both models, neither lost


def test_stems_are_bounded_distinct_and_stable():
    from narcli.graph.dot import STEM_LIMIT, export_paths, safe_stem

    long = "m.py:" + "X" * 100
    assert len(safe_stem(long + "1")) == STEM_LIMIT and safe_stem(long + "1") != safe_stem(long + "2")
    assert safe_stem(long + "1") == safe_stem(long + "1")
    assert safe_stem("timm/resnet18") == "timm_resnet18" and safe_stem("models.py:Net") == "models_Net"
    pairs = export_paths(["a/b", "a_b", "a_b"], __import__("pathlib").Path("out"))
    assert len({json for json, _ in pairs}) == 3


def test_a_nul_or_control_character_in_an_op_type_is_escaped_in_dot():
    from narcli.graph.dot import graph_dot

    graph = residual_stack(2)
    graph.nodes[1].op = "unknown:Foo\x00Bar\x1b[2J"
    dot = graph_dot(graph, "net\x00")
    assert "\x00" not in dot and "\x1b" not in dot
    assert 'label="unknown:Foo\\\\x00Bar\\\\x1b[2J' in dot and dot.startswith('digraph "net\\\\x00" {')


def test_an_onnx_op_type_with_a_nul_exports_a_readable_dot(cli, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("Foo\x00Bar", ["x"], ["y"], domain="custom")
    graph = helper.make_graph([node], "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)])
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))
    result = cli("export", path, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    dot = (tmp_path / "out" / "custom.dot").read_bytes()
    assert b"\x00" not in dot and b"Foo\\\\x00Bar" in dot


# DOT labels are readable text
def test_dot_export_labels_are_plain_utf8():
    from narcli.graph.synthetic import residual_stack
    from narcli.tui.data import graph_dot

    dot = graph_dot(residual_stack(2), 'my "net" \\ v2')
    assert 'label="input\\n1×3×224×224"' in dot and "u00d7" not in dot
    assert dot.startswith('digraph "my \\"net\\" \\\\ v2" {')


# a graph export from the command line, as the browser's `e` writes it
def test_nar_export_writes_json_and_dot(cli, write, tmp_path):
    import json

    out = tmp_path / "out"
    result = cli("export", "resnet18", "-o", out, "--json")
    assert result.exit_code == 0, result.output
    written = [p.split("/")[-1] for p in json.loads(result.stdout)]
    assert written == ["timm_resnet18.graph.json", "timm_resnet18.dot"]
    assert json.loads((out / "timm_resnet18.graph.json").read_text())["nodes"]
    assert (out / "timm_resnet18.dot").read_text().startswith('digraph "timm/resnet18" {')
    model = write("tiny.py", mlp_source(4, 8, 2))
    assert cli("export", model, "-o", out).exit_code == 0 and (out / "tiny.dot").exists()
    assert cli("export", "no-such-model", "-o", out).exit_code == 1
