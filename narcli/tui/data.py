"""What the browser shows, without textual: one `Entry` per zoo model and cached scan, filtering,
and the detail of one entry (summary, motif structure, neighbours, predictions), a comparison and
exports. Each function calls the library as the matching command does."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli.fsutil import write_text
from narcli.graph.dot import graph_dot, safe_stem, write_graph  # noqa: F401 (graph_dot: for callers)

COLUMNS = ("name", "family", "coarse", "task", "source", "params", "MACs", "nodes")


def shown(text: Any, style: str = "") -> Any:
    """Text from outside (a name, a path, an op type) as a Rich `Text`: never read as markup, its
    control characters escaped. Every widget that takes a string would parse markup in it."""
    from rich.text import Text

    from narcli.errors import printable

    return Text(printable(text), style=style)


WIDTHS = {"name": 30, "family": 12, "coarse": 13, "task": 14, "source": 12, "params": 7, "MACs": 7, "nodes": 6}
NARROW_BELOW = 100  # terminal columns: under this the browser is half the screen, name and family only
NARROW_WIDTHS = {**WIDTHS, "name": 23, "family": 9}  # with cell padding and the scrollbar: the browser's 38 columns
# the Similar table's columns, wide and narrow (a 40-column pane at 80×24): the cosine is never cut off
SIMILAR_WIDTHS = {False: {"name": 30, "cosine": 6, "family": 12}, True: {"name": 16, "cosine": 6, "family": 12}}


def fit(name: str, width: int) -> str:
    """`name` in `width` columns: the source prefix kept, the rest cut in the middle, so that
    `timm/aimv2_large_patch14_448` and `timm/aimv2_huge_patch14_448` still read apart."""
    if len(name) <= width:
        return name
    cut = name.find("/") + 1
    prefix = name[:cut] if 0 < cut <= width // 3 else ""
    rest = name[len(prefix):]
    room = width - len(prefix) - 1
    head = (room + 1) // 2
    return prefix + rest[:head] + "…" + rest[len(rest) - (room - head):]


@dataclass
class Entry:
    key: str  # zoo model id, or a cached graph's `cache_name` (scan/targets.py)
    name: str
    family: str
    coarse: str
    task: str
    source: str
    params: int
    macs: int
    nodes: int
    target: str  # what the library's target resolution takes
    zoo_model: Any = None
    record: Any = None
    haystack: str = field(default="", repr=False)  # lower-case text search matches against
    sized: str = ""  # a scan's inputs, shown beside its name when the same model was scanned at another size

    def __post_init__(self) -> None:
        self.haystack = f"{self.key} {self.name} {self.family} {self.sized}".lower()

    def set_family(self, family: str, coarse: str | None = None) -> None:
        """A scanned model's predicted family (and coarse class), once known (its table cells are
        made again)."""
        self.family = family
        if coarse is not None:
            self.coarse = coarse
        self.__dict__.pop("_cells", None)
        self.__post_init__()

    @property
    def label(self) -> str:
        """A zoo model by its id (`timm/resnet50`, `torchvision/resnet50`), a scan by its file and model
        and, when that model was scanned at other inputs too, its inputs: two rows never read alike."""
        if self.zoo_model is not None:
            return self.key
        return f"{self.name} @{self.sized}" if self.sized else self.name

    def cells(self, name_width: int = WIDTHS["name"]) -> tuple:
        cache = self.__dict__.setdefault("_cells", {})
        if name_width not in cache:
            cache[name_width] = self._make_cells(name_width)
        return cache[name_width]

    def _make_cells(self, name_width: int) -> tuple:
        from narcli.search.text import human, human_params

        return (shown(fit(self.label, name_width)), shown(self.family or "—"), shown(self.coarse or "—"), shown(self.task or "—"),
                shown(self.source), human_params(self.params), human(self.macs), str(self.nodes))

    def sort_value(self, column: str) -> Any:
        return {"params": self.params, "MACs": self.macs, "nodes": self.nodes}.get(column) \
            if column in ("params", "MACs", "nodes") else str(getattr(self, column.lower(), "")).lower()


def find_entry(entries: list[Entry], text: str) -> Entry | None:
    """The entry a name given on the command line means: its key, else its name or id tail."""
    lowered = text.lower()
    return next((e for e in entries if e.key == text), None) or next(
        (e for e in entries if e.name.lower() == lowered or e.key.lower().endswith("/" + lowered)), None)


def load_entries() -> list[Entry]:
    """Every zoo model that traced, then every cached scan (newest last)."""
    from narcli.errors import NarError
    from narcli.scan.cache import Cache
    from narcli.zoo.store import Zoo

    entries = []
    with Zoo() as zoo:
        for m in zoo.models():
            if m.status == "ok" and m.graph_hash:
                entries.append(Entry(m.id, m.name, m.family or "", m.coarse or "", m.task or "", m.source,
                                     m.params or 0, m.macs or 0, m.nodes or 0, m.id, zoo_model=m))
    try:
        records = Cache().records()
    except NarError:  # a damaged cache: browse the zoo anyway
        records = []
    # a file scanned again (after an upgrade of nar, or after it was edited) supersedes its older
    # scans of the same model at the same input: one row each, the newest (`cache:NAME` still finds
    # the others)
    latest = {(r.source, r.name, json.dumps(r.inputs, sort_keys=True)): r for r in records if r.graph_key}
    # one row per stored graph: two scans may share one (the same file under another torch, say),
    # and a table cannot hold two rows of one key; the newest scan names it
    cached = {entry.key: entry for entry in (cache_entry(r) for r in latest.values())}
    named = Counter(entry.name for entry in cached.values())
    for entry in cached.values():
        if named[entry.name] > 1:  # one model at two input sizes: two rows that would read alike
            entry.sized = ",".join(shape_text(i) for i in entry.record.inputs or [])
            entry.__post_init__()
    if cached:  # their families as `nar similar` predicts them, from the embeddings stored (no torch)
        from narcli.search.similar import cached_families

        try:
            families = cached_families()
        except NarError:
            families = {}
        for entry in cached.values():
            if entry.record.graph_key in families:
                entry.set_family(*families[entry.record.graph_key])
    entries.extend(cached.values())
    return entries


def shape_text(spec: dict[str, Any]) -> str:
    """An input's shape as the browser writes it: 1×3×224×224."""
    return "×".join(str(d) for d in spec.get("shape", []))


