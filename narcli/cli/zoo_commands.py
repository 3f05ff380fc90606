"""`nar zoo ...` and `nar plugins`: browse, build, relabel and embed the zoo; list its sources."""

from __future__ import annotations

import json

from pathlib import Path
from typing import Annotated

import typer

from narcli.cli.common import check_range, fail, open_zoo, run, stderr_console, stdout
from narcli.cli.options import FamilyFilterOption, JobsOption, JsonOption, RetryFailedOption, SourceFilterOption, SourcesOption, TaskFilterOption, TimeoutOption, ZooDbOption, reporter
from narcli.errors import printable

zoo_app = typer.Typer(help="Browse the zoo of known architectures, or build it.", no_args_is_help=True)

ENGINE_OPTION = typer.Option("local", "--engine", help="local (worker processes here) or ray (pip install 'nar\\[ray]').")
ADDRESS_OPTION = typer.Option(None, "--address", help="Ray cluster to join, e.g. ray://head:10001 or auto "
                                                       "(default: start a local Ray).")


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@zoo_app.command("build")
def zoo_build(
    source: SourcesOption = None,
    names: list[str] | None = typer.Option(None, "--name", "-n", help="Only models whose name matches this glob."),
    limit: int | None = typer.Option(None, "--limit", help="At most this many new models per source."),
    jobs: JobsOption = None,
    timeout: TimeoutOption = 300.0,
    retry_failed: RetryFailedOption = False,
    refresh: bool = typer.Option(False, "--refresh", help="Trace the chosen models again even when the zoo has "
                                                          "them (after nar's tracer changed); with --name, only those."),
    db: ZooDbOption = None,
    engine: str = ENGINE_OPTION,
    address: str | None = ADDRESS_OPTION,
) -> None:
    """Trace every model of the chosen sources into a zoo database (resumable).

    With --engine ray the models are traced on a Ray cluster (--address) or a local Ray; this
    process stays the one writer of the database.
    """
    from narcli.zoo.build import BuildOptions, build_zoo
    from narcli.zoo.store import user_zoo_path

    options = BuildOptions(db=db or user_zoo_path(), sources=_split(source), patterns=_split(names), limit=limit,
                           jobs=jobs, timeout=timeout, retry_failed=retry_failed, refresh=refresh, engine=engine,
                           address=address)
    from narcli.cli.render_zoo import BuildProgress, print_build_reports

    with BuildProgress(stderr_console()) as progress:
        reports = run(build_zoo, options, progress)
    print_build_reports(stdout(), reports, options.db)
    if reports and not any(r.ok + r.already for r in reports if r.listed):
        raise typer.Exit(1)


@zoo_app.command("relabel")
def zoo_relabel(db: ZooDbOption = None) -> None:
    """Apply the family table (narcli/data/families.csv) and the refinements by structure to a built zoo, without tracing again."""
    from narcli.zoo.upgrade import relabel_zoo
    from narcli.zoo.store import user_zoo_path

    counts = run(relabel_zoo, db or user_zoo_path())
    print(f"{counts['table']} labelled by the table, {counts['structure']} by structure; {counts['changed']} changed")


@zoo_app.command("upgrade")
def zoo_upgrade(db: ZooDbOption = None) -> None:
    """Bring stored graphs to the current canonical form (after a nar upgrade), without tracing again.

    Then run `nar zoo embed` to embed what changed.
    """
    from narcli.zoo.store import user_zoo_path
    from narcli.zoo.upgrade import upgrade_zoo

    path = db or user_zoo_path()
    console = stderr_console()
    counts = run(upgrade_zoo, path, report=reporter(console))
    print(f"{printable(path)}: {counts['rewritten']} of {counts['graphs']} graphs rewritten ({counts['models']} models moved, "
          f"{counts['merged']} merged with an existing graph), {counts['reordered']} reordered; "
          f"run `nar zoo embed --db {path}` next")


@zoo_app.command("embed")
def zoo_embed(
    db: ZooDbOption = None,
    weights: Annotated[Path | None, typer.Option("--weights", help="Encoder weights (default: the bundled ones).")] = None,
    force: bool = typer.Option(False, "--force", help="Embed everything again, even what is current."),
    as_json: JsonOption = False,
    engine: str = ENGINE_OPTION,
    address: str | None = ADDRESS_OPTION,
    jobs: JobsOption = None,
) -> None:
    """Store the encoder's embedding and the predictor's predictions of every model in a zoo (only what changed)."""
    from narcli.predict.zoo_predictions import embed_and_predict
    from narcli.trace.engines import check_engine
    from narcli.zoo.store import user_zoo_path

    path = db or user_zoo_path()
    if not path.exists():
        fail(f"zoo database {path} does not exist; build it with `nar zoo build --db {path}`", 1)
    if jobs is not None:
        check_range("--jobs", jobs, 1)
    run(check_engine, engine, address)
    console = stderr_console()
    summary = run(embed_and_predict, path, weights, force, report=reporter(console),
                  engine=engine, address=address, jobs=jobs)
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{printable(summary['database'])}: {summary['embedded']} embedded, {summary['unchanged']} already current "
          f"(encoder {summary['encoder']}); {summary['predicted']} models predicted, {summary['predictions_current']} current "
          f"(predictor {summary['predictor']})")


