"""`scan`: turn a model file (or every model file under a directory) into cached model records."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from narcli import IR_VERSION
from narcli.errors import LoadError, NarError, TraceError, UsageError, shorten
from narcli.scan.cache import Cache, ModelRecord
from narcli.scan.fingerprint import file_fingerprint
from narcli.trace.inputs import InputSpec, describe, parse_inputs, token_ids_hint

KINDS = {".py": "py", ".onnx": "onnx", ".pt2": "pt2"}
# Refused by size before anything is read: no model's source is this long, and protobuf caps a
# single-file ONNX model at 2 GiB (larger ones keep their weights as external data). A .pt2 has no
# cap: only its program is read (bounded in pt2_archive), never its weights.
MAX_BYTES = {"py": 32 << 20, "onnx": 2 << 30}


def looks_like_a_name(text: str) -> bool:
    """Whether `text` names a zoo model rather than a file (no model-file suffix, not a path)."""
    return Path(text).suffix.lower() not in KINDS and not text.startswith((".", "/", "~"))
TOP_OPS = 8

# work done on the traced graphs where they were traced: graphs -> one note per graph
Annotate = Callable[[list[Any]], list[Any]]


MAX_TIMEOUT = 86_400.0  # a day: longer is a typo, and nan or inf would never end


@dataclass
class ScanOptions:
    """How to scan a model file: which model in it, its example inputs, how long to allow. Checked
    here, so Python callers get the same one-line errors as the command line."""

    model: str | None = None
    input_shapes: list[str] | None = None
    input_dtypes: list[str] | None = None
    timeout: float = 120.0
    use_cache: bool = True
    # a file named without inputs reuses its newest scan (`_remembered_scan`); commands that must see
    # every model a file defines as it is named (`nar check`, a directory scan) turn it off
    remember: bool = True

    def __post_init__(self) -> None:
        check_timeout(self.timeout)
        if self.model is not None and not self.model.strip():
            raise UsageError("--model is empty; name a class or factory in the file, e.g. 'resnet(depth=18)'")


def check_timeout(timeout: float) -> None:
    """A usage error unless 0 < timeout <= one day (nan, inf and 1e300 included)."""
    if not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT:
        raise UsageError(f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:,.0f}, "
                         f"not {timeout!r}")


def _graph_payload(graph: Any, name: str, tracer: str, inputs: list[InputSpec], assumed: str | None) -> dict:
    return {"name": name, "tracer": tracer, "inputs": [s.to_json() for s in inputs],
            "assumed": assumed, "graph": graph.to_dict()}


def _annotate_payloads(payloads: list[dict], graphs: list[Any], annotate: Annotate | None) -> list[dict]:
    """Attach `annotate(graphs)` to the payloads, each its own note; a failure leaves no note (the
    caller then does that work itself, and reports its errors)."""
    if annotate is not None:
        try:
            notes = annotate(graphs)
        except Exception:  # noqa: BLE001 - the scan itself succeeded; the note is only a head start
            notes = [None] * len(payloads)
        for payload, note in zip(payloads, notes):
            payload["note"] = note
    return payloads


def trace_python_file(path: Path, spec: str | None, inputs: list[InputSpec] | None,
                      annotate: Annotate | None = None) -> list[dict]:
    """Build every model of a `.py` file on the meta device and trace it (runs in the child)."""
    from narcli.graph.canonical import build_graph
    from narcli.trace.compat import ensure_torchvision_importable
    from narcli.trace.loader import build_models

    ensure_torchvision_importable()  # user files import torchvision, timm, transformers too
    from narcli.trace.input_search import forward_failed, meta_tensors, trace_guessing_inputs
    from narcli.trace.image_size import classifier_outputs, small_image_respec
    from narcli.trace.inputs import example_inputs
    from narcli.trace.torch_tracer import trace_module

    examples = example_inputs(path.read_text(errors="replace")) if inputs is None else []
    out, graphs = [], []
    for name, model in build_models(path, spec):
        if inputs is not None:
            specs, assumed, ran_first = inputs, None, False
            try:
                raw, tracer = trace_module(model, meta_tensors(specs))
            except TraceError as exc:
                raise forward_failed(name, specs, exc, guessed=False) from None
        else:
            raw, tracer, specs, assumed, ran_first = trace_guessing_inputs(name, model, trace_module, examples)
        meta = {"source": str(path), "tracer": tracer, "model": name}
        graph = build_graph(raw, meta | {"inputs": [s.to_json() for s in specs]})
        small = small_image_respec(specs, assumed, ran_first, **graph.image_signs()) if inputs is None else None
        if small:  # a design for small images guessed at 224 px: its MACs and latency are those of its size
            try:
                small_raw, small_tracer = trace_module(model, meta_tensors(small[0]))
            except TraceError:
                small_raw = None  # it runs at 224 px and not at the smaller size: keep what ran
            if small_raw is not None:
                small_graph = build_graph(small_raw, meta | {"tracer": small_tracer,
                                                             "inputs": [s.to_json() for s in small[0]]})
                if classifier_outputs(small_graph.image_signs()["outputs"], small[0][0].shape[0]):
                    (specs, assumed), tracer, graph = small, small_tracer, small_graph
        out.append(_graph_payload(graph, name, tracer, specs, assumed))
        graphs.append(graph)
    return _annotate_payloads(out, graphs, annotate)


def trace_model_folder(path: Path, inputs: list[InputSpec] | None, annotate: Annotate | None = None) -> list[dict]:
    """Build a transformers / timm model folder's model from its config.json on meta and trace it
    (runs in the child)."""
    import torch

    from narcli.graph.canonical import build_graph
    from narcli.trace.model_folders import build_folder_model
    from narcli.trace.torch_tracer import trace_module

    name, module, tensors, names = build_folder_model(path)
    specs = [InputSpec(tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in tensors]
    if inputs is not None:
        specs = inputs
        tensors = [torch.empty(s.shape, dtype=getattr(torch, s.dtype), device="meta") for s in specs]
    try:
        raw, tracer = trace_module(module, tensors)
    except TraceError as exc:
        cause = exc.__cause__ or exc
        text = str(cause).splitlines()[0][:200] if str(cause) else ""
        raise TraceError(f"{path.name} ({name}): forward failed on input {describe(specs)}: "
                         f"{type(cause).__name__}: {text}{token_ids_hint(text, specs)}") from None
    graph = build_graph(raw, {"source": str(path), "tracer": tracer, "model": name,
                              "inputs": [s.to_json() for s in specs]})
    return _annotate_payloads([_graph_payload(graph, name, tracer, specs, None)], [graph], annotate)


def _whole_file_payload(raw: Any, path: Path, tracer: str, annotate: Annotate | None) -> list[dict]:
    """Payload of a file that holds exactly one graph (`.pt2`, `.onnx`), named after the file."""
    from narcli.graph.canonical import build_graph

    specs = [InputSpec(tuple(s or ()), raw.input_dtypes.get(name, "float32")) for name, s in raw.inputs]
    graph = build_graph(raw, {"source": str(path), "tracer": tracer, "model": path.stem,
                              "inputs": [s.to_json() for s in specs]})
    return _annotate_payloads([_graph_payload(graph, path.stem, tracer, specs, None)], [graph], annotate)


def trace_exported_program(path: Path, annotate: Annotate | None = None) -> list[dict]:
    """Trace a `.pt2` archive written by `torch.export.save`, read without unpickling (runs in the child)."""
    from narcli.trace.pt2_archive import load_exported_program
    from narcli.trace.torch_tracer import raw_from_program

    return _whole_file_payload(raw_from_program(load_exported_program(path)), path, "export", annotate)


def trace_onnx_file(path: Path, annotate: Annotate | None = None) -> list[dict]:
    from narcli.trace.onnx_tracer import load_onnx, trace_onnx

    model = load_onnx(path)
    try:
        raw = trace_onnx(model)
    except NarError as exc:  # a refusal that names what is wrong: the file's path, then the reason
        raise type(exc)(f"{path}: {exc}") from None
    except Exception as exc:  # a damaged file can break the reader anywhere; say so in one line
        raise TraceError(f"{path}: the ONNX graph could not be read ({type(exc).__name__}: {exc})"[:300]) from None
    payloads = _whole_file_payload(raw, path, "onnx", annotate)
    if not payloads[0]["graph"].get("nodes"):
        raise TraceError(f"{path}: no operator of the ONNX graph reaches its outputs (a damaged file?)")
    return payloads


# -- the library entry points ---------------------------------------------------------------------
def cache_key(path: Path, kind: str, options: ScanOptions, inputs: list[InputSpec] | None,
              fingerprint: str | None = None) -> str:
    if kind == "folder":  # the config and the library that builds from it decide the model
        from narcli.trace.model_folders import CONFIG, folder_kind, library_version

        library = folder_kind(path)
        fingerprint = hashlib.sha256((path / CONFIG).read_bytes()).hexdigest() + f" {library} {library_version(library)}"
    else:
        fingerprint = fingerprint or file_fingerprint(path)
    parts = {"file": fingerprint, "kind": kind, "model": (options.model or "").strip(),
             "inputs": [s.to_json() for s in inputs] if inputs else None, "ir": IR_VERSION}
    if kind == "py" and not inputs:  # how inputs are guessed decides the graph too
        from narcli.trace.inputs import GUESS_VERSION

        parts["guess"] = GUESS_VERSION
    if kind != "onnx":
        parts["torch"] = _torch_version()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _torch_version() -> str:
    """Installed torch version without importing torch (it is part of every PyTorch cache key)."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return "none"
    # torch/version.py is a two-line file; reading it is ~40x faster than importlib.metadata
    version_file = Path(spec.origin).with_name("version.py")
    try:
        found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", version_file.read_text())
    except OSError:
        found = None
    if found:
        return found.group(1)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "unknown"