def cache_entry(record: Any) -> Entry:
    name = f"{Path(record.source).name}:{record.name}"
    from narcli.scan.cache import short_id
    from narcli.scan.targets import cache_name

    # the row is keyed by its graph; the commands are given the scan's unique name, since two scans
    # that share the graph (`file.py` and `file.py:Class` at one input) made `cache:GRAPH` ambiguous
    unique = getattr(record, "id", "")
    return Entry(cache_name(record.graph_key), name, "", "", "", "cache", record.params, record.macs, record.nodes,
                 cache_name(short_id(unique) if unique else record.graph_key), record=record)


def matches(entry: Entry, text: str, filters: dict[str, str]) -> bool:
    """Every word of `text` in the entry's name/family/id, and every filter equal (case-insensitive)."""
    if any(word not in entry.haystack for word in text.lower().split()):
        return False
    return all(str(getattr(entry, k)).lower() == v.lower() for k, v in filters.items() if v)


def relevance(entry: Entry, text: str) -> int:
    """How well `entry` answers the search `text`: 0 for its exact name (or id, or the id's last
    part), 1 when its name or id's last part starts with it, 2 for any other match. Enter opens
    the first row, so `resnet50` must open resnet50, not cspresnet50."""
    wanted = text.strip().lower()
    name, key = entry.name.lower(), entry.key.lower()
    last = key.rsplit("/", 1)[-1]
    if wanted in (name, key, last):
        return 0
    return 1 if name.startswith(wanted) or last.startswith(wanted) else 2