@zoo_app.command("signatures")
def zoo_signatures(
    source: SourcesOption = None,
    limit: int | None = typer.Option(None, "--limit", help="At most this many models per source."),
    jobs: JobsOption = 1,
    timeout: TimeoutOption = 300.0,
    db: ZooDbOption = None,
) -> None:
    """Store each zoo model's checkpoint signature (tensor names and shapes), for `nar scan x.safetensors`.

    Builds the models on the meta device (no weights) and skips those that have one: resumable.
    """
    from narcli.cli.render_zoo import BuildProgress
    from narcli.zoo.build import compute_signatures
    from narcli.zoo.store import user_zoo_path

    path = db or user_zoo_path()
    with BuildProgress(stderr_console()) as progress:
        reports = run(compute_signatures, path, _split(source), jobs, timeout, limit, progress)
    if not reports:
        print(f"{printable(path)}: every model has its signature")
    for r in reports:
        print(f"{printable(r.source)}: {r.ok} signatures stored, {r.failed} failed, of {r.missing} missing ({r.seconds:.0f} s)")
    if any(r.failed and not r.ok for r in reports):
        raise typer.Exit(1)


@zoo_app.command("list")
def zoo_list(
    pattern: str | None = typer.Argument(None, help="Glob on model names, e.g. 'resnet*' or 'hf/bert/*'."),
    family: FamilyFilterOption = None,
    source: SourceFilterOption = None,
    task: TaskFilterOption = None,
    coarse: str | None = typer.Option(None, "--coarse", "-c", help="Only this coarse class."),
    failed: bool = typer.Option(False, "--failed", help="List the models that failed to build, with why."),
    limit: int = typer.Option(0, "--limit", help="Show at most this many (0: all)."),
    as_json: JsonOption = False,
) -> None:
    """List zoo models, filtered."""
    from narcli.cli.render_zoo import print_model_list
    from narcli.search.listing import list_zoo

    check_range("--limit", limit, 0)
    listing = run(list_zoo, open_zoo(), pattern, family, source, task, coarse, failed, limit)
    if as_json:
        print(json.dumps(listing.to_json(), indent=2))
        return
    print_model_list(stdout(), listing.models, listing.total, listing.failed)


@zoo_app.command("show")
def zoo_show(
    name: str = typer.Argument(..., help="A zoo id (timm/resnet50) or a bare name (resnet50)."),
    as_json: JsonOption = False,
) -> None:
    """Show one zoo model's record."""
    zoo = open_zoo()
    model = run(zoo.resolve, name)
    aliases = run(zoo.aliases, model)
    if as_json:
        print(json.dumps({**model.to_json(), "aliases": aliases}, indent=2))
        return
    from narcli.cli.render_zoo import print_zoo_model

    print_zoo_model(stdout(), model, aliases)


@zoo_app.command("families")
def zoo_families(
    source: SourceFilterOption = None,
    as_json: JsonOption = False,
) -> None:
    """Families in the zoo with their coarse class and counts."""
    families = run(open_zoo().families, source)
    if not families:
        fail(f"no families{f' from source {source!r}' if source else ''} in the zoo", 1)
    if as_json:
        print(json.dumps(families, indent=2))
        return
    from narcli.cli.render_zoo import print_families

    print_families(stdout(), families)


@zoo_app.command("stats")
def zoo_stats(as_json: JsonOption = False) -> None:
    """Counts by source, coarse class and task, and failures by reason."""
    stats = run(open_zoo().stats)
    if as_json:
        print(json.dumps(stats, indent=2))
        return
    from narcli.cli.render_zoo import print_stats

    print_stats(stdout(), stats)


def plugins_command(as_json: JsonOption = False) -> None:
    """List the installed nar plugins and the zoo sources they provide."""
    from narcli.zoo.plugins import plugin_list, uninstalled_plugins

    plugins, missing = run(plugin_list), run(uninstalled_plugins)
    if as_json:
        print(json.dumps([p | {"installed": True} for p in plugins] + missing, indent=2))
        return
    from narcli.cli.render_zoo import print_plugins

    print_plugins(stdout(), plugins, missing)
