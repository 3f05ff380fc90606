"""Content hash of a model file together with the local Python modules it imports.

A `.py` model often imports its blocks from a sibling file; editing that file must invalidate the
cached scan too, so sibling modules found by the file's import statements enter the hash.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path


def _local_imports(path: Path, source: bytes) -> list[Path]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            names += [a.name for a in node.names]
    found = []
    for name in names:
        base = path.parent.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                found.append(candidate)
    return found


def file_fingerprint(path: Path, max_files: int = 200) -> str:
    """sha256 over the file's bytes and, for Python files, those of the local modules it imports."""
    digest = hashlib.sha256()
    seen: set[Path] = set()
    pending = [path]
    while pending and len(seen) < max_files:
        current = pending.pop()
        resolved = current.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        data = current.read_bytes()
        digest.update(str(len(data)).encode() + b"\0" + data)
        if current.suffix == ".py":
            pending += sorted(_local_imports(current, data))
    return digest.hexdigest()
