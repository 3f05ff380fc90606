"""Content hash of a model file together with the local Python modules it imports.

A `.py` model often imports its blocks from a sibling file; editing that file must invalidate the
cached scan too, so sibling modules found by the file's import statements enter the hash.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from narcli.trace.packages import package_layout, relative_import_depth


def _local_imports(path: Path, source: bytes) -> list[Path]:
    """Files of the project's own modules that `path` imports: relative imports from its package,
    absolute ones looked up from its folder, its import root and its project root."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    layout = package_layout(path, relative_import_depth(tree))
    roots = list(dict.fromkeys([path.parent.resolve(), layout.import_root,
                                *([layout.project_root] if layout.project_root else [])]))
    wanted: list[tuple[Path, str]] = []  # (folder to look in, dotted name below it)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            wanted += [(root, a.name) for a in node.names for root in roots]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = path.resolve().parent
            for _ in range(node.level - 1):
                base = base.parent
            prefix = f"{node.module}." if node.module else ""
            wanted += [(base, node.module)] if node.module else []
            wanted += [(base, f"{prefix}{a.name}") for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for root in roots:
                wanted.append((root, node.module))
                wanted += [(root, f"{node.module}.{a.name}") for a in node.names]
    found = []
    for folder, name in wanted:
        base = folder.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                found.append(candidate)
        # importing pkg.mod runs pkg/__init__.py as well
        for parent in list(base.parents)[: name.count(".")]:
            if (parent / "__init__.py").is_file():
                found.append(parent / "__init__.py")
    return found


MAX_SOURCE_BYTES = 32 << 20  # a larger .py is hashed, not parsed for its imports (the scan refuses it)


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
        if current.suffix == ".py" and current.stat().st_size <= MAX_SOURCE_BYTES:
            data = current.read_bytes()
            digest.update(str(len(data)).encode() + b"\0" + data)
            pending += sorted(_local_imports(current, data))
        elif current.suffix.lower() == ".pt2":
            # the graph is the archive's program; its weights (gigabytes, never read) change nothing
            from narcli.trace.pt2_archive import program_bytes

            data = program_bytes(current)
            digest.update(b"pt2\0" + str(len(data)).encode() + b"\0" + data)
        else:
            digest.update(str(current.stat().st_size).encode() + b"\0")
            with open(current, "rb") as handle:  # a megabyte at a time, whatever the file's size
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()
