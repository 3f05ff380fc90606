"""Rich tables for `nar predict` and `nar eval predictor`."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from narcli.cli.common import safe


def target_label(row) -> str:
    target = row.target
    if target.kind == "accuracy":
        if target.label:
            return target.label
        return "ImageNet top-1" if target.column == "top1" else target.column.replace("-test", " accuracy")
    return target.kind


def print_predictions(console: Any, results: list) -> None:
    from narcli.cli.render_search import assumed_input_line
    from narcli.search.predictions import format_interval, format_value

    for result in results:
        table = Table(title=f"predictions for {safe(result.name)}", title_justify="left", box=None, pad_edge=False,
                      header_style="bold")
        for column in ("target", "device", "value", "90 % interval", "head"):
            table.add_column(column, justify="right" if column in ("value", "90 % interval") else "left",
                             no_wrap=column != "head")
        skipped: dict[str, int] = {}
        used: dict[str, str] = {}
        for row in result.rows:
            if row.status != "ok":
                reason = f"{row.head} ({row.status}): {row.reason}"
                skipped[reason] = skipped.get(reason, 0) + 1
                continue
            target = row.target
            device = target.device + (f" ×{target.batch}" if target.batch and target.batch > 1 else "")
            value = format_value(row) + (" measured" if row.head == "measured" else "")
            table.add_row(target_label(row), device or "—", value, format_interval(row), row.head)
            if row.head == "device":  # one line per calibrated device: they share the head's name
                used[target.column] = row.trained_on
            else:
                used[row.head] = f"{row.title}: {row.trained_on}"
        if table.row_count:
            console.print(table)
        else:
            console.print(f"[bold]{safe(result.name)}[/]: no prediction applies")
        if line := assumed_input_line(result.inputs, result.assumed):  # what the figures are for
            console.print(line)
        for head, about in used.items():
            console.print(f"[dim]{safe(head)} = {safe(about)}[/]")
        for reason, count in skipped.items():
            console.print(f"[yellow]not predicted[/] ({count} target{'s' * (count > 1)}) — {safe(reason)}")
        for note in result.notes:
            console.print(f"[yellow]note:[/] {safe(note)}")


def print_evaluation(console: Any, results: list[dict[str, Any]]) -> None:
    for result in results:
        mode = {"train-size": f"trained on {result.get('train_rows', 0):,} rows, tested on the other {result['test_rows']:,}",
                "nar-former": f"NAR-Former's protocol: first {result.get('train_rows', 0):,} rows, -val labels, "
                              f"tau on all {result['test_rows']:,} against -test"}.get(
            result["mode"], f"bundled predictor on {result['test_rows']:,} rows")
        table = Table(title=f"{result['data']}: {mode}", title_justify="left")
        if result["mode"] == "nar-former":  # ranks only: -val labels are scored against -test
            _nar_former_rows(table, result)
            console.print(table)
            console.print("[dim]ceiling: tau of the -val column itself against -test, what a predictor that "
                          "knew every -val accuracy would score[/]")
            continue
        for column in ("column", "rows", "tau", "baseline tau", "MAE / MAPE", "baseline", "±10 %", "baseline ±10 %"):
            table.add_column(column, justify="right" if column != "column" else "left")
        for column, m in result["columns"].items():
            b = result["baseline"].get(column, {})
            if result["kinds"][column] == "accuracy":
                error, base, w, bw = f"{m['mae']:.2f}", _fmt(b.get("mae"), "{:.2f}"), "", ""
            else:
                error, base = f"{m['mape']:.2f} %", _fmt(b.get("mape"), "{:.2f} %")
                w, bw = f"{m['within10']:.1f} %", _fmt(b.get("within10"), "{:.1f} %")
            table.add_row(result.get("labels", {}).get(column, column), f"{m['rows']:,}", f"{m['tau']:.3f}",
                          _fmt(b.get("tau"), "{:.3f}"), error, base, w, bw)
        console.print(table)
        if result.get("coverage") is not None:
            console.print(f"interval coverage {result['coverage']:.1f} % (nominal {result['coverage_level']:.0%}); "
                          f"{result['out_of_range']} rows out of range")
        if not result["baseline"]:
            console.print("[yellow]baselines need scikit-learn: pip install 'nar[eval]'[/]")


def _nar_former_rows(table: Any, result: dict[str, Any]) -> None:
    for column in ("column", "rows", "tau", "baseline tau", "tau, rows not trained on", "ceiling"):
        table.add_column(column, justify="right" if column != "column" else "left")
    for column, m in result["columns"].items():
        table.add_row(column, f"{m['rows']:,}", f"{m['tau']:.3f}",
                      _fmt(result["baseline"].get(column, {}).get("tau"), "{:.3f}"),
                      _fmt(result["unseen"].get(column, {}).get("tau"), "{:.3f}"),
                      _fmt(result["ceiling"].get(column), "{:.3f}"))


def _fmt(value: Any, pattern: str) -> str:
    return pattern.format(value) if value is not None else "—"


def print_latency_evaluation(console: Any, result: dict[str, Any]) -> None:
    """`nar eval latency`: overall, then by coarse class and by source, head beside both baselines."""
    from rich.table import Table

    split = result["split"]
    console.print(f"{result['rows']:,} measured architectures; scored on {split['test']:,} models of "
                  f"{split['test_families']} families never trained on ({split['test_share']:.0%}); interval set on "
                  f"{split['calibration']:,} models of {split['calibration_families']} other families")
    for title, groups in (("overall", {"all": result["overall"]}), ("by coarse class", result["by"]["coarse"]),
                          ("by source", result["by"]["source"])):
        table = Table(title=title, title_justify="left")
        for column in ("", "rows", "MAPE", "±10%", "in 90% int.", "MACs fit", "±10%", "tree", "±10%"):
            table.add_column(column, justify="left" if not column else "right")
        for name, row in groups.items():
            head, macs, tree = row["head"], row["macs_only"], row["boosted_tree"]
            table.add_row(name, str(head["rows"]), f"{head['mape']:.1f} %", f"{head['within10']:.0f} %",
                          f"{head.get('coverage90', 0):.0f} %", f"{macs['mape']:.1f} %", f"{macs['within10']:.0f} %",
                          f"{tree['mape']:.1f} %", f"{tree['within10']:.0f} %")
        console.print(table)
