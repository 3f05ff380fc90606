"""`nar bench`, `nar calibrate` and `nar eval calibration`."""

from __future__ import annotations

import json
import os

import typer

from narcli.cli.common import run, safe, scan_options, stderr_console
from narcli.cli.learn_commands import eval_app
from narcli.errors import printable


def bench_command(
    target: str | None = typer.Argument(None, help="A zoo name (resnet50), a .py or an .onnx file."),
    batch: int = typer.Option(1, "--batch", "-b", help="Batch size."),
    device: str = typer.Option("cpu", "--device", "-d", help="cpu or cuda."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads (default: every core this process may use)."),
    repeat: int = typer.Option(20, "--repeat", "-r", help="Timed runs after the warm-up."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype", help="Input dtype of a .py model."),
    timeout: float = typer.Option(600.0, "--timeout", help="Seconds to allow building and measuring."),
    as_json: bool = typer.Option(False, "--json", help="Print the measurement as JSON."),
    zoo: bool = typer.Option(False, "--zoo", help="Measure the zoo's reference latency set (batch 1, one thread; resumable)."),
    budget: float | None = typer.Option(None, "--budget", help="With --zoo: stop after this many seconds."),
    max_gmacs: float = typer.Option(30.0, "--max-gmacs", help="With --zoo: leave out models above this many GMACs."),
    source: list[str] | None = typer.Option(None, "--source", "-s", help="With --zoo: only these zoo sources."),
    limit: int | None = typer.Option(None, "--limit", help="With --zoo: measure at most this many new models."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="With --zoo: try again what failed before."),
    export: str | None = typer.Option(None, "--export", help="With --zoo: write the measurements as a reference dataset into this folder."),
    allow_busy: bool = typer.Option(False, "--allow-busy", help="Store timings taken while other processes used the CPU (they are flagged and not stored otherwise)."),
) -> None:
    """Measure a model's latency on this machine (random weights; warm-up, R timed runs, median and IQR);
    with --zoo, the reference latency set of the whole zoo."""
    from narcli.bench.runner import bench_target, describe_device

    if zoo:
        _bench_zoo(budget, max_gmacs, source, limit, timeout, retry_failed, export, as_json, device, allow_busy)
        return
    if target is None:
        from narcli.cli.common import fail

        fail("give a zoo name, a .py or an .onnx file to measure (or --zoo for the reference set)", 2)
    options = scan_options(model, input_shape, timeout, False, input_dtype)
    console = stderr_console()
    with console.status(f"measuring {target} ({repeat} runs after a warm-up)…"):
        result = run(bench_target, target, batch, device, threads, repeat, options, timeout, allow_busy=allow_busy)
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    print(f"{printable(result.name)}: median {result.median_ms:.3g} ms (IQR {result.iqr_ms:.2g} ms) at batch {result.batch}, "
          f"{result.runs} runs after {result.warmup} warm-up runs")
    pinned = f", pinned to CPU {','.join(map(str, result.pinned))}" if 0 < len(result.pinned) < (os.cpu_count() or 1) else ""
    print(f"on {describe_device(result)}{pinned}; "
          + (f"stored under graph {result.graph_hash[:12]}" if result.stored else "not stored"))
    if result.quiet:
        verdict = bench_verdict(result.quiet, result.stored)
        (stderr_console().print(f"[yellow]warning:[/] {safe(verdict)}") if result.busy else print(verdict))


def bench_verdict(quiet: dict, stored: bool) -> str:
    """One line on the machine while timing: quiet, or busy and why (and what to do)."""
    from narcli.bench.quiet import Quietness

    line = Quietness(**quiet).describe()
    if quiet.get("busy"):
        line += (" — stored anyway (--allow-busy)" if stored else
                 " — this timing is not to be trusted and was not stored; close what runs beside it and "
                 "measure again (--allow-busy keeps it)")
    return line


def _bench_zoo(budget: float | None, max_gmacs: float, sources: list[str] | None, limit: int | None,
               timeout: float, retry_failed: bool, export: str | None, as_json: bool, device: str = "cpu",
               allow_busy: bool = False) -> None:
    from pathlib import Path

    from narcli.bench.reference import collect, export as export_reference

    console = stderr_console()
    if export is not None:
        card = run(export_reference, Path(export), device=device)
        print(json.dumps(card, indent=2) if as_json else
              f"wrote {card['rows']:,} reference measurements to {card['csv']} (machine {card['device']['key']})")
        return
    summary = run(collect, budget, max_gmacs=max_gmacs, sources=sources, limit=limit, timeout=timeout,
                  retry_failed=retry_failed, report=lambda line: console.print(f"[dim]{safe(line)}[/]"),
                  device=device, allow_busy=allow_busy)
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    busy = f", {summary['busy']:,} timings not stored (machine busy)" if summary.get("busy") else ""
    print(f"measured {summary['measured']:,}, failed {summary['failed']:,}, skipped for memory {summary['skipped']:,}{busy} "
          f"in {summary['seconds']:.0f} s; {summary['stored']:,} of {summary['candidates']:,} reference models stored")


def calibrate_command(
    name: str = typer.Option("local", "--device", "-d", help="Name to store this machine's latency head under."),
    models: int = typer.Option(20, "--models", "-k", help="How many zoo models to measure."),
    budget: float | None = typer.Option(None, "--budget", help="Stop measuring after this many seconds."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads (default: all)."),
    repeat: int = typer.Option(20, "--repeat", "-r", help="Timed runs per model."),
    as_json: bool = typer.Option(False, "--json", help="Print the fitted head as JSON."),
    allow_busy: bool = typer.Option(False, "--allow-busy", help="Use timings taken while other processes used the CPU."),
) -> None:
    """Fit this machine's latency head from a few zoo measurements (resumable: stored ones are reused)."""
    from narcli.bench.calibrate import calibrate

    console = stderr_console()
    head = run(calibrate, name, models, budget, threads, repeat, report=lambda line: console.print(f"[dim]{safe(line)}[/]"),
               allow_busy=allow_busy)
    if as_json:
        print(json.dumps(head, indent=2))
        return
    device = head["device"]
    print(f"calibrated {name!r} on {len(head['models'])} zoo models at {device['threads']} thread"
          f"{'s' * (device['threads'] != 1)}; wrote {head['path']}; 90 % interval ±{head['half_width_pct']:.0f} %; "
          f"use `nar predict MODEL --device {name}`")


@eval_app.command("calibration")
def eval_calibration_command(
    ks: str = typer.Option("5,10,20,40", "--ks", help="Calibration sizes to evaluate, comma-separated."),
    held_out: int = typer.Option(50, "--held-out", help="Held-out zoo models to score on."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads (default: all)."),
    repeat: int = typer.Option(20, "--repeat", "-r", help="Timed runs per model."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
    allow_busy: bool = typer.Option(False, "--allow-busy", help="Use timings taken while other processes used the CPU."),
) -> None:
    """MAPE, ±10 %, rank correlation and interval coverage of the calibrated latency head on held-out
    zoo models of every kind, beside the previous head, a MACs-only fit and the reference rescaled."""
    from narcli.bench.calibration_eval import evaluate_calibration
    from narcli.cli.common import fail

    try:
        sizes = tuple(int(k) for k in ks.split(",") if k.strip())
    except ValueError:
        fail(f"--ks must be comma-separated integers, not {ks!r}", 2)
    console = stderr_console()
    result = run(evaluate_calibration, sizes, held_out, threads, repeat,
                 report=lambda line: console.print(f"[dim]{safe(line)}[/]"), allow_busy=allow_busy)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(result["kinds"].items(), key=lambda kv: -kv[1]))
    print(f"held-out: {len(result['held_out'])} zoo models ({kinds}; {result['new_families']} of families the "
          f"reference head never fitted), {result['gmacs_range'][0]}–{result['gmacs_range'][1]} GMACs, "
          f"{result['device']['threads']} thread{'s' * (result['device']['threads'] != 1)}")
    print(f"{'K':>3}  {'calibrated MAPE / ±10 %':>24}  {'Spearman':>8}  {'coverage':>8}  {'±interval':>9}"
          f"  {'previous head':>14}  {'MACs-only':>10}  {'rescaled':>9}")
    for row in result["results"]:
        c, p, m, n = row["calibrated"], row["previous_head"], row["macs_linear"], row["reference_rescaled"]
        print(f"{row['k']:>3}  {c['mape']:>11.1f} % / {c['within10']:>5.1f} %  {c['spearman']:>8.3f}  "
              f"{c['coverage90']:>6.0f} %  {c['half_width_pct']:>7.0f} %  {p['mape']:>12.1f} %  {m['mape']:>8.1f} %"
              f"  {n['mape']:>7.1f} %")
