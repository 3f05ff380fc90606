"""Every option and argument that more than one command takes, defined once.

A command declares `model: ModelOption = None`: the alias carries the flag names and the help text,
the command its default. Defaults stay in the signature because they differ (bench allows more time
than scan). What a value must be is checked by the library it reaches (`ScanOptions`, the training
configs), so a Python caller gets the same one-line error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

TARGET_KINDS = ("a zoo name (resnet50), cache:NAME, a .py/.onnx/.pt2 file, file.py:Class, pkg.module:Class, a checkpoint "
                "(.safetensors, .pt, .bin) or a model folder (config.json)")

TargetArgument = Annotated[str, typer.Argument(help=f"The model: {TARGET_KINDS}.", show_default=False)]
ModelOption = Annotated[str | None, typer.Option(
    "--model", "-m", help="Model class or factory in a .py file, e.g. 'resnet(depth=18)'.")]
InputShapeOption = Annotated[list[str] | None, typer.Option(
    "--input-shape", "-i", help="Example input shape of a .py model, e.g. 1,3,224,224 (repeat for several inputs); "
                                "a file scanned before with one is reused without it.")]
InputDtypeOption = Annotated[list[str] | None, typer.Option(
    "--input-dtype", help="Input dtype of a .py model: float32 (default), long for token ids, ...")]
TimeoutOption = Annotated[float, typer.Option(
    "--timeout", help="Seconds to allow for one model (importing and tracing it; for bench, measuring it too).")]
NoCacheOption = Annotated[bool, typer.Option("--no-cache", help="Trace again, and store nothing.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the split and of training.")]
EpochsOption = Annotated[int, typer.Option("--epochs", help="Training epochs.")]
OptionalEpochsOption = Annotated[int | None, typer.Option(
    "--epochs", help="Training epochs (default: each head's recipe: 20 for NAS-Bench-201, 60 for timm and with "
                     "--train-size).")]
TrainDeviceOption = Annotated[str, typer.Option("--device", help="cpu or cuda (default: cuda when available).")]
JobsOption = Annotated[int | None, typer.Option(
    "--jobs", "-j", help="Worker processes (with --engine ray: Ray workers, by default one per CPU of the cluster; "
                         "for nar zoo embed, encoder actors, one per GPU).")]
ThreadsOption = Annotated[int | None, typer.Option(
    "--threads", help="CPU threads (default: every core this process may use).")]
RepeatOption = Annotated[int, typer.Option("--repeat", "-r", help="Timed runs per model, after a warm-up.")]
BudgetOption = Annotated[float | None, typer.Option("--budget", help="Stop measuring after this many seconds.")]
AllowBusyOption = Annotated[bool, typer.Option(
    "--allow-busy", help="Keep timings taken on a busy machine: other processes on the CPU, or a core slowed from outside (flagged, and not stored otherwise).")]
FreshOption = Annotated[bool, typer.Option(
    "--fresh", help="Time every model again instead of reusing stored timings (a machine's speed moves between "
                    "days); the new timings replace the stored ones.")]
GraphsDbOption = Annotated[Path | None, typer.Option("--graphs-db", help="Zoo database of the NAS-Bench-201 cells "
                                                                         "(default: built under $NAR_HOME/predictor).")]
PredictorWeightsOption = Annotated[Path | None, typer.Option(
    "--weights", help="Predictor folder (default: the bundled one).")]
Nb201Option = Annotated[Path | None, typer.Option(
    "--nb201", help="Folder with NAS-Bench-201 accuracy.csv (+ latency_ms.csv).")]
TimmOption = Annotated[Path | None, typer.Option(
    "--timm", help="Folder with timm results-imagenet.csv and benchmark-*.csv.")]
ReferenceOption = Annotated[Path | None, typer.Option(
    "--reference", help="Reference dataset folder (reference-latency.csv + .json; default: the bundled one).")]


def scan_options(model: str | None = None, input_shape: list[str] | None = None, timeout: float = 120.0,
                 no_cache: bool = False, input_dtype: list[str] | None = None) -> Any:
    """The shared scan options as the library's `ScanOptions` (which checks them)."""
    from narcli.scan.scanner import ScanOptions

    return ScanOptions(model=model, input_shapes=input_shape, input_dtypes=input_dtype, timeout=timeout,
                       use_cache=not no_cache)


def reporter(console: Any) -> Any:
    """The progress callback every long command hands its library call: one dim line per step."""
    from narcli.cli.common import safe

    return lambda line: console.print(f"[dim]{safe(line)}[/]")


# the encoder's training recipe (`nar train encoder`, `nar eval retrieval`)
AUGMENT_HELP = ("Edited variants of each training architecture (CIFAR stem, no stem pool, activation, head, "
                "resolution, width, fewer residual blocks) added to its family in training (default: 2, the "
                "shipped recipe).")
AugmentOption = Annotated[int | None, typer.Option("--augment", help=AUGMENT_HELP, show_default=False)]
HARD_FAMILIES_HELP = ("Share of each training batch's families drawn as a near family (by WL features) of another "
                      "in the batch, so sibling families meet as negatives (0 to 0.5; default: 0.5, the shipped recipe).")
HardFamiliesOption = Annotated[float | None, typer.Option("--hard-families", help=HARD_FAMILIES_HELP,
                                                          show_default=False)]
CeWeightOption = Annotated[float, typer.Option(
    "--ce-weight", help="Weight of the family cross-entropy in each learned method's loss (0: contrast only).")]
MethodsOption = Annotated[str, typer.Option(
    "--methods", help="Learned methods to train beside NAR's baselines, comma-separated (GCN, GAT, NAR).")]
PredictorKindOption = Annotated[str, typer.Option(
    "--kind", help="graph (message passing over every node, the bundled kind) or former (NAR-Former-style "
                   "transformer over folded tokens).")]

# the zoo
ZooDbOption = Annotated[Path | None, typer.Option("--db", help="Zoo database (default: your zoo in NAR_HOME).")]
SourcesOption = Annotated[list[str] | None, typer.Option(
    "--source", "-s", help="Only these zoo sources (repeat or comma-separate).")]
RetryFailedOption = Annotated[bool, typer.Option("--retry-failed", help="Try again what failed last time.")]
SourceFilterOption = Annotated[str | None, typer.Option(
    "--source", "-s", help="Only this zoo source ('cache' in nar similar: only the models you scanned).")]
FamilyFilterOption = Annotated[str | None, typer.Option("--family", "-f", help="Only this family.")]
TaskFilterOption = Annotated[str | None, typer.Option("--task", "-t", help="Only this task.")]
EXPLAINED_REUSE = {  # flags that more than one command declares because they mean different things there
    "--device": "bench: cpu or cuda; calibrate: the name to store a head under; predict: a stored device name",
    "--k": "similar: how many neighbours; eval retrieval: the cut-offs",
    "--limit": "at most N of what each command lists or builds (motif types, models per source, rows)",
    "--out": "each command's own output file or folder",
    "--weights": "predict and the predictor commands: the predictor folder; zoo embed: the encoder's weights",
}
