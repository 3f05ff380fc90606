"""The `nar` command line: each command parses its arguments and calls one library function.

Heavy libraries (torch, onnx, sqlite-utils) are imported inside the functions that need them, so
`nar --help` and cache hits start fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from narcli import __version__
from narcli.errors import NarError

app = typer.Typer(
    name="nar",
    help="Neural architecture retrieval: trace models into canonical graphs and find their kin.",
    rich_markup_mode="rich",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(help="Inspect or clear the scan cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
zoo_app = typer.Typer(help="Browse the zoo of known architectures, or build it.", no_args_is_help=True)
app.add_typer(zoo_app, name="zoo")

_state = {"debug": False}


def _stdout() -> Any:
    from rich.console import Console

    return Console()


def _fail(message: str, code: int) -> None:
    from rich.console import Console
    from rich.markup import escape

    # soft wrap: the error stays one line however narrow the terminal
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]error:[/bold red] {escape(message)}")
    raise typer.Exit(code)


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a library function, turning errors into one line and an exit code (unless --debug)."""
    try:
        return fn(*args, **kwargs)
    except NarError as exc:
        if _state["debug"]:
            trace = getattr(exc, "child_traceback", "")
            if trace:
                print(trace, file=sys.stderr)
            raise
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:
        if _state["debug"]:
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", 1)


def _version(value: bool) -> None:
    if value:
        print(f"nar {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
) -> None:
    _state["debug"] = debug


@app.command()
def scan(
    path: Path = typer.Argument(..., help="A .py, .onnx or .pt2 file, a directory to scan, or a zoo model name."),
    model: str | None = typer.Option(None, "--model", "-m",
                                        help="Model class or factory in a .py file, e.g. 'resnet(depth=18)'."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i",
                                                    help="Example input shape, e.g. 1,3,224,224 (repeat for several inputs)."),
    input_dtype: list[str] | None = typer.Option(None, "--input-dtype",
                                                    help="Input dtype: float32 (default), long for token ids, ..."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Trace again, and do not store the result."),
    as_json: bool = typer.Option(False, "--json", help="Print the full record as JSON."),
    graph: bool = typer.Option(False, "--graph", help="Include the canonical graph (implies --json)."),
) -> None:
    """Trace a model into its canonical architecture graph and summarise it (cached)."""
    from narcli.scan import ScanOptions

    if timeout <= 0:
        _fail("--timeout must be positive", 2)
    from narcli.targets import looks_like_a_name

    as_json = as_json or graph
    if not path.exists() and looks_like_a_name(str(path)):
        _scan_zoo_name(str(path), as_json, graph)
        return
    options = ScanOptions(model=model, input_shapes=input_shape, input_dtypes=input_dtype,
                          timeout=timeout, use_cache=not no_cache)
    if path.is_dir():
        _scan_directory(path, options, as_json)
        return
    from narcli.scan import scan_file

    records, graphs = _run(scan_file, path, options, want_graphs=graph)
    if as_json:
        models = []
        for i, record in enumerate(records):
            item = record.to_json()
            if graph and i < len(graphs) and graphs[i] is not None:
                item["graph"] = graphs[i].to_dict()
            models.append(item)
        print(json.dumps({"path": str(path), "models": models}, indent=2))
        return
    from narcli.render import print_records

    print_records(_stdout(), records)


def _scan_zoo_name(name: str, as_json: bool, graph: bool) -> None:
    """`nar scan resnet50`: a zoo model needs no tracing; show its stored record."""
    zoo = _zoo()
    model = _run(zoo.resolve, name)
    record = model.to_record()
    if as_json:
        item = record.to_json()
        if graph:
            item["graph"] = _run(zoo.graph, model).to_dict()
        print(json.dumps({"path": name, "models": [item]}, indent=2))
        return
    from narcli.render import print_records

    print_records(_stdout(), [record])


def _scan_directory(path: Path, options: Any, as_json: bool) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from narcli.scan import scan_directory

    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeRemainingColumn(), transient=True,
                  console=_stderr_console()) as progress:
        task = progress.add_task("scanning", total=None)

        def on_file(current: Path, done: int, total: int) -> None:
            progress.update(task, total=total, completed=done, description=f"scanning {current.name}")

        results = _run(scan_directory, path, options, on_file=on_file)
    if as_json:
        print(json.dumps({"path": str(path), "files": [
            {"path": str(r.path), "models": [m.to_json() for m in r.records],
             "error": r.error, "skipped": r.skipped} for r in results]}, indent=2))
    else:
        from narcli.render import print_directory

        print_directory(_stdout(), results)
    if any(r.error for r in results):
        raise typer.Exit(1)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