def filter_values(entries: list[Entry], column: str) -> list[str]:
    return sorted({str(getattr(e, column)) for e in entries if getattr(e, column)}, key=str.lower)


def graph_of(entry: Entry) -> Any:
    if entry.zoo_model is not None:
        from narcli.zoo.store import Zoo

        with Zoo() as zoo:
            return zoo.graph(entry.zoo_model)
    from narcli.scan.cache import Cache

    return Cache().graph(entry.record.graph_key)


def summary(entry: Entry) -> list[tuple[str, str]]:
    """The scan summary's rows: input (and what was assumed of it), params, MACs, depth, nodes, top
    ops, tracer, hash, aliases."""
    from narcli.search.text import human, human_params

    source = entry.zoo_model or entry.record
    inputs = ", ".join(shape_text(i) + f" {i.get('dtype', '')}".rstrip()
                       for i in (source.inputs or []))
    family = f"{entry.family} (predicted)" if entry.family and entry.record is not None else entry.family or "—"
    rows = [("name", entry.name), ("source", entry.source), ("family", family),
            ("task", entry.task or "—"), ("input", inputs or "—"),
            *([("assumed", assumed)] if (assumed := getattr(entry.record, "assumed", None)) else []),
            ("params", f"{human_params(entry.params)} ({entry.params:,})"), ("MACs", f"{human(entry.macs)} ({entry.macs:,})"),
            ("depth", str(source.depth or "—")), ("graph", f"{entry.nodes} nodes, {source.edges or 0} edges"),
            ("top ops", ", ".join(f"{op} ×{n}" for op, n in (source.top_ops or [])) or "—"),
            ("tracer", source.tracer or "—"), ("hash", source.graph_hash or "—")]
    if entry.zoo_model is not None:
        from narcli.zoo.store import Zoo

        with Zoo() as zoo:
            aliases = zoo.aliases(entry.zoo_model)
        rows.append(("same graph", ", ".join(aliases[:8]) + (f" and {len(aliases) - 8} more" if len(aliases) > 8 else "")
                     if aliases else "—"))
    return rows


def structure(entry: Entry) -> dict[str, Any]:
    """The model as its motifs: per motif type its size, repeats, ops and where the repeats sit."""
    from narcli.encode.motifs import describe, sample_motifs

    graph = graph_of(entry)
    motifs = sample_motifs(graph)
    rows = describe(graph, motifs)
    where: dict[str, list[int]] = {}
    for instance in motifs.instances:
        where.setdefault(instance.type[:8], []).append(instance.nodes[0])
    labels = [motif_label(graph, row) for row in rows]
    for row, label in zip(rows, labels):
        row["at"] = where.get(row["type"], [])
        # two blocks that read alike (their types differ in kernels or wiring) are told apart by type
        row["label"] = label if labels.count(label) == 1 else f"{label} [{row['type']}]"
    return {"nodes": graph.num_nodes, "instances": len(motifs.instances), "motifs": rows}


def motif_label(graph: Any, row: dict[str, Any]) -> str:
    """`conv2d 7×7` for a single layer (with its kernel: the stem and a 1×1 projection differ), else
    `relu-conv2d-add block (7 ops)` from the first instance's operations in order."""
    nodes = [graph.nodes[i] for i in range(row["first"], row["first"] + row["size"])]
    if len(nodes) == 1:
        kernel = nodes[0].attrs.get("kernel")
        return nodes[0].op + (" " + "×".join(map(str, kernel)) if isinstance(kernel, list) else "")
    ops = list(dict.fromkeys(n.op for n in nodes))
    return "-".join(ops[:3]) + ("…" if len(ops) > 3 else "") + f" block ({len(nodes)} ops)"


def similar(entry: Entry, k: int = 10) -> Any:
    from narcli.search.similar import find_similar

    return find_similar(entry.target, k)[0]


def predictions(entry: Entry) -> list:
    from narcli.search.predictions import predictions_for

    return predictions_for(entry.target)[0].rows


def compare(a: Entry, b: Entry) -> Any:
    from narcli.search.compare import compare as compare_targets

    return compare_targets(a.target, b.target)