def check_target_text(text: str) -> None:
    """Refuse what no command can take as a model: an empty name, a NUL byte, a path the operating
    system rejects (too long, say). Missing files are left to the caller (they may be zoo names)."""
    if not text.strip():
        raise UsageError("empty model name or path: name a model file, a folder or a zoo model")
    if "\0" in text:
        raise UsageError("a model name or path cannot contain a NUL character")
    try:
        os.stat(text)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        raise LoadError(f"{shorten(text)}: {exc.strerror or exc}") from None


def _check_file(path: Path) -> str:
    if not path.exists():
        raise LoadError(f"{path}: no such file or directory")
    from narcli.trace.model_folders import is_model_folder

    if is_model_folder(path):
        return "folder"
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise LoadError(f"{path}: not a model file (expected .py, .onnx or .pt2, a checkpoint "
                        f"(.safetensors, .pt, .pth, .bin, .ckpt) or a model folder)")
    size = path.stat().st_size
    if size == 0:
        raise LoadError(f"{path}: file is empty")
    limit = MAX_BYTES.get(kind)
    if limit is not None and size > limit:
        why = ("no model's source code is that long" if kind == "py" else
               "a single-file ONNX model is at most 2 GiB (protobuf's limit); larger models keep weights as "
               "external data")
        shown = f"{size / (1 << 30):,.1f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):,.1f} MiB"
        raise LoadError(f"{path}: {shown} is too big for a .{kind} file nar reads (at most {limit >> 20:,} MiB: {why})")
    return kind