@cache_app.command("info")
def cache_info(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Where the cache is and what it holds."""
    from narcli.cache import Cache

    info = _run(Cache().info)
    if as_json:
        print(json.dumps(info, indent=2))
        return
    from narcli.render import print_cache_info

    print_cache_info(_stdout(), info)


@cache_app.command("clear")
def cache_clear(yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")) -> None:
    """Delete every cached scan and graph."""
    from narcli.cache import Cache

    cache = Cache()
    if not yes and sys.stdin.isatty():
        typer.confirm(f"Delete everything cached in {cache.path}?", abort=True)
    removed = _run(cache.clear)
    print(f"removed {removed['scans']} scans, {removed['models']} models, {removed['graphs']} graphs")


# -- zoo --------------------------------------------------------------------------------------------
def _zoo() -> Any:
    from narcli.zoo import Zoo

    return Zoo()


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@zoo_app.command("build")
def zoo_build(
    source: list[str] | None = typer.Option(None, "--source", "-s",
                                               help="Source(s) to build (repeat or comma-separate); default: all bundled."),
    names: list[str] | None = typer.Option(None, "--name", "-n", help="Only models whose name matches this glob."),
    limit: int | None = typer.Option(None, "--limit", help="At most this many new models per source."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Worker processes."),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds to allow building and tracing one model."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Try the models that failed last time again."),
    db: Path | None = typer.Option(None, "--db", help="Zoo database to write (default: your zoo in NAR_HOME)."),
) -> None:
    """Trace every model of the chosen sources into a zoo database (resumable)."""
    from narcli.zoo import user_zoo_path
    from narcli.zoo_build import BuildOptions, build_zoo

    options = BuildOptions(db=db or user_zoo_path(), sources=_split(source), patterns=_split(names), limit=limit,
                           jobs=jobs, timeout=timeout, retry_failed=retry_failed)
    from narcli.render_zoo import BuildProgress, print_build_reports

    with BuildProgress(_stderr_console()) as progress:
        reports = _run(build_zoo, options, progress)
    print_build_reports(_stdout(), reports, options.db)
    if reports and not any(r.ok + r.already for r in reports if r.listed):
        raise typer.Exit(1)


@zoo_app.command("relabel")
def zoo_relabel(db: Path | None = typer.Option(None, "--db", help="Zoo database to relabel (default: your zoo).")) -> None:
    """Apply the family table (narcli/data/families.csv) to a built zoo, without tracing again."""
    from narcli.zoo import user_zoo_path
    from narcli.zoo_build import relabel_zoo

    counts = _run(relabel_zoo, db or user_zoo_path())
    print(f"{counts['table']} labelled by the table, {counts['structure']} by structure; {counts['changed']} changed")


@zoo_app.command("embed")
def zoo_embed(
    db: Path | None = typer.Option(None, "--db", help="Zoo database to embed (default: your zoo)."),
    weights: Path | None = typer.Option(None, "--weights", help="Encoder weights (default: the bundled ones)."),
    force: bool = typer.Option(False, "--force", help="Embed everything again, even what is current."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Store the encoder's embedding of every architecture in a zoo (only what changed)."""
    from narcli.zoo import user_zoo_path
    from narcli.zoo_embed import embed_zoo

    path = db or user_zoo_path()
    if not path.exists():
        _fail(f"zoo database {path} does not exist; build it with `nar zoo build --db {path}`", 1)
    console = _stderr_console()
    summary = _run(embed_zoo, path, weights, force, report=lambda line: console.print(f"[dim]{line}[/]"))
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{summary['database']}: {summary['embedded']} embedded, {summary['unchanged']} already current "
          f"(encoder {summary['encoder']})")


