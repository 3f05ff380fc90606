"""Where a model file sits among Python packages, so it imports the way its project imports it.

A real `model.py` lives inside a package: `from mingpt.utils import CfgNode` (absolute
self-import) or `from .blocks import Block` (relative import). Importing the file by path alone
breaks both. Here, without importing anything:

- the **import root**: walk up from the file while the folder has `__init__.py`; the file's
  dotted name is its path below that root (`mingpt/model.py` -> `mingpt.model`);
- **namespace packages** (no `__init__.py`): when the file uses relative imports deeper than its
  regular packages allow, the missing levels are taken as namespace packages;
- the **project root**: the nearest ancestor with `pyproject.toml`, `setup.py`, `setup.cfg` or
  `.git`, which goes on `sys.path` with the working directory (absolute imports from the top);
- `pkg.module:Class` targets resolved to the file they name, looked up on disk from the working
  directory and the project root (no code runs in the parent process);
- one-line install hints for third-party modules that are missing.

Standard library only: the scan parent (fingerprints, target parsing) uses it without torch.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MODULE_TARGET = re.compile(r"^(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):(?P<spec>.+)$", re.S)

# import name -> the distribution to install, where the two differ
PIP_NAMES = {
    "cv2": "opencv-python", "PIL": "pillow", "sklearn": "scikit-learn", "yaml": "pyyaml",
    "skimage": "scikit-image", "bs4": "beautifulsoup4", "google.protobuf": "protobuf",
    "attr": "attrs", "Crypto": "pycryptodome", "dateutil": "python-dateutil", "mmcv": "mmcv",
    "torch_geometric": "torch-geometric", "hydra": "hydra-core", "omegaconf": "omegaconf",
    "einops": "einops", "timm": "timm", "transformers": "transformers", "fairscale": "fairscale",
    "tiktoken": "tiktoken", "sentencepiece": "sentencepiece", "apex": "apex", "flash_attn": "flash-attn",
}


@dataclass(frozen=True)
class PackageLayout:
    """How to import one model file: `sys.path` entries (in order) and its module name (dotted when
    it is part of a package, None for a lone script imported by path)."""

    file: Path
    module: str | None
    import_root: Path
    project_root: Path | None

    def search_path(self, cwd: Path | None = None) -> list[Path]:
        roots = [self.import_root, self.file.parent]
        if self.project_root is not None:
            roots.append(self.project_root)
        roots.append(Path(cwd or Path.cwd()).resolve())
        return list(dict.fromkeys(roots))


def project_root(path: Path) -> Path | None:
    """The nearest folder holding a project marker: `path` itself when it is a folder, else (and
    then) its ancestors."""
    path = Path(path).resolve()
    for folder in ([path] if path.is_dir() else []) + list(path.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return None


def relative_import_depth(source: str | bytes | ast.AST) -> int:
    """The deepest relative import in a file's source or parsed tree (`from ..x import y` -> 2; none -> 0)."""
    if isinstance(source, ast.AST):
        tree = source
    else:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return 0
    return max((node.level for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)), default=0)


def package_layout(path: Path, relative_depth: int | None = None) -> PackageLayout:
    """The import root and dotted module name of `path` (see the module docstring); `relative_depth`:
    its deepest relative import, when the caller has parsed the file already."""
    file = Path(path).resolve()
    parts = [file.stem] if file.name != "__init__.py" else []
    folder = file.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    if relative_depth is not None:
        needed = relative_depth
    else:
        try:
            needed = relative_import_depth(file.read_bytes())
        except OSError:
            needed = 0
    packages = len(parts) - (0 if file.name == "__init__.py" else 1)
    top = project_root(file)
    while packages < needed and folder.parent != folder and folder != top and folder.name.isidentifier():
        parts.insert(0, folder.name)  # a namespace package: a folder without __init__.py
        folder = folder.parent
        packages += 1
    dotted = ".".join(parts) if packages > 0 and all(p.isidentifier() for p in parts) else None
    return PackageLayout(file, dotted, folder, top)


def resolve_module_target(target: str, cwd: Path | None = None) -> tuple[Path, str] | None:
    """`pkg.module:Class(args)` -> (the file of `pkg.module`, `Class(args)`), looked up on disk from
    the working directory (and its `src/`, and its project root). None when `target` is not of that
    form, is an existing path, or names a one-part module that is not there (`cache:NAME` and zoo
    names stay what they are); a dotted module that is not there raises FileNotFoundError."""
    match = MODULE_TARGET.match(target.strip())
    if match is None or Path(target).exists():
        return None
    module, spec = match["module"], match["spec"].strip()
    base = Path(cwd or Path.cwd()).resolve()
    top = project_root(base)
    roots = list(dict.fromkeys([base, base / "src", *([top, top / "src"] if top else [])]))
    relative = Path(*module.split("."))
    for root in roots:
        for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
            if candidate.is_file():
                return candidate, spec
    if "." not in module:
        return None
    raise FileNotFoundError(f"no module {module!r} under {', '.join(str(r) for r in roots if r.is_dir())}")


def install_hint(missing: str) -> str:
    """`pip install NAME` for a missing module `missing` (dotted names use their top package)."""
    top = missing.split(".")[0]
    return f"pip install {PIP_NAMES.get(missing, PIP_NAMES.get(top, top.replace('_', '-')))}"


def is_local_module(missing: str, layout: PackageLayout, cwd: Path | None = None) -> bool:
    """Whether the missing module would be one of the project's own (a folder or file on its path)."""
    top = missing.split(".")[0]
    return any((root / top).is_dir() or (root / f"{top}.py").is_file() for root in layout.search_path(cwd))
