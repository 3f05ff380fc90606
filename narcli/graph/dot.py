"""A canonical graph written out for people and other tools: Graphviz DOT, and the files `nar export`
and the browser's export write (`NAME.graph.json` and `NAME.dot`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _dot_string(text: str) -> str:
    """`text` as a DOT quoted string: UTF-8 as it is (Graphviz reads it), backslashes and quotes
    escaped, line breaks as DOT's `\\n`."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def graph_dot(graph: Any, name: str) -> str:
    """Graphviz DOT of a canonical graph: one box per node (op, kernel, output shape)."""
    lines = [f"digraph {_dot_string(name)} {{", "  rankdir=TB;", "  node [shape=box, fontname=Helvetica];"]
    for i, node in enumerate(graph.nodes):
        label = node.op
        if node.attrs.get("kernel"):
            label += f" {'x'.join(str(k) for k in node.attrs['kernel'])}"
        if node.shape:
            label += "\n" + "×".join(str(d) for d in node.shape)
        lines.append(f"  n{i} [label={_dot_string(label)}];")
    lines += [f"  n{s} -> n{d};" for s, d in graph.edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def safe_stem(name: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return keep.strip("._")[:80] or "model"


def write_graph(graph: Any, name: str, folder: Path) -> list[Path]:
    """Write `graph` as JSON and DOT into `folder`, named after `name`; returns the paths."""
    stem = safe_stem(name)
    folder.mkdir(parents=True, exist_ok=True)
    as_json, as_dot = folder / f"{stem}.graph.json", folder / f"{stem}.dot"
    as_json.write_text(graph.to_json() + "\n")
    as_dot.write_text(graph_dot(graph, name))
    return [as_json, as_dot]
