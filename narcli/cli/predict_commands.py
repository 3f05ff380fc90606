"""`nar predict`, `nar train predictor` and `nar eval predictor`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from narcli.cli.common import check_range, run, stderr_console, stdout
from narcli.cli.options import EpochsOption, GraphsDbOption, InputDtypeOption, InputShapeOption, JobsOption, JsonOption, ModelOption, Nb201Option, OptionalEpochsOption, PredictorKindOption, PredictorWeightsOption, ReferenceOption, SeedOption, TargetArgument, TimeoutOption, TimmOption, TrainDeviceOption, reporter, scan_options
from narcli.cli.learn_commands import _device, eval_app, train_app


def predict_command(
    target: TargetArgument,
    device: str | None = typer.Option(None, "--device", "-d",
                                      help="Only this device's timings (an unknown name lists the known ones)."),
    model: ModelOption = None,
    input_shape: InputShapeOption = None,
    input_dtype: InputDtypeOption = None,
    timeout: TimeoutOption = 120.0,
    weights: PredictorWeightsOption = None,
    as_json: JsonOption = False,
) -> None:
    """How accurate and how fast a model is likely to be: every prediction that applies, with its interval."""
    from narcli.search.predictions import predictions_for

    options = run(scan_options, model, input_shape, timeout, False, input_dtype)
    results = run(predictions_for, target, options, device, weights)
    if as_json:
        print(json.dumps({"target": target, "results": [p.to_json() for p in results]}, indent=2))
        return
    from narcli.cli.render_predict import print_predictions

    print_predictions(stdout(), results)


def _net_config(epochs: int | None, seed: int, device: str, default_epochs: int, kind: str = "graph"):
    """The predictor network's recipe (`NetConfig` checks epochs, seed and kind)."""
    from narcli.predict.training import config_for

    chosen = epochs or default_epochs  # 0: each head's own recipe (`nar train predictor`)
    return run(config_for, kind, **({"epochs": chosen} if chosen else {}), seed=seed, device=_device(device))


def _progress_reporter(console):
    return lambda name, e: console.print(
        f"[dim]{name}: epoch {e['epoch']}/{e['epochs']} loss {e['loss']:.4f} ({e['seconds']:.0f} s)[/]")


@train_app.command("predictor")
def train_predictor_command(
    nb201: Nb201Option = None,
    timm: TimmOption = None,
    out: Path | None = typer.Option(None, "--out", help="Folder to write predictor.safetensors + predictor.json "
                                                          "(default: the bundled predictor)."),
    epochs: OptionalEpochsOption = None,
    seed: SeedOption = 0,
    kind: PredictorKindOption = "graph",
    device: TrainDeviceOption = "",
    graphs_db: GraphsDbOption = None,
    jobs: JobsOption = 2,
) -> None:
    """Train the accuracy/latency predictor (one head per data folder); resumes an interrupted run."""
    from narcli.predict.build import train_from_folders

    console = stderr_console()
    config = _net_config(epochs, seed, device, 0, kind)
    check_range("--jobs", jobs, 1, 256)
    card = run(train_from_folders, nb201, timm, out, config, epochs, graphs_db, jobs,
               report=reporter(console), on_epoch=_progress_reporter(console))
    print(f"wrote {card} and its weights")


@eval_app.command("predictor")
def eval_predictor_command(
    nb201: Nb201Option = None,
    timm: TimmOption = None,
    train_size: str | None = typer.Option(None, "--train-size", help="Train a fresh network on N rows or a share "
                                                                     "(781, 5%) and test on the rest (default: "
                                                                     "evaluate the bundled one)."),
    protocol: str = typer.Option("held-out", "--protocol", help="held-out: test on rows never trained on; "
                                                                 "nar-former: NAR-Former's (first N rows, -val "
                                                                 "labels, tau on all rows against -test)."),
    kind: PredictorKindOption = "graph",
    seed: SeedOption = 0,
    epochs: OptionalEpochsOption = None,
    device: TrainDeviceOption = "",
    weights: PredictorWeightsOption = None,
    graphs_db: GraphsDbOption = None,
    jobs: JobsOption = 2,
    as_json: JsonOption = False,
) -> None:
    """Kendall tau, MAE, MAPE and within-10 % of the predictor per column, beside boosted-tree baselines."""
    from narcli.predict.evaluation import evaluate_folders

    console = stderr_console()
    config = _net_config(epochs, seed, device, 60, kind) if train_size is not None else None
    check_range("--jobs", jobs, 1, 256)
    results = run(evaluate_folders, nb201, timm, weights, train_size, seed, config, graphs_db, jobs,
                  report=reporter(console), on_epoch=_progress_reporter(console),
                  protocol=protocol)
    if as_json:
        print(json.dumps(results, indent=2))
        return
    from narcli.cli.render_predict import print_evaluation

    print_evaluation(stdout(), results)


@train_app.command("latency")
def train_latency_command(
    reference: ReferenceOption = None,
    out: Path | None = typer.Option(None, "--out", help="Folder to write latency.safetensors + latency.json "
                                                      "(default: beside the bundled predictor)."),
    epochs: EpochsOption = 200,
    seed: SeedOption = 0,
    device: TrainDeviceOption = "",
    resplit: bool = typer.Option(False, "--resplit", help="Draw the held-out families afresh from --seed "
                                                         "instead of keeping those the head in --out left out."),
) -> None:
    """Train the reference latency head on every family of the reference dataset; a second fit without the
    calibration families sets its interval and is kept beside it (held-out/) for `nar eval calibration`.
    The families held out stay those of the head it replaces (so calibration runs stay about designs
    the head never saw), unless --resplit."""
    from narcli.predict.latency_training import Config, train

    console = stderr_console()
    card = run(train, reference, out, run(Config, epochs=epochs, seed=seed, device=_device(device)), seed,
               report=reporter(console), resplit=resplit)
    print(f"wrote {card} and its weights")


@eval_app.command("latency")
def eval_latency_command(
    reference: ReferenceOption = None,
    epochs: EpochsOption = 200,
    seed: SeedOption = 0,
    device: TrainDeviceOption = "",
    as_json: JsonOption = False,
) -> None:
    """The latency head on families held out from training: MAPE, within 10 %, interval coverage, by coarse
    class and by source, beside a MACs-only fit and a boosted-tree baseline."""
    from narcli.predict.latency_training import Config, evaluate

    console = stderr_console()
    result = run(evaluate, reference, run(Config, epochs=epochs, seed=seed, device=_device(device)), seed,
                 report=reporter(console))
    if as_json:
        print(json.dumps(result, indent=2))
        return
    from narcli.cli.render_predict import print_latency_evaluation

    print_latency_evaluation(stdout(), result)

