"""Predictions for every zoo model, computed at `nar zoo embed` time and stored in the zoo database
(table `predictions`, one JSON row list per model, keyed by model id and the predictor's
fingerprint), so `nar predict <zoo name>` reads them instead of running anything."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.fsutil import connect_sqlite
from narcli.predict.bundle import Bundle, Row, load_bundle, predict_graph

SCHEMA = "create table if not exists predictions (id text primary key, predictor text not null, data text not null)"


def _compact(rows: list[Row]) -> list:
    """Per head: [head, status, reason, [[column, value, low, high], ...]] when its rows share a
    status and reason (the usual case: a head applies or not as a whole; a head that does not apply
    stores no values, meaning all its targets), else one entry per row."""
    out: list = []
    for head in dict.fromkeys(r.head for r in rows):
        mine = [r for r in rows if r.head == head]
        values = [[r.target.column, _round(r.value), _round(r.low), _round(r.high)] for r in mine]
        if len({(r.status, r.reason) for r in mine}) == 1 and mine[0].status != "ok" and len(mine) == len(
                {r.target.column for r in mine}):
            out.append([head, mine[0].status, mine[0].reason, []])  # no numbers: every target of the head
        elif len({(r.status, r.reason) for r in mine}) == 1:
            out.append([head, mine[0].status, mine[0].reason, values])
        else:
            out += [[head, r.status, r.reason, [v]] for r, v in zip(mine, values)]
    return out


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.5g}")


def _expand(data: list, bundle: Bundle) -> list[Row] | None:
    from narcli.predict.bundle import reference_target

    rows = []
    latencies = {h.name: h for h in bundle.latency_heads}
    for head_name, status, reason, values in data:
        if head_name in latencies:
            latency = latencies[head_name]
            title, trained_on, head_targets = latency.title, latency.trained_on, [reference_target(latency)]
        else:
            head = next((h for h in bundle.heads if h.name == head_name), None)
            if head is None:
                return None
            title, trained_on, head_targets = head.title, head.trained_on, head.targets
        targets = {t.column: t for t in head_targets}
        for column, value, low, high in values or [[t.column, None, None, None] for t in head_targets]:
            if column not in targets:
                return None
            rows.append(Row(head_name, title, targets[column], value, low, high, status, _reworded(reason), trained_on))
    return rows


# reasons stored by earlier versions (until the next `nar zoo embed`), said as the heads say them now:
# a range "(352–30 G)" read as backwards, "takes 1 channels", parameter counts in G instead of B
_REFERENCE_RANGE = re.compile(r"its (macs|params|nodes) \(([^)]*)\) is beyond what the reference set measured "
                              r"\(([^–]*)–([^)]*)\)$")
_HEAD_RANGE = re.compile(r"its (.+?) \(([^)]*)\) is outside what this head was trained on \(([^–]*)–([^)]*)\)$")
_CHANNELS = re.compile(r"this model takes (\d+) channels$")
_SUFFIXES = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "B": 1e9}


def _amount(text: str) -> float:
    """'30 G' -> 3e10, '352' -> 352, '48×48 px' -> 48 (enough to tell which bound was crossed)."""
    found = re.match(r"([0-9.]+(?:e[+-]?[0-9]+)?)(?:×[0-9.]+)?\s*([kMGB]?)", text.strip())
    return float(found.group(1)) * _SUFFIXES[found.group(2)] if found else 0.0


def _reworded(reason: str) -> str:
    from narcli.predict.latency import range_reason

    if found := _REFERENCE_RANGE.match(reason):
        figure, value, low, high = found.groups()
        above = _amount(value) > _amount(high)
        return range_reason(figure, _amount(value), _amount(high if above else low), above)
    if found := _HEAD_RANGE.match(reason):
        what, value, low, high = found.groups()
        above = _amount(value) > _amount(high)
        if what == "parameter count":
            value, low, high = (re.sub(r" G$", " B", v) for v in (value, low, high))
        side = "above the largest" if above else "below the smallest"
        return f"its {what} ({value}) is {side} this head was trained on ({high if above else low})"
    if found := _CHANNELS.search(reason):
        count = int(found.group(1))
        return reason[:found.start()] + f"this model's input has {count} channel{'s' * (count != 1)}"
    return reason


def predict_zoo(db: Path, weights: Path | None = None, force: bool = False,
                report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Store the predictions of every model in `db` that lacks current ones. When only the reference
    latency head changed (the fingerprint's first half, the message-passing heads', is the same),
    the stored rows of the other heads are kept and only the reference row is computed: a
    millisecond a model instead of half a second."""
    from narcli.predict.bundle import reference_row
    from narcli.predict.latency import GPU_HEAD_NAME, HEAD_NAME
    from narcli.zoo.store import Zoo

    bundle = load_bundle(weights)
    connection = connect_sqlite(db, timeout=60)
    try:
        connection.execute(SCHEMA)
        connection.commit()
        stored = dict(connection.execute("select id, predictor from predictions").fetchall())
        current = {i for i, p in stored.items() if p == bundle.fingerprint}
        heads = bundle.fingerprint[:8]
        reusable = {} if force or not bundle.latency_heads else {
            i: json.loads(d) for i, p, d in connection.execute("select id, predictor, data from predictions")
            if p != bundle.fingerprint and p[:8] == heads}
    finally:
        connection.close()
    computed: list[tuple[str, str, str]] = []
    with Zoo([db]) as zoo:  # read everything first: an open read keeps SQLite from committing writes
        models = [m for m in zoo.models() if m.status == "ok" and m.graph_hash and (force or m.id not in current)]
        report(f"predicting {len(models)} zoo models ({sum(m.id in reusable for m in models)} need only the "
               "reference latency head)")
        for model in models:
            graph = zoo.graph(model)  # its own trace: a shared graph may have been traced at another input
            if model.id in reusable:
                kept = [entry for entry in reusable[model.id] if entry[0] not in (HEAD_NAME, GPU_HEAD_NAME)]
                data = kept + _compact([reference_row(h, graph, model.macs, model.params) for h in bundle.latency_heads])
            else:
                data = _compact(predict_graph(graph, bundle, macs=model.macs, params=model.params))
            computed.append((model.id, bundle.fingerprint, json.dumps(data, separators=(",", ":"))))
    connection = connect_sqlite(db, timeout=60)
    try:
        with connection:
            connection.executemany("insert or replace into predictions values (?, ?, ?)", computed)
            connection.execute("delete from predictions where predictor != ?", (bundle.fingerprint,))
        connection.execute("vacuum")  # a bundled zoo ships as small as it can
    finally:
        connection.close()
    written = len(computed)
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
    return _expand(json.loads(found[1]), bundle)


def embed_and_predict(db: Path, weights: Path | None = None, force: bool = False,
                      report: Callable[[str], None] = lambda line: None, engine: str = "local",
                      address: str | None = None, jobs: int | None = None) -> dict[str, Any]:
    """`nar zoo embed`: the encoder's embeddings (here, or on Ray encoder actors), then the
    predictor's predictions, of what changed."""
    from narcli.encode.zoo_embed import embed_zoo

    summary = embed_zoo(db, weights, force, report=report, engine=engine, address=address, actors=jobs)
    summary.update(predict_zoo(db, force=force, report=report))
    return summary
