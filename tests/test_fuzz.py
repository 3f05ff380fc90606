"""Generated command lines against every command that reads user input: never a traceback, never an
`internal error`, exit codes as the README gives them (0, 1, or 2 for usage errors), one `error:`
line on failure, and no command loses a cached row or damages the database (a failed `compare` may
still have cached, or refreshed, the scan of a good file, so rows may be added or rewritten).

The default run tries a few hundred command lines; `pytest -m slow tests/test_fuzz.py` tries
thousands (FUZZ_EXAMPLES sets how many).
"""

import os
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from narcli.scan.cache import default_db_path

from .conftest import FIXTURES, write_file

TINY = """
from torch import nn
import os


class Tiny(nn.Module):
    def __init__(self, width=4, depth=1):
        super().__init__()
        self.body = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)], nn.Linear(width, 2))

    def forward(self, x):
        return self.body(x)


def make(width=4):
    return Tiny(width)
"""

# files the generated command lines point at; made once per session
FILES = {
    "tiny.py": TINY,
    "empty.py": "",
    "syntax.py": "def broken(:\n",
    "plain.py": "import torch\nVALUE = 1\n",
    "text.onnx": "not protobuf",
    "junk.pt2": b"PK\x03\x04junk",
    "junk.safetensors": (1 << 40).to_bytes(8, "little") + b"{",
    "weights.bin": b"\x80\x04junk",
    "notes.txt": "hello",
    "unicodé ✓.py": TINY,
    "config-folder/config.json": '{"model_type": "no-such-architecture"}',
    # hostile names: markup, terminal escapes (issue 30)
    "m[/]x.py": TINY,
    "[bold red]y[blink].py": TINY,
    "esc\x1b[2J\x1b]0;title\x07.py": TINY,
    # a model folder whose own code must never run, however a command reaches it (issue 30)
    "project/hub/config.json": '{"model_type": "bert", "auto_map": {"AutoModel": "modeling_evil.Evil"}}',
    "project/hub/modeling_evil.py": "import torch\nopen('EVIL-RAN', 'w').write('ran')\n",
    "project/hub/nested/more.py": "import torch\nopen('EVIL-RAN', 'w').write('ran')\n",
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    for name, text in FILES.items():
        write_file(root / name, text)
    (root / "tiny.onnx").write_bytes((FIXTURES / "tiny.onnx").read_bytes())
    (root / "half.onnx").write_bytes((FIXTURES / "tiny.onnx").read_bytes()[:60])
    from .test_hostile_names import HOSTILE_OPS, onnx_with_op

    for i, op_type in enumerate(HOSTILE_OPS):
        onnx_with_op(root / f"hostile{i}.onnx", op_type)
    return root


anything = st.text(max_size=40)
unicode_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


def paths(root):
    known = [str(root / name) for name in FILES] + [str(root / "tiny.onnx"), str(root / "half.onnx"),
                                                      str(root), str(root / "config-folder"), str(root / "project"),
                                                      str(root / "project" / "hub"), "project/hub/nested"]
    known += [str(root / f"hostile{i}.onnx") for i in range(4)]
    odd = ["", " ", "-", ".", "x" * 300 + ".py", str(root / "missing.py"), "cache:", "cache:tiny",
           "cache:" + "x" * 500, "tiny:Tiny", "os.path:join", "a.b:C(", "/dev/null", "resnet50", "timm/resnet50",
           "bert", "nope", "hf/", "%", "_", "resnet*", "*", "[", "\\"]
    return st.one_of(st.sampled_from(known + odd), unicode_names)


model_specs = st.one_of(
    st.sampled_from(["Tiny", "Tiny()", "Tiny(width=8)", "make(3)", "Tiny(depth=2, width=2)", "Tiny(", "os",
                     "Tiny(x=os.environ)", "Tiny(**{'width': 2})", "system('true')", "Tiny(width=-1)",
                     "Tiny(width=1e400)", "Tiny(width=" + "9" * 50 + ")", "lambda: 0", "Tiny(f=lambda: 0)",
                     "-" * 200 + "1", "Tiny(width=make(2))", "__import__('os')", "Tiny.__init__"]),
    anything,
)
shapes = st.one_of(
    st.lists(st.integers(-3, 2**64), min_size=0, max_size=9).map(lambda dims: ",".join(map(str, dims))),
    st.sampled_from(["1,4", "2,4", "4", "1x4", "1×4", "1,²", "", ",", "1,,4", "1,4.0", "0", "-1"]),
    anything,
)
dtypes = st.one_of(st.sampled_from(["float32", "long", "bool", "fp16", "int", "complex", "", "Float32"]), anything)
numbers = st.one_of(st.integers(-10, 10**20).map(str), st.sampled_from(["nan", "inf", "-inf", "1e300", "0.5", "x"]),
                    anything)


def options(*allowed):
    table = {
        "model": st.tuples(st.just("--model"), model_specs),
        "shape": st.tuples(st.just("--input-shape"), shapes),
        "dtype": st.tuples(st.just("--input-dtype"), dtypes),
        "timeout": st.tuples(st.just("--timeout"), numbers),
        "k": st.tuples(st.just("-k"), numbers),
        "threshold": st.tuples(st.just("--threshold"), numbers),
        "family": st.tuples(st.just("--family"), unicode_names),
        "source": st.tuples(st.just("--source"), unicode_names),
        "task": st.tuples(st.just("--task"), unicode_names),
        "limit": st.tuples(st.just("--limit"), numbers),
        "steps": st.tuples(st.just("--steps"), numbers),
        "max_size": st.tuples(st.just("--max-size"), numbers),
        "flag": st.sampled_from([("--json",), ("--no-cache",), ("--strict",), ("--graph",), ("--failed",)]),
    }
    return st.lists(st.one_of(*(table[a] for a in allowed)), max_size=3).map(
        lambda groups: [part for group in groups for part in group])


def command_lines(root):
    target = paths(root)
    return st.one_of(
        st.tuples(st.just(["scan"]), st.lists(target, min_size=1, max_size=1),
                  options("model", "shape", "dtype", "timeout", "flag")),
        st.tuples(st.just(["similar"]), st.lists(target, min_size=1, max_size=1),
                  options("model", "shape", "dtype", "timeout", "k", "family", "source", "task", "flag")),
        st.tuples(st.just(["compare"]), st.lists(target, min_size=2, max_size=2),
                  options("model", "shape", "dtype", "timeout", "flag")),
        st.tuples(st.just(["motifs"]), st.lists(target, min_size=1, max_size=1),
                  options("model", "shape", "timeout", "steps", "max_size", "limit", "flag")),
        st.tuples(st.just(["check"]), st.lists(target, min_size=0, max_size=2),
                  options("threshold", "timeout", "model", "flag")),
        st.tuples(st.just(["zoo", "show"]), st.lists(target, min_size=1, max_size=1), options("flag")),
        st.tuples(st.just(["zoo", "list"]), st.lists(st.one_of(unicode_names, st.just("res*")), max_size=1),
                  options("family", "source", "task", "limit", "flag")),
        st.tuples(st.just(["zoo", "families"]), st.just([]), options("source", "flag")),
        st.tuples(st.just(["cache", "info"]), st.just([]), options("flag")),
        st.tuples(st.just(["index", "info"]), st.just([]), options("flag")),
    ).map(lambda parts: [*parts[0], *parts[1], *parts[2]])


def cache_rows() -> set[str]:
    """The key of each row of the cache, after checking the database's integrity."""
    path = default_db_path()
    if not path.exists():
        return set()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        rows = set()
        for (table,) in conn.execute("select name from sqlite_master where type = 'table' order by name"):
            for row in conn.execute(f"select * from {table}"):
                rows.add(f"{table}:{row[0]}")
        return rows
    finally:
        conn.close()


def check_outcome(cli, argv: list[str]) -> None:
    before = cache_rows()
    result = cli(*argv)
    shown = " ".join(repr(a[:80]) for a in argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), (shown, repr(result.exception))
    assert result.exit_code in (0, 1, 2), (shown, result.exit_code, result.output[-500:])
    assert "Traceback" not in result.output, shown
    assert "internal error" not in result.output, (shown, result.output[-500:])
    assert "\x1b" not in result.output, (shown, result.output[-500:])  # no terminal escape gets through
    # code in a model folder runs only when its file is named (consent); never through a walk
    named = any("project/hub/" in a and a.endswith(".py") for a in argv)
    assert named or not os.path.exists("EVIL-RAN"), shown
    if os.path.exists("EVIL-RAN"):
        os.remove("EVIL-RAN")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    directory = argv[0] == "scan" and os.path.isdir(argv[1]) and not os.path.exists(os.path.join(argv[1], "config.json"))
    per_file = argv[0] == "check" or directory  # these report each file's failure in their output
    if result.exit_code != 0 and not per_file:
        assert len(errors) == 1 or "Usage:" in result.output or "Error" in result.output, (shown, result.stderr)
    assert before <= cache_rows(), shown


def fuzz(cli, workspace, examples: int) -> None:
    cwd = os.getcwd()
    os.chdir(workspace)
    ran: list[int] = []
    try:
        @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(command_lines(workspace))
        def run_one(argv):
            check_outcome(cli, argv)
            ran.append(1)

        run_one()
    finally:
        os.chdir(cwd)
    print(f"{len(ran)} generated command lines")
    assert len(ran) >= examples  # every example ran (hypothesis adds a few while shrinking or replaying)


def test_fuzz_command_lines(cli, workspace):
    fuzz(cli, workspace, 150)  # the slow job runs 1,500


@pytest.mark.slow
def test_fuzz_command_lines_thousands(cli, workspace):
    fuzz(cli, workspace, int(os.environ.get("FUZZ_EXAMPLES", "1500")))
