"""Strings from outside — file names, ONNX op types, model names, error messages — are shown as the
text they are: never read as Rich markup (which crashes on `[/]` and hides `[bold red]`), never
passed raw to the terminal (an escape sequence could clear the screen or set the window title)."""

import json

import onnx
import pytest
from onnx import TensorProto, helper

from .conftest import mlp_source

ESC = "\x1b"
CLEAR = f"{ESC}[2J"
TITLE = f"{ESC}]0;pwned\x07"
HOSTILE_OPS = ["Op[/]", "[bold red]Loud[/bold red]", f"Clear{CLEAR}", f"Title{TITLE}"]


def shown(text: str) -> str:
    """How nar shows `text`: control characters as \\xNN escapes."""
    return text.replace(ESC, "\\x1b").replace("\x07", "\\x07")


def onnx_with_op(path, op_type: str):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node(op_type, ["r"], ["y"], domain="evil")]
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("evil", 1)])
    onnx.save(model, str(path))
    return path


def clean(result):
    assert "Traceback" not in result.output and "MarkupError" not in result.output, result.output
    assert ESC not in result.output, repr(result.output[-400:])
    assert "internal error" not in result.output, result.output


@pytest.mark.parametrize("op_type", HOSTILE_OPS)
def test_an_onnx_op_type_is_shown_as_text_and_the_cache_stays_usable(cli, tmp_path, op_type):
    path = onnx_with_op(tmp_path / "net.onnx", op_type)
    for attempt in range(2):  # the second scan is a cache hit: it must print as well as the first
        result = cli("scan", path)
        clean(result)
        assert result.exit_code == 0, result.output
        assert shown(op_type) in result.output.replace("\n", ""), (attempt, result.output)
    for command in (["similar", path, "-k", "2"], ["motifs", path], ["compare", path, path]):
        result = cli(*command)
        clean(result)
        assert result.exit_code == 0, (command, result.output)


@pytest.mark.parametrize("name", ["m[/]x.py", "[bold red]y[blink].py", f"e{TITLE}.py", f"c{CLEAR}.py",
                                  "tab\tand\u202eflip.py"])
def test_a_file_name_is_shown_as_the_file_it_is(cli, write, tmp_path, name, monkeypatch):
    path = write(name, mlp_source(6, 12, 3))
    monkeypatch.chdir(tmp_path)
    # `m[/]x.py` is the file `]x.py` in the folder `m[`; commands name a model by its file's name
    expected = shown(name.split("/")[-1]).replace("\t", "\\x09").replace("\u202e", "\\u202e")
    for command in (["scan", name], ["similar", name, "-k", "2"], ["check", name], ["motifs", name],
                    ["compare", name, name], ["predict", name]):
        result = cli(*command)
        clean(result)
        assert result.exit_code in (0, 1), (command, result.output)
        assert expected in result.output.replace("\n", ""), (command, result.output)
    assert json.loads(cli("scan", name, "--json").stdout)["path"] == name  # JSON keeps the real name


@pytest.mark.parametrize("name", [f"no[/]such{CLEAR}.py", "[red]gone[/red].onnx", f"{TITLE}.pt2"])
def test_error_lines_show_names_escaped(cli, name):
    result = cli("scan", name)
    clean(result)
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("error:") and shown(name) in line, line


def test_printable_escapes_every_control_and_keeps_text():
    from narcli.errors import printable

    assert printable("résumé ✓ [x]") == "résumé ✓ [x]"
    assert printable(f"a{CLEAR}b\x00\x7f\x9b\u202e\u200b") == "a\\x1b[2Jb\\x00\\x7f\\x9b\\u202e\\u200b"
    assert printable("one\ntwo") == "one\\x0atwo" and printable("one\ntwo", newlines=True) == "one\ntwo"


def test_a_console_shows_control_characters_that_a_renderer_missed():
    import io

    from rich.table import Table

    from narcli.cli.common import console

    out = io.StringIO()
    table = Table()
    table.add_column("name")
    table.add_row(f"x{CLEAR}y")  # as if a renderer forgot to escape it
    console(file=out, width=80).print(table)
    assert ESC not in out.getvalue() and "x\\x1b" in out.getvalue()  # escaped (its width was measured raw)
