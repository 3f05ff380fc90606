"""README's console examples are what `nar` prints today: each ```console block that is one `$ nar …`
command followed by its output is run (fresh NAR_HOME, 100 columns) and compared line by line.

Regenerate the outputs after a deliberate change: `python -m tests.test_readme_examples --write`.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COLUMNS = 100
TIMING = re.compile(r"\(\d+(?:\.\d+)? s\)")  # "(1.59 s)": how long a trace took, never the same twice


@dataclass
class Example:
    first: int  # index of the `$ nar …` line in README's lines
    last: int  # index one past the output's last line
    command: str
    output: list[str]


def examples(text: str) -> list[Example]:
    """The console blocks that show one command and what it printed."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```console":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            body = lines[i + 1:end]
            commands = [line for line in body if line.startswith("$ ")]
            if len(commands) == 1 and body[0].startswith("$ nar ") and len(body) > 1:
                found.append(Example(i + 1, end, body[0][2:], body[1:]))
            i = end
        i += 1
    return found


def _prepare(folder: Path) -> None:
    """What the examples name: the repository's fixtures, and a fine-tuned ResNet-50 checkpoint (the
    zoo's own tensor shapes with a 10-class head; the weights are a hole, no disk)."""
    from narcli.trace.checkpoint import write_safetensors_header
    from narcli.zoo.signatures import load_signatures
    from narcli.zoo.store import Zoo

    (folder / "tests").symlink_to(ROOT / "tests")
    with Zoo() as zoo:
        shapes = dict(load_signatures(zoo, ["timm/resnet50"])["timm/resnet50"])
    shapes.update({"fc.weight": (10, 2048), "fc.bias": (10,)})
    write_safetensors_header(folder / "finetuned.safetensors", shapes)


def normalized(lines: list[str]) -> list[str]:
    out = [TIMING.sub("(… s)", line.rstrip()) for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def run_example(command: str, folder: Path) -> list[str]:
    argv = shlex.split(command)
    assert argv[0] == "nar"
    env = {**os.environ, "NAR_HOME": str(folder / "home"), "COLUMNS": str(COLUMNS), "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run([sys.executable, "-m", "narcli", *argv[1:]], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return [line.rstrip() for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("readme")
    _prepare(path)
    return path


def test_the_readme_has_examples_to_check():
    commands = [e.command.split()[1] for e in examples(README.read_text())]
    assert {"similar", "predict", "scan"} <= set(commands), commands


@pytest.mark.parametrize("example", examples(README.read_text()), ids=lambda e: e.command)
def test_a_readme_example_prints_what_it_shows(example, folder):
    shown, printed = normalized(example.output), normalized(run_example(example.command, folder))
    diff = "\n".join(difflib.unified_diff(shown, printed, "README.md", "nar", lineterm=""))
    assert shown == printed, f"README's `{example.command}` is stale; regenerate with " \
                             f"`python -m tests.test_readme_examples --write`:\n{diff}"


def write() -> None:
    """Replace every example's output in README.md with what `nar` prints now."""
    text = README.read_text()
    lines = text.splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _prepare(folder)
        for example in reversed(examples(text)):  # from the end, so earlier indices stay right
            lines[example.first + 1:example.last] = run_example(example.command, folder)
            print(f"regenerated: {example.command}")
    README.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_readme_examples --write")
    write()
