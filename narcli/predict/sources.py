"""Where the predictor's training and evaluation data come from: folders in the shared CSV formats,
and the canonical graphs they need — NAS-Bench-201 cells are built and traced by the `nasbench201`
zoo source (plugin `nar-nas`) into a zoo database under $NAR_HOME (resumable: cells already built
are kept), timm models come from the bundled zoo."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from narcli.errors import NarError, UsageError
from narcli.predict.datasets import Dataset, NB201_ACCURACY, load_nb201, load_timm, read_csv


def nb201_db(folder: Path, db: Path | None = None, jobs: int = 2,
             report: Callable[[str], None] | None = None) -> Path:
    """A zoo database with every cell of `folder/accuracy.csv` built (building what is missing)."""
    from narcli.scan.cache import nar_home
    from narcli.zoo.build import BuildOptions, build_zoo
    from narcli.zoo.plugins import zoo_sources

    csv_path = folder / "accuracy.csv"
    rows = read_csv(csv_path, ("index", "arch_str") + NB201_ACCURACY)
    sources = zoo_sources()
    if "nasbench201" not in sources:
        raise NarError("NAS-Bench-201 cells are built by the nar-nas plugin; install it: pip install plugins/nar-nas")
    if db is None:  # the network's version is in the name: a cache traced by another network is not reused
        version = sources["nasbench201"].version()
        digest = hashlib.sha256("\n".join([version] + sorted(r["arch_str"] for r in rows)).encode()).hexdigest()[:12]
        db = nar_home() / "predictor" / f"nb201-{digest}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    if report:
        report(f"NAS-Bench-201 graphs: {db} ({len(rows):,} cells; building the missing ones)")
    previous = os.environ.get("NAR_NB201_ARCHS")
    os.environ["NAR_NB201_ARCHS"] = str(csv_path.resolve())
    try:
        build_zoo(BuildOptions(db=db, sources=["nasbench201"], jobs=jobs))
    finally:
        if previous is None:
            os.environ.pop("NAR_NB201_ARCHS", None)
        else:
            os.environ["NAR_NB201_ARCHS"] = previous
    return db


def check_folders(nb201: Path | None, timm: Path | None) -> None:
    """Usage errors for a missing folder, file or column, before anything slow happens."""
    from narcli.predict.datasets import BENCHMARK_COLUMNS

    if nb201 is None and timm is None:
        raise UsageError("give --nb201 DIR and/or --timm DIR")
    if nb201 is not None:
        _check_folder(nb201, "accuracy.csv")
        read_csv(nb201 / "accuracy.csv", ("index", "arch_str") + NB201_ACCURACY)
        if (nb201 / "latency_ms.csv").exists():
            read_csv(nb201 / "latency_ms.csv", ("index",))
    if timm is not None:
        _check_folder(timm, "results-imagenet.csv")
        read_csv(timm / "results-imagenet.csv", ("model", "top1"))
        for path in sorted(timm.glob("benchmark-*.csv")):
            read_csv(path, BENCHMARK_COLUMNS)


def load_datasets(nb201: Path | None = None, timm: Path | None = None, graphs_db: Path | None = None,
                  jobs: int = 2, report: Callable[[str], None] | None = None) -> list[Dataset]:
    """The labelled datasets in the folders given (at least one)."""
    check_folders(nb201, timm)
    out = []
    if nb201 is not None:
        out.append(load_nb201(nb201, nb201_db(nb201, graphs_db, jobs, report)))
    if timm is not None:
        out.append(load_timm(timm))
    for dataset in out:
        if not dataset.names:
            raise NarError(f"no {dataset.name} rows matched a graph")
        if report:
            report(f"{dataset.name}: {len(dataset.names):,} labelled rows, {len(set(dataset.groups)):,} architectures")
            if dataset.name == "nb201" and (warning := short_training_warning(dataset)):
                report(warning)
    return out


SHORT_TRAINING_BEST = 91.0  # the best 12-epoch CIFAR-10 test accuracy is 89.2 %, the best 200-epoch 94.4 %


def short_training_warning(dataset: Dataset) -> str:
    """A warning when the CIFAR-10 test column looks like NAS-Bench-201's 12-epoch results (the API's
    default `hp='12'`), not the 200-epoch ones the papers train and score on."""
    import numpy as np

    column = [t.column for t in dataset.targets].index("cifar10-test")
    values = dataset.values[:, column]
    best = float(np.nanmax(values)) if np.isfinite(values).any() else float("nan")
    if len(values) >= 100 and best < SHORT_TRAINING_BEST:
        return (f"warning: the best CIFAR-10 test accuracy here is {best:.1f} %: these look like NAS-Bench-201's "
                f"12-epoch results, not the 200-epoch ones the papers use (best 94.4 %)")
    return ""


def _check_folder(folder: Path, needed: str) -> None:
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    if not (folder / needed).exists():
        raise UsageError(f"{folder} has no {needed}")
