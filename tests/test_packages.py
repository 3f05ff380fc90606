"""Model files inside packages scan the way their project imports them, from any working directory."""

from pathlib import Path

import pytest

from narcli.errors import LoadError, UsageError
from narcli.scan.cache import Cache
from narcli.scan.fingerprint import file_fingerprint
from narcli.scan.scanner import ScanOptions, scan_file
from narcli.scan.targets import CachedName, ModelFile, ZooName, resolve_target
from narcli.trace.packages import install_hint, package_layout, resolve_module_target

BLOCK = """
from torch import nn

class Block(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.GELU()

    def forward(self, x):
        return x + self.act(self.fc(x))
"""

CONFIG = """
class CfgNode:
    def __init__(self, **kw):
        self.__dict__.update(kw)
"""


def model_source(import_line: str, block: str = "Block") -> str:
    return f"""
from torch import nn
{import_line}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential({block}(8), {block}(8))
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.blocks(x))
"""


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from a working directory that is not the project's."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    return other


def scan(path: Path, model: str | None = "Net", tmp_path: Path | None = None):
    cache = Cache(tmp_path / "cache.db") if tmp_path else None
    records, graphs = scan_file(path, ScanOptions(model=model, input_shapes=["1,8"]), cache=cache, want_graphs=True)
    return records, graphs


LAYOUTS = {
    "absolute self-import (minGPT style)": (
        {"pyproject.toml": "", "mingpt/__init__.py": "", "mingpt/utils.py": CONFIG + BLOCK,
         "mingpt/model.py": model_source("from mingpt.utils import Block, CfgNode")}, "mingpt/model.py", "mingpt.model"),
    "relative import": (
        {"pkg/__init__.py": "", "pkg/blocks.py": BLOCK, "pkg/model.py": model_source("from .blocks import Block")},
        "pkg/model.py", "pkg.model"),
    "nested packages, two levels up": (
        {"a/__init__.py": "", "a/common.py": BLOCK, "a/b/__init__.py": "", "a/b/c/__init__.py": "",
         "a/b/c/model.py": model_source("from ...common import Block")}, "a/b/c/model.py", "a.b.c.model"),
    "namespace package (no __init__.py)": (
        {"ns/blocks.py": BLOCK, "ns/model.py": model_source("from .blocks import Block")}, "ns/model.py", "ns.model"),
    "package __init__ that re-exports": (
        {"setup.cfg": "", "lib/__init__.py": "from .layers import Block\n", "lib/layers.py": BLOCK,
         "lib/net.py": model_source("from lib import Block")}, "lib/net.py", "lib.net"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_model_files_inside_packages_scan_from_another_directory(layout, tmp_path, elsewhere):
    files, target, dotted = LAYOUTS[layout]
    root = write_tree(tmp_path / "project", files)
    assert package_layout(root / target).module == dotted
    records, graphs = scan(root / target, tmp_path=tmp_path)
    assert records[0].name == "Net"
    ops = [n.op for n in graphs[0].nodes]
    assert ops.count("linear") == 3 and ops.count("gelu") == 2


def test_the_same_files_scan_from_the_project_root(tmp_path, monkeypatch):
    root = write_tree(tmp_path / "project", LAYOUTS["relative import"][0])
    monkeypatch.chdir(root)
    records, _ = scan(Path("pkg/model.py"), tmp_path=tmp_path)
    assert records[0].name == "Net"


def test_a_lone_script_keeps_its_by_path_import(tmp_path):
    root = write_tree(tmp_path, {"blocks.py": BLOCK, "solo.py": model_source("from blocks import Block")})
    assert package_layout(root / "solo.py").module is None
    records, _ = scan(root / "solo.py", tmp_path=tmp_path)
    assert records[0].name == "Net"


def test_module_targets_name_a_file_and_a_model(tmp_path, monkeypatch):
    root = write_tree(tmp_path / "project", LAYOUTS["relative import"][0])
    monkeypatch.chdir(root)
    target = resolve_target("pkg.model:Net")
    assert isinstance(target, ModelFile)
    assert target.path == (root / "pkg" / "model.py").resolve() and target.options.model == "Net"
    assert resolve_module_target("pkg.model:Net(width=4)")[1] == "Net(width=4)"
    (root / "cache.py").write_text("")
    assert isinstance(resolve_target("cache:Net"), CachedName)  # cache:NAME and zoo names are not module targets
    assert isinstance(resolve_target("resnet50"), ZooName)
    with pytest.raises(UsageError, match="no module 'pkg.missing'"):
        resolve_target("pkg.missing:Net")
    with pytest.raises(UsageError, match="names the model already"):
        resolve_target("pkg.model:Net", ScanOptions(model="Other"))


def test_nar_scan_takes_a_module_target(tmp_path, monkeypatch, cli):
    root = write_tree(tmp_path / "project", LAYOUTS["absolute self-import (minGPT style)"][0])
    monkeypatch.chdir(root)
    result = cli("scan", "mingpt.model:Net", "-i", "1,8", "--json")
    assert result.exit_code == 0, result.output
    assert '"name": "Net"' in result.output
    result = cli("scan", "mingpt.nothing:Net")
    assert result.exit_code == 2 and "no module 'mingpt.nothing'" in result.output


def test_a_missing_third_party_module_names_what_to_install(tmp_path):
    root = write_tree(tmp_path / "project", {"pkg/__init__.py": "", "pkg/model.py": "import cv2\n" + model_source("")})
    with pytest.raises(LoadError) as err:
        scan(root / "pkg" / "model.py", tmp_path=tmp_path)
    message = str(err.value)
    assert "needs the module 'cv2'" in message and "pip install opencv-python" in message
    assert "\n" not in message
    assert install_hint("some_pkg.sub") == "pip install some-pkg"


def test_a_missing_module_of_the_project_itself_is_not_sent_to_pip(tmp_path):
    root = write_tree(tmp_path / "project", {"pkg/__init__.py": "", "pkg/model.py": "from pkg.gone import X\n"})
    with pytest.raises(LoadError) as err:
        scan(root / "pkg" / "model.py", model=None, tmp_path=tmp_path)
    assert "pip install" not in str(err.value)


def test_editing_a_module_the_package_imports_changes_the_fingerprint(tmp_path):
    for layout in ("absolute self-import (minGPT style)", "relative import", "nested packages, two levels up"):
        files, target, _ = LAYOUTS[layout]
        root = write_tree(tmp_path / layout.split()[0], files)
        before = file_fingerprint(root / target)
        imported = next(n for n in files if n.endswith(("utils.py", "blocks.py", "common.py")))
        (root / imported).write_text(files[imported] + "\n# edited\n")
        assert file_fingerprint(root / target) != before, layout
