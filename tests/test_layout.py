"""The package's shape: one subpackage per pipeline stage, imports pointing down the pipeline only.

Every `import` is read from the AST (those inside functions too: a lazy import is still a
dependency), so a later stage imported by an earlier one fails here, as does any import cycle.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "narcli"

# Pipeline order, first to last; a module may import its own stage and earlier ones.
STAGES = ("graph", "trace", "scan", "nas", "zoo", "encode", "predict", "bench", "search", "tui", "cli")
# Top-level modules: shared by every stage (rank -1), or a public re-export / entry point that sits
# at the stage whose modules it re-exports or runs.
TOP_LEVEL = {"narcli": -1, "narcli.errors": -1, "narcli.fsutil": -1, "narcli.hookspecs": -1,
             "narcli.sources": STAGES.index("zoo"), "narcli.__main__": STAGES.index("cli")}
MAX_TOP_LEVEL_MODULES = 8
MIN_SUBPACKAGES = 6
MAX_LINES = 450


def module_name(package: Path, path: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path) -> dict[str, Path]:
    return {module_name(package, p): p for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts}


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The `narcli` modules that the module `name` imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "narcli")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "narcli":
                continue
            # `from narcli.x import y` may import the submodule narcli.x.y
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            found.update(subs or [target])
    return {m for m in found if m != name}


def rank(name: str) -> int:
    if name in TOP_LEVEL:
        return TOP_LEVEL[name]
    stage = name.split(".")[1]
    assert stage in STAGES, f"{name} belongs to no stage; add its subpackage to STAGES in pipeline order"
    return STAGES.index(stage)


def import_graph(package: Path) -> dict[str, set[str]]:
    found = modules(package)
    return {name: imported_modules(name, path, set(found)) for name, path in found.items()}


def layer_violations(package: Path) -> list[str]:
    """'a -> b' for every import of a later stage by an earlier one."""
    graph = import_graph(package)
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if rank(b) > rank(a))


def import_cycles(package: Path) -> list[list[str]]:
    """Import cycles between modules (Tarjan's strongly connected components of size > 1)."""
    graph = import_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return cycles


def test_every_module_imports_only_its_own_and_earlier_stages():
    assert layer_violations(PACKAGE) == []


def test_no_import_cycles():
    assert import_cycles(PACKAGE) == []


def test_a_reversed_import_is_caught(tmp_path):
    copy = tmp_path / "narcli"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("data", "__pycache__"))
    assert layer_violations(copy) == []
    graph_module = copy / "graph" / "arch_graph.py"
    graph_module.write_text(graph_module.read_text() + "\n\ndef _late():\n"
                            "    from narcli.search.similar import find_similar\n")
    assert layer_violations(copy) == ["narcli.graph.arch_graph -> narcli.search.similar"]


def test_a_cycle_is_caught(tmp_path):
    copy = tmp_path / "narcli"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("data", "__pycache__"))
    motifs = copy / "encode" / "motifs.py"
    motifs.write_text(motifs.read_text() + "\n\ndef _back():\n    from narcli.encode import features\n")
    assert ["narcli.encode.features", "narcli.encode.motifs"] in import_cycles(copy)


def test_package_shape():
    top_level = [p for p in PACKAGE.glob("*.py")]
    subpackages = [p.parent for p in PACKAGE.glob("*/__init__.py")]
    assert len(top_level) <= MAX_TOP_LEVEL_MODULES, sorted(p.name for p in top_level)
    assert len(subpackages) >= MIN_SUBPACKAGES
    assert {p.name for p in subpackages} == set(STAGES)
    for package in subpackages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc and "import" in doc, f"{package.name}/__init__.py must say what it owns and may import"


def test_no_module_is_too_long():
    long = {name: n for name, path in modules(PACKAGE).items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_code_map_names_every_module():
    """ARCHITECTURE.md's code map names each module of a stage in that stage's section, so a
    newcomer finds every file there."""
    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text()
    code_map = text[text.index("## Code map"):text.index("## Scaling out")]
    sections = {part.split("`", 1)[0].strip("/"): part for part in code_map.split("### `narcli/")[1:]}
    missing = []
    for stage in STAGES:
        section = sections.get(stage, "")
        for path in sorted((PACKAGE / stage).glob("*.py")):
            if path.name != "__init__.py" and f"{path.name}" not in section:
                missing.append(f"{stage}/{path.name}")
    assert missing == [], "name these in their stage's section of ARCHITECTURE.md"
