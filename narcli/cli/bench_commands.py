"""`nar bench`, `nar calibrate` and `nar eval calibration`."""

from __future__ import annotations

import json

import typer

from narcli.bench.quiet import ATTEMPTS
from narcli.cli.common import run, stderr_console
from narcli.cli.options import AllowBusyOption, BudgetOption, FreshOption, InputDtypeOption, InputShapeOption, JsonOption, ModelOption, RepeatOption, RetryFailedOption, SourcesOption, ThreadsOption, TimeoutOption, reporter, scan_options
from narcli.cli.learn_commands import eval_app


def bench_command(
    target: str | None = typer.Argument(None, help="The model: a zoo name (resnet50), cache:NAME, a .py or an "
                                                   ".onnx file, file.py:Class, or pkg.module:Class.", show_default=False),
    batch: int = typer.Option(1, "--batch", "-b", help="Batch size."),
    device: str = typer.Option("cpu", "--device", "-d", help="cpu or cuda."),
    threads: ThreadsOption = None,
    repeat: RepeatOption = 20,
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    timeout: TimeoutOption = 600.0,
    as_json: JsonOption = False,
    zoo: bool = typer.Option(False, "--zoo", help="Measure the zoo's reference latency set (batch 1, one thread; resumable)."),
    budget: BudgetOption = None,
    max_gmacs: float = typer.Option(30.0, "--max-gmacs", help="With --zoo: leave out models above this many GMACs."),
    source: SourcesOption = None,
    limit: int | None = typer.Option(None, "--limit", help="With --zoo: measure at most this many new models."),
    retry_failed: RetryFailedOption = False,
    export: str | None = typer.Option(None, "--export", help="With --zoo: write the measurements as a reference dataset into this folder."),
    allow_busy: AllowBusyOption = False,
    attempts: int = typer.Option(ATTEMPTS, "--attempts", help="Measurements at most: one the machine disturbed is taken "
                                                      "again once other processes are quiet (1: measure once; "
                                                      "--allow-busy keeps the first; --zoo retries by its own rule)."),
) -> None:
    """Measure a model's latency on this machine (random weights; warm-up, R timed runs, median and IQR);
    with --zoo, the reference latency set of the whole zoo."""
    from narcli.bench.runner import bench_target

    if zoo:
        _bench_zoo(budget, max_gmacs, source, limit, timeout, retry_failed, export, as_json, device, allow_busy)
        return
    if target is None:
        from narcli.cli.common import fail

        fail("give a zoo name, cache:NAME, a .py or an .onnx file to measure (or --zoo for the reference set)", 2)
    options = run(scan_options, model, input_shape, timeout, False, input_dtype)
    console = stderr_console()
    with console.status(f"measuring {target} ({repeat} runs after a warm-up)…"):
        result = run(bench_target, target, batch, device, threads, repeat, options, timeout, allow_busy=allow_busy,
                     attempts=attempts, report=reporter(console))
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    from narcli.cli.render_bench import print_bench

    print_bench(result, stderr_console())


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
                  retry_failed=retry_failed, report=reporter(console),
                  device=device, allow_busy=allow_busy)
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    from narcli.cli.render_bench import print_reference_summary

    print_reference_summary(summary)


def calibrate_command(
    name: str = typer.Option("local", "--device", "-d", help="Name to store this machine's latency head under."),
    models: int = typer.Option(20, "--models", "-k", help="How many zoo models to measure."),
    budget: BudgetOption = None,
    threads: ThreadsOption = None,
    repeat: RepeatOption = 20,
    as_json: JsonOption = False,
    allow_busy: AllowBusyOption = False,
    fresh: FreshOption = False,
) -> None:
    """Fit this machine's latency head from a few zoo measurements (resumable: stored ones are reused
    unless --fresh). At more than one thread the same models are timed at one thread too."""
    from narcli.bench.calibrate import calibrate

    console = stderr_console()
    head = run(calibrate, name, models, budget, threads, repeat, report=reporter(console),
               allow_busy=allow_busy, fresh=fresh)
    if as_json:
        print(json.dumps(head, indent=2))
        return
    from narcli.cli.render_bench import print_calibrated

    print_calibrated(name, head)


@eval_app.command("calibration")
def eval_calibration_command(
    ks: str = typer.Option("5,10,20,40", "--ks", help="Calibration sizes to evaluate, comma-separated."),
    held_out: int = typer.Option(50, "--held-out", help="Held-out zoo models to score on."),
    threads: ThreadsOption = None,
    repeat: RepeatOption = 20,
    as_json: JsonOption = False,
    allow_busy: AllowBusyOption = False,
    fresh: FreshOption = False,
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
                 report=reporter(console), allow_busy=allow_busy, fresh=fresh)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    from narcli.cli.render_bench import print_calibration_evaluation

    print_calibration_evaluation(result)