@zoo_app.command("list")
def zoo_list(
    pattern: str | None = typer.Argument(None, help="Glob on model names, e.g. 'resnet*' or 'hf/bert/*'."),
    family: str | None = typer.Option(None, "--family", "-f", help="Only this family."),
    source: str | None = typer.Option(None, "--source", "-s", help="Only this source."),
    task: str | None = typer.Option(None, "--task", "-t", help="Only this task."),
    coarse: str | None = typer.Option(None, "--coarse", "-c", help="Only this coarse class."),
    failed: bool = typer.Option(False, "--failed", help="List the models that failed to build, with why."),
    limit: int = typer.Option(0, "--limit", help="Show at most this many (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List zoo models, filtered."""
    from narcli.render_zoo import print_model_list

    zoo = _zoo()
    models = _run(zoo.models, pattern, family=family, source=source, task=task, coarse=coarse, failed=failed)
    if not models:
        filters = ", ".join(f"{k}={v}" for k, v in (("pattern", pattern), ("family", family), ("source", source),
                                                     ("task", task), ("coarse", coarse)) if v)
        _fail(f"no {'failed ' if failed else ''}zoo models match {filters or 'at all'}", 1)
    shown = models[:limit] if limit > 0 else models
    if as_json:
        print(json.dumps([m.to_json() for m in shown], indent=2))
        return
    print_model_list(_stdout(), shown, len(models), failed)


@zoo_app.command("show")
def zoo_show(
    name: str = typer.Argument(..., help="A zoo id (timm/resnet50) or a bare name (resnet50)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show one zoo model's record."""
    zoo = _zoo()
    model = _run(zoo.resolve, name)
    aliases = _run(zoo.aliases, model)
    if as_json:
        print(json.dumps({**model.to_json(), "aliases": aliases}, indent=2))
        return
    from narcli.render_zoo import print_zoo_model

    print_zoo_model(_stdout(), model, aliases)


@zoo_app.command("families")
def zoo_families(
    source: str | None = typer.Option(None, "--source", "-s", help="Only this source."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Families in the zoo with their coarse class and counts."""
    families = _run(_zoo().families, source)
    if not families:
        _fail(f"no families{f' from source {source!r}' if source else ''} in the zoo", 1)
    if as_json:
        print(json.dumps(families, indent=2))
        return
    from narcli.render_zoo import print_families

    print_families(_stdout(), families)


@zoo_app.command("stats")
def zoo_stats(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Counts by source, coarse class and task, and failures by reason."""
    stats = _run(_zoo().stats)
    if as_json:
        print(json.dumps(stats, indent=2))
        return
    from narcli.render_zoo import print_stats

    print_stats(_stdout(), stats)


@app.command("motifs")
def motifs_command(
    target: str = typer.Argument(..., help="A zoo model name, or a .py, .onnx or .pt2 file."),
    steps: int = typer.Option(1, "--steps", help="Neighbour-encoding steps before finding repeats."),
    max_size: int = typer.Option(64, "--max-size", help="Nodes in one motif at most."),
    limit: int = typer.Option(20, "--limit", help="Show at most this many motif types (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show the repeated motifs a model is built from (e.g. a bottleneck block x 12)."""
    from narcli.motifs import motif_report

    if steps < 0 or max_size < 1 or limit < 0:
        _fail("--steps must be >= 0, --max-size >= 1 and --limit >= 0", 2)
    reports = _run(motif_report, target, steps=steps, max_size=max_size)
    if as_json:
        print(json.dumps(reports, indent=2))
        return
    from narcli.render_motifs import print_motifs

    print_motifs(_stdout(), reports, limit)


eval_app = typer.Typer(help="Measure retrieval quality against baselines.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
train_app = typer.Typer(help="Train the encoder.", no_args_is_help=True)
app.add_typer(train_app, name="train")


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        ks = ()
    if not ks or any(k <= 0 for k in ks):
        _fail(f"--k must be positive integers separated by commas, not {text!r}", 2)
    return ks


def _train_config(seed: int, epochs: int, ce_weight: float, device: str) -> Any:
    """The training recipe that `nar train encoder` and `nar eval retrieval` share, checked."""
    from narcli.training import TrainConfig

    if epochs < 1:
        _fail("--epochs must be at least 1", 2)
    if ce_weight < 0:
        _fail("--ce-weight must not be negative", 2)
    return TrainConfig(seed=seed, epochs=epochs, ce_weight=ce_weight, device=_device(device))


@eval_app.command("retrieval")
def eval_retrieval(
    split: str = typer.Option("random", "--split", help="random (90/10 by family) or ood (20 % of families held out)."),
    k: str = typer.Option("20,50,100", "--k", help="Cut-offs, comma-separated."),
    epochs: int = typer.Option(40, "--epochs", help="Graph-level training epochs of each learned method."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split and of training."),
    ablations: bool = typer.Option(False, "--ablations", help="Also train the ablations of NAR."),
    nas: bool = typer.Option(False, "--nas", help="Use the DARTS 10-class set (30,000 cells) instead of the zoo."),
    methods: str = typer.Option("GCN,GAT,NAR", "--methods", help="Learned methods to train, comma-separated."),
    ce_weight: float = typer.Option(0.0, "--ce-weight",
                                    help="Weight of the family cross-entropy in each learned method's loss (0: contrast only)."),
    device: str = typer.Option("", "--device", help="cpu or cuda (default: cuda when available)."),
    out: Path = typer.Option(None, "--out", help="Also write the results as JSON to this file."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """Retrieval MRR/MAP/NDCG of NAR and the baselines on one split of the zoo (or of DARTS)."""
    from narcli.retrieval_eval import evaluate_retrieval

    if split not in ("random", "ood"):
        _fail(f"--split must be random or ood, not {split!r}", 2)
    config = _train_config(seed, epochs, ce_weight, device)
    ks = _ks(k)
    chosen = _methods(methods)
    console = _stderr_console()
    results = _run(evaluate_retrieval, split, ks, config, ablations, seed, "darts" if nas else "zoo",
                   report=lambda line: console.print(f"[dim]{line}[/]"), methods=chosen)
    results.pop("nar_model", None)
    text = json.dumps(results, indent=2, default=str)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    if as_json:
        print(text)
        return
    from narcli.evaluation import format_table

    for relevance in ("family", "coarse"):
        rows = [(name, m[relevance]) for name, m in results["methods"].items() if relevance in m]
        if rows:
            print(f"\n{results['data']}, {split} split, relevance = {relevance} ({results['test']} test queries "
                  f"of {results['architectures']} architectures)\n")
            print(format_table(rows, ks))


def _methods(text: str) -> tuple[str, ...]:
    from narcli.retrieval_eval import LEARNED

    chosen = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in chosen if m not in LEARNED]
    if unknown:
        _fail(f"--methods: unknown method {unknown[0]!r}; choose from {', '.join(LEARNED)}", 2)
    return chosen


def _device(name: str) -> str:
    """The device asked for, else CUDA when there is one; a clear error for an unusable one."""
    import torch

    if not name:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.split(":")[0] not in ("cpu", "cuda"):
        _fail(f"--device must be cpu or cuda, not {name!r}", 2)
    if name.startswith("cuda") and not torch.cuda.is_available():
        _fail("--device cuda: no CUDA device is available here; use --device cpu", 2)
    return name


@train_app.command("encoder")
def train_encoder_command(
    out: Path = typer.Option(None, "--out", help="Weights file to write (default: the bundled weights)."),
    epochs: int = typer.Option(40, "--epochs", help="Graph-level training epochs."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split and of training."),
    ce_weight: float = typer.Option(0.0, "--ce-weight",
                                    help="Weight of the family cross-entropy in the encoder's loss (0: contrast only)."),
    device: str = typer.Option("", "--device", help="cpu or cuda (default: cuda when available)."),
    methods: str = typer.Option("GCN,GAT,NAR", "--methods",
                                help="Learned methods to train beside NAR for the card's table, comma-separated."),
) -> None:
    """Pretrain the NAR encoder on the zoo (motif InfoNCE, then SupCon, + CE with --ce-weight) and write its weights."""
    from narcli.retrieval_eval import train_and_save
    from narcli.weights import bundled_weights_path

    config = _train_config(seed, epochs, ce_weight, device)
    path = out or bundled_weights_path()
    chosen = _methods(methods)
    console = _stderr_console()
    results = _run(train_and_save, path, config, report=lambda line: console.print(f"[dim]{line}[/]"), methods=chosen)
    nar = results["methods"]["NAR"]["family"]
    print(f"wrote {path}: test MRR@20 {nar['MRR@20']:.3f}, MAP@20 {nar['MAP@20']:.3f}, NDCG@20 {nar['NDCG@20']:.3f}")


index_app = typer.Typer(help="Build or inspect the nearest-neighbour indexes.", no_args_is_help=True)
app.add_typer(index_app, name="index")


def _scan_options(model: str | None, input_shape: list[str] | None, timeout: float, no_cache: bool) -> Any:
    from narcli.scan import ScanOptions

    if timeout <= 0:
        _fail("--timeout must be positive", 2)
    return ScanOptions(model=model, input_shapes=input_shape, timeout=timeout, use_cache=not no_cache)


@app.command("similar")
def similar_command(
    target: str = typer.Argument(..., help="A zoo name (resnet50), a .py/.onnx/.pt2 file, or cache:NAME."),
    k: int = typer.Option(10, "-k", "--k", help="How many neighbours to show (1-1000)."),
    family: str | None = typer.Option(None, "--family", "-f", help="Only neighbours of this family."),
    task: str | None = typer.Option(None, "--task", "-t", help="Only neighbours with this task."),
    source: str | None = typer.Option(None, "--source", "-s", help="Only neighbours from this source (or 'cache')."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model class or factory in a .py file."),
    input_shape: list[str] | None = typer.Option(None, "--input-shape", "-i", help="Example input shape of a .py model."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Trace again, and store nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """The known architectures nearest to a model, and the family it most likely belongs to."""
    from narcli.similar import check_k, find_similar

    _run(check_k, k)
    options = _scan_options(model, input_shape, timeout, no_cache)
    console = _stderr_console()
    results = _run(find_similar, target, k, family, task, source, options,
                   report=lambda line: console.print(f"[dim]{line}[/]"))
    if as_json:
        print(json.dumps({"target": target, "results": [r.to_json() for r in results]}, indent=2))
        return
    from narcli.render_similar import print_similar

    print_similar(_stdout(), results)


@app.command("compare")
def compare_command(
    a: str = typer.Argument(..., help="First model: zoo name, model file or cache:NAME."),
    b: str = typer.Argument(..., help="Second model."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Two architectures side by side: figures, op counts, motifs, cosine."""
    from narcli.compare import compare

    result = _run(compare, a, b, _scan_options(None, None, timeout, False))
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        return
    from narcli.render_similar import print_comparison

    print_comparison(_stdout(), result)


@app.command("check")
def check_command(
    paths: list[Path] | None = typer.Argument(None, help="Model files (default: [tool.nar] check-paths)."),
    threshold: float | None = typer.Option(None, "--threshold",
                                           help="Cosine at or above which a model is a known one (default 0.99)."),
    strict: bool = typer.Option(False, "--strict", help="Also fail when a file cannot be scanned."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to allow importing and tracing one file."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """For pre-commit: fail when a model file is (nearly) a known zoo architecture."""
    from narcli.check import check_models

    report = _run(check_models, list(paths or []), threshold, strict, _scan_options(None, None, timeout, False))
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        from narcli.render_similar import print_check

        print_check(_stdout(), report)
    raise typer.Exit(report.exit_code)


@index_app.command("build")
def index_build(
    bundled: bool = typer.Option(False, "--bundled", help="Rewrite the index shipped with nar (maintainers)."),
    as_json: bool = typer.Option(False, "--json", help="Print the indexes as JSON."),
) -> None:
    """Rebuild the zoo index and the index of your scanned models."""
    from narcli.neighbours import rebuild_indexes

    console = _stderr_console()
    rows = _run(rebuild_indexes, bundled, report=lambda line: console.print(f"[dim]{line}[/]"))
    _print_indexes(rows, as_json)


@index_app.command("info")
def index_info_command(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Where the indexes are, what they hold, and whether they are current."""
    from narcli.neighbours import index_info

    _print_indexes(_run(index_info), as_json)


def _print_indexes(rows: list[dict], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from narcli.render_similar import print_indexes

    print_indexes(_stdout(), rows)


@app.command("plugins")
def plugins_command(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the installed nar plugins and the zoo sources they provide."""
    from narcli.plugins import plugin_list

    plugins = _run(plugin_list)
    if as_json:
        print(json.dumps(plugins, indent=2))
        return
    from narcli.render_zoo import print_plugins

    print_plugins(_stdout(), plugins)


def main() -> None:
    app()
