"""`nar predict`, `nar train predictor` and `nar eval predictor`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from narcli.cli.common import MAX_SEED, check_range, fail, run, safe, scan_options, stderr_console, stdout
from narcli.cli.learn_commands import _device, eval_app, train_app


def predict_command(
    target: str = typer.Argument(..., help="A zoo name (resnet50), a .py/.onnx/.pt2 file, or cache:NAME."),
    device: str | None = typer.Option(None, "--device", "-d",
                                      help="Only this device's timings (`nar predict x --device ?` lists them)."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype of a .py model: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    weights: Path | None = typer.Option(None, "--weights", help="Predictor folder (default: the bundled one)."),
    as_json: bool = typer.Option(False, "--json", help="Print the predictions as JSON."),
) -> None:
    """How accurate and how fast a model is likely to be: every prediction that applies, with its interval."""
    from narcli.search.predictions import predictions_for

    options = scan_options(model, input_shape, timeout, False, input_dtype)
    results = run(predictions_for, target, options, device, weights)
    if as_json:
        print(json.dumps({"target": target, "results": [p.to_json() for p in results]}, indent=2))
        return
    from narcli.cli.render_predict import print_predictions

    print_predictions(stdout(), results)


def _net_config(epochs: int | None, seed: int, device: str, default_epochs: int, kind: str = "graph"):
    check_range("--seed", seed, 0, MAX_SEED)
    from narcli.predict.training import KINDS, NetConfig, config_for

    if epochs is not None and not 1 <= epochs <= 10_000:
        fail(f"--epochs must be between 1 and 10,000, not {epochs}", 2)
    if kind not in KINDS:
        fail(f"--kind is one of {', '.join(KINDS)}, not {kind!r}", 2)
    return config_for(kind, epochs=epochs or default_epochs, seed=seed, device=_device(device))


def _progress_reporter(console):
    return lambda name, e: console.print(
        f"[dim]{name}: epoch {e['epoch']}/{e['epochs']} loss {e['loss']:.4f} ({e['seconds']:.0f} s)[/]")


@train_app.command("predictor")
def train_predictor_command(
    nb201: Path | None = typer.Option(None, "--nb201", help="Folder with NAS-Bench-201 accuracy.csv and latency_ms.csv."),
    timm: Path | None = typer.Option(None, "--timm", help="Folder with timm results-imagenet.csv and benchmark-*.csv."),
    out: Path | None = typer.Option(None, "--out", help="Folder to write predictor.safetensors + predictor.json "
                                                          "(default: the bundled predictor)."),
    epochs: int | None = typer.Option(None, "--epochs", help="Epochs per head (default: 20 for NAS-Bench-201, 60 for timm)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the calibration split and of training."),
    kind: str = typer.Option("graph", "--kind", help="graph (message passing over every node, the bundled kind) or "
                                                     "former (NAR-Former-style transformer over folded tokens)."),
    device: str = typer.Option("", "--device", help="cpu or cuda (default: cuda when available)."),
    graphs_db: Path | None = typer.Option(None, "--graphs-db", help="Zoo database of the NAS-Bench-201 cells "
                                                                    "(default: built under $NAR_HOME/predictor)."),
    jobs: int = typer.Option(2, "--jobs", "-j", help="Processes for building NAS-Bench-201 graphs."),
) -> None:
    """Train the accuracy/latency predictor (one head per data folder); resumes an interrupted run."""
    from narcli.predict.build import train_from_folders

    console = stderr_console()
    config = _net_config(epochs, seed, device, 0, kind)
    check_range("--jobs", jobs, 1, 256)
    card = run(train_from_folders, nb201, timm, out, config, epochs, graphs_db, jobs,
               report=lambda line: console.print(f"[dim]{safe(line)}[/]"), on_epoch=_progress_reporter(console))
    print(f"wrote {card} and its weights")


@eval_app.command("predictor")
def eval_predictor_command(
    nb201: Path | None = typer.Option(None, "--nb201", help="Folder with NAS-Bench-201 accuracy.csv (+ latency_ms.csv)."),
    timm: Path | None = typer.Option(None, "--timm", help="Folder with timm results-imagenet.csv and benchmark-*.csv."),
    train_size: str | None = typer.Option(None, "--train-size", help="Train a fresh network on N rows or a share "
                                                                     "(781, 5%) and test on the rest (default: "
                                                                     "evaluate the bundled one)."),
    protocol: str = typer.Option("held-out", "--protocol", help="held-out: test on rows never trained on; "
                                                                 "nar-former: NAR-Former's (first N rows, -val "
                                                                 "labels, tau on all rows against -test)."),
    kind: str = typer.Option("graph", "--kind", help="Network with --train-size: graph (message passing over "
                                                     "every node) or former (transformer over folded tokens)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split and of training."),
    epochs: int | None = typer.Option(None, "--epochs", help="Epochs with --train-size (default 60)."),
    device: str = typer.Option("", "--device", help="cpu or cuda, with --train-size (default: cuda when available)."),
    weights: Path | None = typer.Option(None, "--weights", help="Predictor folder (default: the bundled one)."),
    graphs_db: Path | None = typer.Option(None, "--graphs-db", help="Zoo database of the NAS-Bench-201 cells."),
    jobs: int = typer.Option(2, "--jobs", "-j", help="Processes for building NAS-Bench-201 graphs."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Kendall tau, MAE, MAPE and within-10 % of the predictor per column, beside boosted-tree baselines."""
    from narcli.predict.evaluation import evaluate_folders

    console = stderr_console()
    config = _net_config(epochs, seed, device, 60, kind) if train_size is not None else None
    check_range("--jobs", jobs, 1, 256)
    results = run(evaluate_folders, nb201, timm, weights, train_size, seed, config, graphs_db, jobs,
                  report=lambda line: console.print(f"[dim]{safe(line)}[/]"), on_epoch=_progress_reporter(console),
                  protocol=protocol)
    if as_json:
        print(json.dumps(results, indent=2))
        return
    from narcli.cli.render_predict import print_evaluation

    print_evaluation(stdout(), results)


