"""A canonical graph written out for people and other tools: Graphviz DOT, and the files `nar export`
and the browser's export write (`NAME.graph.json` and `NAME.dot`)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from narcli.errors import printable
from narcli.fsutil import check_destination, write_text


def _dot_string(text: str) -> str:
    """`text` as a DOT quoted string: UTF-8 as it is (Graphviz reads it), control characters shown as
    escapes (a NUL in an ONNX op type would end Graphviz's string), backslashes and quotes escaped,
    line breaks as DOT's `\\n`."""
    shown = printable(text, newlines=True)
    escaped = shown.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def graph_dot(graph: Any, name: str) -> str:
    """Graphviz DOT of a canonical graph: one box per node (op, kernel, output shape, loop steps)."""
    lines = [f"digraph {_dot_string(name)} {{", "  rankdir=TB;", "  node [shape=box, fontname=Helvetica];"]
    for i, node in enumerate(graph.nodes):
        label = node.op
        if node.attrs.get("kernel"):
            label += f" {'x'.join(str(k) for k in node.attrs['kernel'])}"
        if node.shape:
            label += "\n" + "×".join(str(d) for d in node.shape)
        if node.attrs.get("repeats"):  # one step of a loop (`loop_idioms.py`)
            label += f"\nloop step ×{node.attrs['repeats']}"
        lines.append(f"  n{i} [label={_dot_string(label)}];")
    lines += [f"  n{s} -> n{d};" for s, d in graph.edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


STEM_LIMIT = 80
MODEL_FILE_SUFFIX = re.compile(r"\.(py|onnx|pt2)(?=$|:)")  # `unet.py` exports as `unet`, `m.py:Net` as `m_Net`


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def safe_stem(name: str) -> str:
    """A file name stem for `name`: letters, digits, `-_.`, at most STEM_LIMIT characters; a longer
    name is cut and ends with its digest, so two names sharing their first 80 characters stay two."""
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in MODEL_FILE_SUFFIX.sub("", name))
    keep = keep.strip("._") or "model"
    return keep if len(keep) <= STEM_LIMIT else f"{keep[:STEM_LIMIT - 9]}-{_digest(name)}"


def export_paths(names: list[str], folder: Path) -> list[tuple[Path, Path]]:
    """(`NAME.graph.json`, `NAME.dot`) for each name, every stem distinct: one that two names share
    (`a/b` and `a_b`) gets the later name's digest."""
    taken: set[str] = set()
    paths = []
    for name in names:
        stem, attempt = safe_stem(name), 0
        while stem in taken:
            attempt += 1
            stem = f"{safe_stem(name)[:STEM_LIMIT - 9]}-{_digest(f'{name}#{attempt}')}"
        taken.add(stem)
        paths.append((folder / f"{stem}.graph.json", folder / f"{stem}.dot"))
    return paths


def write_graphs(graphs: list[tuple[Any, str]], folder: Path) -> list[Path]:
    """Write each (graph, name) as JSON and DOT into `folder`; returns the paths. Every destination
    is checked before any is written (no symlink, no directory: `fsutil.check_destination`), so a
    refusal leaves no half export; each file is then replaced atomically."""
    planned = export_paths([name for _, name in graphs], folder)
    for path in (p for pair in planned for p in pair):
        check_destination(path)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for (graph, name), (as_json, as_dot) in zip(graphs, planned):
        written += [write_text(as_json, graph.to_json() + "\n"), write_text(as_dot, graph_dot(graph, name))]
    return written


def write_graph(graph: Any, name: str, folder: Path) -> list[Path]:
    """Write `graph` as JSON and DOT into `folder`, named after `name`; returns the paths."""
    return write_graphs([(graph, name)], folder)
