"""The `nar train` and `nar eval` groups, and their encoder commands (`nar train encoder`, `nar eval retrieval`);
the predictor's and the latency head's live in predict_commands.py, calibration's in bench_commands.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from narcli.cli.common import fail, run, stderr_console
from narcli.cli.options import AugmentOption, CeWeightOption, EpochsOption, HardFamiliesOption, JsonOption, MethodsOption, SeedOption, TrainDeviceOption, reporter

eval_app = typer.Typer(help="Measure what nar ships against baselines: retrieval, the accuracy/latency predictor, "
                       "the latency head and this machine's calibration.", no_args_is_help=True)
train_app = typer.Typer(help="Train what nar ships: the encoder, the accuracy/latency predictor, the latency head.",
                        no_args_is_help=True)


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        ks = ()
    if not ks or any(k <= 0 for k in ks):
        fail(f"--k must be positive integers separated by commas, not {text!r}", 2)
    return ks



def _train_config(seed: int, epochs: int, ce_weight: float, device: str, augment: int | None = None,
                  hard_families: float | None = None) -> Any:
    """The training recipe that `nar train encoder` and `nar eval retrieval` share (checked by
    `TrainConfig` itself)."""
    from narcli.encode.training import TrainConfig

    if augment is None:
        augment = TrainConfig.augment  # the shipped recipe
    if hard_families is None:
        hard_families = TrainConfig.hard_families
    return run(TrainConfig, seed=seed, epochs=epochs, ce_weight=ce_weight, device=_device(device), augment=augment,
               hard_families=hard_families)


@eval_app.command("retrieval")
def eval_retrieval(
    split: str = typer.Option("random", "--split", help="random (90/10 by family) or ood (20 % of families held out)."),
    k: str = typer.Option("20,50,100", "--k", help="Cut-offs, comma-separated."),
    epochs: EpochsOption = 40,
    seed: SeedOption = 0,
    ablations: bool = typer.Option(False, "--ablations", help="Also train the ablations of NAR."),
    nas: bool = typer.Option(False, "--nas", help="Use the DARTS 10-class set (30,000 cells) instead of the zoo."),
    methods: MethodsOption = "GCN,GAT,NAR",
    ce_weight: CeWeightOption = 0.0,
    augment: AugmentOption = None,
    hard_families: HardFamiliesOption = None,
    device: TrainDeviceOption = "",
    out: Path = typer.Option(None, "--out", help="Also write the results as JSON to this file."),
    as_json: JsonOption = False,
) -> None:
    """Retrieval MRR/MAP/NDCG of NAR and the baselines on one split of the zoo (or of DARTS)."""
    from narcli.encode.retrieval_eval import evaluate_retrieval

    if split not in ("random", "ood"):
        fail(f"--split must be random or ood, not {split!r}", 2)
    if nas and augment:
        fail("--augment edits zoo graphs; the DARTS set (--nas) is trained without it", 2)
    if nas and hard_families:
        fail("--hard-families draws near zoo families; the DARTS set (--nas) is trained without it", 2)
    config = _train_config(seed, epochs, ce_weight, device, 0 if nas else augment, 0.0 if nas else hard_families)
    ks = _ks(k)
    chosen = _methods(methods)
    console = stderr_console()
    results = run(evaluate_retrieval, split, ks, config, ablations, seed, "darts" if nas else "zoo",
                   report=reporter(console), methods=chosen)
    results.pop("nar_model", None)
    results.pop("test_models", None)  # a model card keeps them; here they would be hundreds of lines
    text = json.dumps(results, indent=2, default=str)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        from narcli.fsutil import write_text

        write_text(out, text + "\n")
    if as_json:
        print(text)
        return
    from narcli.encode.evaluation import format_table

    for relevance in ("family", "coarse"):
        rows = [(name, m[relevance]) for name, m in results["methods"].items() if relevance in m]
        if rows:
            print(f"\n{results['data']}, {split} split, relevance = {relevance} ({results['test']} test queries "
                  f"of {results['architectures']} architectures)\n")
            print(format_table(rows, ks))


def _methods(text: str) -> tuple[str, ...]:
    from narcli.encode.retrieval_eval import LEARNED

    chosen = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in chosen if m not in LEARNED]
    if unknown:
        fail(f"--methods: unknown method {unknown[0]!r}; choose from {', '.join(LEARNED)}", 2)
    return chosen


def _device(name: str) -> str:
    """The device asked for, else CUDA when there is one; a clear error for an unusable one."""
    import torch

    if not name:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.split(":")[0] not in ("cpu", "cuda"):
        fail(f"--device must be cpu or cuda, not {name!r}", 2)
    if name.startswith("cuda") and not torch.cuda.is_available():
        fail("--device cuda: no CUDA device is available here; use --device cpu", 2)
    return name


@train_app.command("encoder")
def train_encoder_command(
    out: Path = typer.Option(None, "--out", help="Weights file to write (default: the bundled weights)."),
    epochs: EpochsOption = 40,
    seed: SeedOption = 0,
    ce_weight: CeWeightOption = 0.0,
    augment: AugmentOption = None,
    hard_families: HardFamiliesOption = None,
    device: TrainDeviceOption = "",
    methods: MethodsOption = "GCN,GAT,NAR",
) -> None:
    """Pretrain the NAR encoder on the zoo (motif InfoNCE, then SupCon, + CE with --ce-weight) and write its weights."""
    from narcli.encode.retrieval_eval import train_and_save
    from narcli.encode.weights import bundled_weights_path

    config = _train_config(seed, epochs, ce_weight, device, augment, hard_families)
    path = out or bundled_weights_path()
    chosen = _methods(methods)
    console = stderr_console()
    results = run(train_and_save, path, config, report=reporter(console), methods=chosen)
    nar = results["methods"]["NAR"]["family"]
    print(f"wrote {path}: test MRR@20 {nar['MRR@20']:.3f}, MAP@20 {nar['MAP@20']:.3f}, NDCG@20 {nar['NDCG@20']:.3f}")
