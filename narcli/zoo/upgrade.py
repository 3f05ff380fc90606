"""`nar zoo upgrade`: bring a zoo's stored graphs to the current canonical form without tracing again.

A zoo built before a canonicalisation rule existed (an idiom of `graph/idioms.py`, say) holds graphs
that a fresh trace of the same model no longer produces: their hashes differ, and nodes come in
another order. Upgrading applies the rules and the canonical order to each stored graph, moves the
models to the new hashes (updating their headline figures) and drops the embeddings of the old ones,
so `nar zoo embed` then embeds exactly what a fresh trace would give.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.errors import ZooError

TOP_OPS = 8


def current_form(graph: Any) -> Any:
    """The graph as `build_graph` makes it today: idioms in canonical form, canonical node order."""
    from narcli.graph.idioms import normalise_idioms

    return normalise_idioms(graph)  # in canonical order when a rule changed it


def upgrade_zoo(db: Path, report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Rewrite the graphs of `db` in the current canonical form; counts of what changed."""
    from narcli.graph.arch_graph import ArchGraph
    from narcli.zoo.writer import writing
    from narcli.zoo.store import open_readonly

    if not Path(db).exists():
        raise ZooError(f"zoo database {db} is missing; build it with `nar zoo build --db {db}`")
    open_readonly(Path(db)).close()
    counts = {"graphs": 0, "rewritten": 0, "reordered": 0, "merged": 0, "models": 0, "predictions_dropped": 0}
    with writing(Path(db)) as writer:
        conn = writer.conn
        rows = conn.execute("select hash, data from graphs").fetchall()
        counts["graphs"] = len(rows)
        moved: set[str] = set()
        report(f"checking {len(rows)} graphs")
        with conn:
            for old_hash, blob in rows:
                text = zlib.decompress(blob).decode()
                graph = ArchGraph.from_json(text)
                new = current_form(graph)
                new_text = new.to_json()
                if new_text == text:
                    continue
                new_hash = new.content_hash()
                if new_hash == old_hash:  # the same architecture, nodes in the canonical order
                    conn.execute("update graphs set data = ? where hash = ?", (zlib.compress(new_text.encode(), 9),
                                                                                old_hash))
                    conn.execute("delete from embeddings where hash = ?", (old_hash,))
                    conn.execute("delete from annotations where hash = ?", (old_hash,))
                    counts["reordered"] += 1
                    continue
                exists = conn.execute("select 1 from graphs where hash = ?", (new_hash,)).fetchone()
                if exists:
                    counts["merged"] += 1
                else:
                    conn.execute("insert into graphs values (?, ?)", (new_hash, zlib.compress(new_text.encode(), 9)))
                ids = _move_models(conn, old_hash, graph, new)
                counts["models"] += len(ids)
                moved.update(ids)
                for table in ("graphs", "embeddings", "annotations"):
                    conn.execute(f"delete from {table} where hash = ?", (old_hash,))
                counts["rewritten"] += 1
            for model_id, blob in conn.execute("select id, data from model_graphs").fetchall():
                text = zlib.decompress(blob).decode()
                new_text = current_form(ArchGraph.from_json(text)).to_json()
                if new_text != text:  # a model's own trace follows its architecture's graph
                    conn.execute("update model_graphs set data = ? where id = ?",
                                 (zlib.compress(new_text.encode(), 9), model_id))
                    moved.add(model_id)
            # their stored predictions were made on the old graph: `nar zoo embed` predicts them again
            if moved and conn.execute("select 1 from sqlite_master where type = 'table' and name = 'predictions'").fetchone():
                counts["predictions_dropped"] = sum(conn.execute("delete from predictions where id = ?", (m,)).rowcount
                                                    for m in sorted(moved))
    return counts


def _shapes(inputs: Any) -> list:
    return [list(spec.get("shape") or []) for spec in inputs or [] if isinstance(spec, dict)]


def _move_models(conn: Any, old_hash: str, old: Any, new: Any) -> list[str]:
    """Point the models of `old_hash` at the rewritten graph. One graph serves every model of its
    architecture, but it was traced at one model's input: a model traced at another input (a 384-px
    variant) keeps its own MACs, scaled by what the rewrite changed, never the other model's."""
    before, after = old.summary(), new.summary()
    new_hash = new.content_hash()
    top_ops = json.dumps([[op, n] for op, n in new.top_ops(TOP_OPS)])
    traced_at = _shapes(old.meta.get("inputs"))
    rows = conn.execute("select id, macs, params, inputs from models where graph_hash = ?", (old_hash,)).fetchall()
    for model_id, macs, params, inputs in rows:
        try:
            own = _shapes(json.loads(inputs)) if inputs else []
        except (ValueError, TypeError):
            own = []
        if not own or own == traced_at or macs is None or params is None or not before["macs"]:
            macs, params = after["macs"], after["params"]
        else:  # its own figures (a relative-position table's size follows the input too), moved as the graph's
            macs = round(macs * after["macs"] / before["macs"])
            params += after["params"] - before["params"]
        conn.execute("update models set graph_hash = ?, params = ?, macs = ?, nodes = ?, edges = ?, depth = ?, "
                     "top_ops = ? where id = ?", (new_hash, params, macs, after["nodes"],
                                                  after["edges"], after["depth"], top_ops, model_id))
    return [model_id for model_id, *_ in rows]


def relabel_zoo(db: Path) -> Counter:
    """Apply the current family table and refinements to every model of `db` without tracing again."""
    from narcli.graph.arch_graph import ArchGraph
    from narcli.zoo.writer import writing
    from narcli.zoo.labels import label

    if not db.exists():
        raise ZooError(f"zoo database {db} is missing; build it with `nar zoo build --db {db}`")
    changed: Counter = Counter()
    with writing(db) as writer:
        rows = writer.conn.execute("select id, source, source_family, graph_hash, family, coarse from models").fetchall()
        graph, counts, loaded = None, Counter(), None  # one graph in memory at a time: rows grouped by graph
        with writer.conn:
            for model_id, source, key, graph_hash, old_family, old_coarse in sorted(rows, key=lambda r: r[3] or ""):
                if graph_hash != loaded:
                    data = writer.conn.execute("select data from graphs where hash = ?", (graph_hash,)).fetchone()
                    graph = ArchGraph.from_json(zlib.decompress(data[0]).decode()) if data else None
                    counts, loaded = graph.op_histogram() if graph else Counter(), graph_hash
                family, coarse, reviewed = label(source, key, counts, graph)
                if (family, coarse) != (old_family, old_coarse):
                    changed["changed"] += 1
                changed["table" if reviewed else "structure"] += 1
                writer.conn.execute("update models set family = ?, coarse = ?, labelled_by = ? where id = ?",
                                    (family, coarse, "table" if reviewed else "structure", model_id))
    return changed