# -- exports ----------------------------------------------------------------------------------------
def export_graph(entry: Entry, folder: Path) -> list[Path]:
    """Write the entry's canonical graph as JSON and DOT into `folder`; returns the paths."""
    return write_graph(graph_of(entry), entry.name, folder)


def export_similar(result: Any, folder: Path, stem: str) -> list[Path]:
    """Write a similar table as CSV and JSON into `folder`; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [n.to_json() for n in result.neighbours]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["rank", "name", "family", "cosine", "params", "macs"])
    for i, row in enumerate(rows, 1):
        writer.writerow([i, row.get("name"), row.get("family"), row.get("cosine"), row.get("params"), row.get("macs")])
    as_csv, as_json = folder / f"{safe_stem(stem)}.similar.csv", folder / f"{safe_stem(stem)}.similar.json"
    write_text(as_csv, buffer.getvalue())
    write_text(as_json, json.dumps(result.to_json(), indent=2) + "\n")
    return [as_csv, as_json]


def scan_request(request: dict) -> list[Any] | str:
    """What the scan dialog names, as the command line resolves it: the records of a model file or
    folder (scanned, cached), of a cached scan, or a zoo model's id (to open its row)."""
    from narcli.scan.targets import CachedName, ModelFile, ModelFolder, ZooName, cannot, resolve_target

    target = resolve_target(str(request["path"]).strip(), scan_options(request))
    match target:
        case ModelFile(path=path, options=options) | ModelFolder(path=path, options=options):
            from narcli.scan.scanner import scan_file

            records, _ = scan_file(path, options)
            return records
        case CachedName(name=name):
            from narcli.scan.cache import Cache
            from narcli.scan.targets import find_cached_record

            return [find_cached_record(name, Cache())]
        case ZooName(text=name):
            from narcli.zoo.store import Zoo

            with Zoo() as zoo:
                return zoo.resolve(name).id
    raise cannot("tui", target, "the browser opens one model: name a model file or folder, a zoo name or cache:NAME")


def scan_options(request: dict) -> Any:
    """The scan dialog's answers as `ScanOptions`: --model, one input shape and its dtype."""
    from narcli.scan.scanner import ScanOptions

    return ScanOptions(model=request.get("model"), input_shapes=[request["shape"]] if request.get("shape") else None,
                       input_dtypes=[request["dtype"]] if request.get("dtype") else None)


def predictions_view(rows: list, family: Any, name: str = "") -> Any:
    """The Predictions tab: the model's name, the family line, a table of the predictions that
    apply, and in plain words why the others do not (a Rich renderable)."""
    from rich.console import Group
    from rich.table import Table

    from narcli.search.predictions import format_interval, format_value, latency_notes, short_label
    from narcli.search.text import prediction_line

    grid = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("target", "device", "value", "90 % interval"):
        grid.add_column(column, justify="right" if column != "target" and column != "device" else "left")
    reasons = []
    for row in rows:
        if row.status == "ok":
            measured = row.head == "measured"
            grid.add_row(short_label(row), row.target.device or "—", format_value(row) + (" measured" * measured),
                         format_interval(row) + (" (IQR)" * measured))
        else:  # which predictor, and why it does not answer for this model
            reasons.append(f"• {row.title}" + (", out of range" if row.status == "out of range" else "")
                           + f": {row.reason}")
    parts: list[Any] = [shown(name, "bold")] if name else []
    parts += [prediction_line(family) if family is not None else "family: loading…", ""]
    parts.append(grid if grid.row_count else "No accuracy or latency prediction applies to this model.")
    # as `nar predict` says it: the reference CPU is not this machine, the reference GPU not yours
    for note in latency_notes(rows):
        parts += ["", shown(note[0].upper() + note[1:] + ".", "yellow")]
    if reasons:
        parts += ["", "Not predicted:" if grid.row_count else "Why not:"]
        parts += [shown(reason) for reason in dict.fromkeys(reasons)]
    return Group(*parts)