@train_app.command("latency")
def train_latency_command(
    reference: Path | None = typer.Option(None, "--reference", help="Reference dataset folder (reference-latency.csv "
                                                                    "+ .json; default: the bundled one)."),
    out: Path | None = typer.Option(None, "--out", help="Folder to write latency.safetensors + latency.json "
                                                      "(default: beside the bundled predictor)."),
    epochs: int = typer.Option(200, "--epochs", help="Training epochs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the family split and of training."),
    device: str = typer.Option("", "--device", help="cpu or cuda (default: cuda when available)."),
) -> None:
    """Train the reference-CPU latency head on the reference dataset (held-out families set its interval)."""
    from narcli.predict.latency_training import Config, train

    check_range("--epochs", epochs, 1, 100_000)
    console = stderr_console()
    card = run(train, reference, out, Config(epochs=epochs, seed=seed, device=_device(device)), seed,
               report=lambda line: console.print(f"[dim]{safe(line)}[/]"))
    print(f"wrote {card} and its weights")


@eval_app.command("latency")
def eval_latency_command(
    reference: Path | None = typer.Option(None, "--reference", help="Reference dataset folder (default: the bundled one)."),
    epochs: int = typer.Option(200, "--epochs", help="Training epochs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the family split and of training."),
    device: str = typer.Option("", "--device", help="cpu or cuda (default: cuda when available)."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """The latency head on families held out from training: MAPE, within 10 %, interval coverage, by coarse
    class and by source, beside a MACs-only fit and a boosted-tree baseline."""
    from narcli.predict.latency_training import Config, evaluate

    check_range("--epochs", epochs, 1, 100_000)
    console = stderr_console()
    result = run(evaluate, reference, Config(epochs=epochs, seed=seed, device=_device(device)), seed,
                 report=lambda line: console.print(f"[dim]{safe(line)}[/]"))
    if as_json:
        print(json.dumps(result, indent=2))
        return
    from narcli.cli.render_predict import print_latency_evaluation

    print_latency_evaluation(stdout(), result)