def scan_file(path: Path, options: ScanOptions | None = None, cache: Cache | None = None,
              want_graphs: bool = False) -> tuple[list[ModelRecord], list[Any]]:
    """Records (and, with `want_graphs`, ArchGraphs) of the models in one file.

    A cached scan of the unchanged file is returned without importing anything. Nothing is written
    to the cache unless the whole file scanned.
    """
    records, graphs, _ = scan_file_annotated(path, options, cache, want_graphs)
    return records, graphs


def scan_file_annotated(path: Path, options: ScanOptions | None = None, cache: Cache | None = None,
                        want_graphs: bool = False, annotate: Annotate | None = None,
                        ) -> tuple[list[ModelRecord], list[Any], list[Any]]:
    """`scan_file`, plus `annotate(graphs)` computed where the file is traced, one note per model.

    The tracing child has torch loaded already, so work that needs torch (embedding the graphs) costs
    no second import there. A cached scan, or a failed annotation, gives None notes. `annotate` must
    be a module-level function (it is sent to the child).
    """
    from narcli.trace.isolation import run_isolated

    options = options or ScanOptions()
    path = Path(path)
    kind = _check_file(path)
    inputs = parse_inputs(options.input_shapes, options.input_dtypes)
    if kind not in ("py", "folder") and (options.model or inputs):
        raise UsageError(f"{path}: --model and --input-shape apply to .py files only")
    if kind == "folder" and options.model:
        raise UsageError(f"{path}: a model folder builds the model its config.json names; drop --model")
    cache = cache or Cache()
    key = cache_key(path, kind, options, inputs)
    if options.use_cache:
        records = None
        if options.remember and not inputs and kind in ("py", "folder"):  # the newest scan, whatever its inputs
            records = _remembered_scan(path, kind, options, cache)
        records = records if records is not None else cache.lookup(key)
        if records is not None:
            # the key is the content: the same bytes under another name hit this entry, so show the
            # file that was asked for (and, for one-graph files, the model named after it)
            for record in records:
                record.source = os.path.abspath(path)  # absolute, through the links the user named
                if kind in ("onnx", "pt2"):
                    record.name = path.stem
            graphs = [cache.graph(r.graph_key) for r in records] if want_graphs else []
            return records, graphs, [None] * len(records)

    start = time.perf_counter()
    if kind == "onnx":
        payloads = trace_onnx_file(path, annotate)
    elif kind == "folder":
        payloads = run_isolated(trace_model_folder, (path, inputs, annotate), options.timeout,
                                f"building and tracing {path}")
    elif kind == "pt2":
        payloads = run_isolated(trace_exported_program, (path, annotate), options.timeout, f"loading {path}")
    else:
        payloads = run_isolated(trace_python_file, (path, options.model, inputs, annotate), options.timeout,
                                f"importing and tracing {path}")
    seconds = time.perf_counter() - start

    from narcli.graph.arch_graph import ArchGraph

    records, graphs = [], []
    for payload in payloads:
        graph = ArchGraph.from_dict(payload["graph"])
        records.append(ModelRecord(
            name=payload["name"], source=os.path.abspath(path), kind=kind, tracer=payload["tracer"],
            inputs=payload["inputs"], assumed=payload["assumed"], params=graph.params,
            macs=graph.macs, depth=graph.depth, nodes=graph.num_nodes, edges=len(graph.edges),
            graph_hash=graph.content_hash(), top_ops=graph.top_ops(TOP_OPS),
            seconds=round(seconds / max(len(payloads), 1), 3)))
        graphs.append(graph)
    if options.use_cache:
        cache.store(key, str(path.resolve()), records, graphs)
    return records, graphs, [payload.get("note") for payload in payloads]


