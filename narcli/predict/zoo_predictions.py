"""Predictions for every zoo model, computed at `nar zoo embed` time and stored in the zoo database
(table `predictions`, one JSON row list per model, keyed by model id and the predictor's
fingerprint), so `nar predict <zoo name>` reads them instead of running anything."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.predict.bundle import Bundle, Row, load_bundle, predict_graph

SCHEMA = "create table if not exists predictions (id text primary key, predictor text not null, data text not null)"


def _compact(row: Row) -> list:
    return [row.head, row.target.column, row.value, row.low, row.high, row.status, row.reason]


def _expand(data: list, bundle: Bundle) -> Row | None:
    head_name, column, value, low, high, status, reason = data
    head = next((h for h in bundle.heads if h.name == head_name), None)
    target = next((t for t in head.targets if t.column == column), None) if head else None
    if head is None or target is None:
        return None
    return Row(head.name, head.title, target, value, low, high, status, reason, head.trained_on)


def predict_zoo(db: Path, weights: Path | None = None, force: bool = False,
                report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Store the predictions of every model in `db` that lacks current ones."""
    from narcli.zoo.store import Zoo

    bundle = load_bundle(weights)
    connection = sqlite3.connect(db, timeout=60)
    try:
        connection.execute(SCHEMA)
        current = {r[0] for r in connection.execute("select id from predictions where predictor = ?",
                                                    (bundle.fingerprint,))}
        written = 0
        with Zoo([db]) as zoo:
            models = [m for m in zoo.models() if m.status == "ok" and m.graph_hash and (force or m.id not in current)]
            report(f"predicting {len(models)} zoo models")
            graphs: dict[str, Any] = {}
            for model in models:
                if model.graph_hash not in graphs:
                    graphs = {model.graph_hash: zoo.graph(model)}  # models come grouped by hash often enough
                rows = predict_graph(graphs[model.graph_hash], bundle, macs=model.macs, params=model.params)
                data = json.dumps([_compact(r) for r in rows], separators=(",", ":"))
                connection.execute("insert or replace into predictions values (?, ?, ?)",
                                   (model.id, bundle.fingerprint, data))
                written += 1
        connection.execute("delete from predictions where predictor != ?", (bundle.fingerprint,))
        connection.commit()
    finally:
        connection.close()
    return {"predicted": written, "predictions_current": len(current), "predictor": bundle.fingerprint}


def stored_predictions(db: Path, model_id: str, bundle: Bundle) -> list[Row] | None:
    """The stored rows of `model_id` when they come from this predictor, else None."""
    from narcli.zoo.store import open_readonly

    connection = open_readonly(db)
    try:
        found = connection.execute("select predictor, data from predictions where id = ?", (model_id,)).fetchone()
    except sqlite3.OperationalError:  # a zoo embedded before predictions existed
        return None
    finally:
        connection.close()
    if found is None or found[0] != bundle.fingerprint:
        return None
    rows = [_expand(d, bundle) for d in json.loads(found[1])]
    return None if any(r is None for r in rows) else rows


def embed_and_predict(db: Path, weights: Path | None = None, force: bool = False,
                      report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """`nar zoo embed`: the encoder's embeddings, then the predictor's predictions, of what changed."""
    from narcli.encode.zoo_embed import embed_zoo

    summary = embed_zoo(db, weights, force, report=report)
    summary.update(predict_zoo(db, force=force, report=report))
    return summary
