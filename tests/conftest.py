import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from narcli.cli.app import app

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def nar_home(tmp_path, monkeypatch):
    """Every test gets its own empty cache."""
    home = tmp_path / "nar-home"
    monkeypatch.setenv("NAR_HOME", str(home))
    return home


def write_file(path: Path, text: str | bytes) -> Path:
    """Write bytes as they are, or an indented snippet dedented, creating folders; returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def write(tmp_path):
    """Write a file under tmp_path from an indented snippet; returns its path."""

    def _write(name: str, text: str | bytes) -> Path:
        return write_file(tmp_path / name, text)

    return _write


@pytest.fixture
def cli():
    runner = CliRunner()

    def _run(*args: str):
        return runner.invoke(app, [str(a) for a in args])

    return _run


def mlp_source(inputs: int, hidden: int, outputs: int) -> str:
    """A model file defining `Net`, a two-layer tanh MLP: far from every zoo architecture."""
    return f"""
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear({inputs}, {hidden}), nn.Tanh(), nn.Linear({hidden}, {outputs}))

    def forward(self, x):
        return self.body(x)
"""


def run_nar(*args: str, env=None, check: bool = False) -> subprocess.CompletedProcess:
    """`nar` in a fresh interpreter, for what must be seen from outside (imports, exit codes)."""
    return subprocess.run([sys.executable, "-m", "narcli", *map(str, args)], capture_output=True,
                          text=True, env=env, check=check)