def scan_is_current(record: ModelRecord) -> bool:
    """Whether the cached `record` is still what its file holds: the file (and the local modules it
    imports) unchanged since the scan, so a cache key made now is the one it was stored under."""
    path = Path(record.source)
    if not path.is_file() or not record.id:
        return False
    kind = path.suffix.lower().lstrip(".")
    inputs = None if record.assumed else [InputSpec.from_json(i) for i in record.inputs]
    stored = record.id.rpartition(":")[0]
    for model, given in ((None, inputs), (record.name, inputs), (None, None)):
        try:
            if cache_key(path, kind, ScanOptions(model=model), given) == stored:
                return True
        except OSError:
            return False
    return False


REMEMBERED_SCANS = 20  # the newest scans of a file looked at: older ones are history, not intent


def _remembered_scan(path: Path, kind: str, options: ScanOptions, cache: Cache) -> list[ModelRecord] | None:
    """The newest cached scan of this file, as it is now, with the inputs (and the `--model` class)
    it was made with: naming the file again without them means the model last scanned, not a fresh
    trace at the default size (which may not even run). A class named now (`--model Net`,
    `pkg.module:Net`) is found in the newest scan that holds it, a whole-file scan included."""
    from dataclasses import replace

    wanted = (options.model or "").strip()
    fingerprint = None if kind == "folder" else file_fingerprint(path)
    for records in cache.scans_at(str(path.resolve()))[:REMEMBERED_SCANS]:
        if not records or (wanted and wanted not in {r.name for r in records}):
            continue
        given = None if any(r.assumed for r in records) else [InputSpec.from_json(i) for i in records[0].inputs]
        # (options, inputs, the records to keep): made like this, or with `--model NAME` picked from
        # several classes, or as a whole-file scan that holds the class asked for now
        tries = [(options, given, None)]
        if not wanted and len(records) == 1:
            tries.append((replace(options, model=records[0].name), given, None))
        if wanted:
            tries.append((replace(options, model=None), given, wanted))
        for tried, inputs, keep in tries:
            found = cache.lookup(cache_key(path, kind, tried, inputs, fingerprint))
            if found is not None and keep is not None:
                found = [r for r in found if r.name == keep]
            if found:
                return found
    return None
