"""Read a `.pt2` archive (`torch.export.save`) for its graph, without running anything in it.

`torch.export.load` is unsafe on untrusted files: it unpickles the sample inputs (falling back to
`weights_only=False`), weights marked `use_pickle` and custom objects, and it hands the symbolic
shape expressions to `sympy.sympify`, which evaluates them. We need only the graph and its tensor
shapes, so this reader

- opens the zip with the standard library and parses the serialized program (JSON) only;
- never reads a weight, constant or sample-input record: every parameter, buffer and constant is
  made an empty `meta` tensor from the shape the graph itself records;
- checks every symbolic expression against a small grammar (numbers, operators, shape symbols and
  sympy's shape functions: no attribute access, no strings, no other names) before torch sees it;
- refuses, with one line, what cannot be read that way (custom TorchScript objects, archives of
  the pre-2.8 layout, which keep the program itself beside pickles, more than one program).
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

from narcli.errors import LoadError

# The serialized program is JSON, and torch.export.save stores it uncompressed: 0.67 MB for a
# 12-layer transformer encoder, so 64 MB holds a network of about a thousand such layers. Anything
# larger is not a model we should parse (json.loads needs several times the text in memory).
MAX_PROGRAM_BYTES = 64 << 20
# Compressed JSON deflates about 30:1; a zip bomb about 1000:1. The ratio is checked as it inflates.
MAX_RATIO = 200
_CHUNK = 1 << 20

# tokens of an expression: a number, a name, a quoted shape symbol or number, an operator
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)"
                    r"|('(?:[a-z]{1,3}\d+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')"
                    r"|(\*\*|//|==|!=|<=|>=|[-+*/%(),<>~&|=]))")
# shape symbols (s0, u12, ...), and the names torch's deserializer knows and sympy's `srepr` writes
# (`Mul(Integer(2), Symbol('s77', positive=True, integer=True))`)
_SYMBOL = re.compile(r"[a-z]{1,3}\d+")
_FUNCTIONS = frozenset("""
    FloorDiv ModularIndexing Where PythonMod Mod CleanDiv CeilToInt FloorToInt CeilDiv LShift RShift
    PowByNatural FloatPow FloatTrueDiv IntTrueDiv IsNonOverlappingAndDenseIndicator TruncToFloat
    TruncToInt RoundToInt RoundDecimal ToFloat Identity Max Min Abs Eq Ne Lt Le Gt Ge And Or Not
    floor ceiling oo zoo nan True False Integer Rational Float sqrt Symbol Add Mul Pow Piecewise
    ExprCondPair Infinity NegativeInfinity One Zero NegativeOne Half BooleanTrue BooleanFalse
    positive negative nonnegative nonpositive integer real finite nonzero even odd
""".split())
_UNARY_FAMILIES = re.compile(r"(OpaqueUnaryFn|BitwiseFn)_[a-z]+(_[a-z]+)*")


def _check_expression(text: Any, path: Path) -> None:
    """Raise unless `text` is a plain arithmetic shape expression (it is later passed to `eval`)."""
    if not isinstance(text, str) or len(text) > 10_000:
        raise LoadError(f"{path}: refused: a symbolic shape in the archive is not a plain expression")
    position = 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise LoadError(f"{path}: refused: symbolic shape {text[:60]!r} is not a plain expression")
        name = match.group(2)
        if name is not None and not (_SYMBOL.fullmatch(name) or name in _FUNCTIONS
                                     or _UNARY_FAMILIES.fullmatch(name)):
            raise LoadError(f"{path}: refused: symbolic shape {text[:60]!r} names {name!r}, "
                            "which is not a shape symbol or function")
        position = match.end()


def _check_expressions(value: Any, path: Path) -> None:
    """Check every `expr_str` of the serialized program, wherever it sits."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if key == "expr_str":
                    _check_expression(child, path)
                else:
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def _program_record(archive: zipfile.ZipFile, path: Path) -> str:
    names = archive.namelist()
    if any(n.rsplit("/", 1)[-1] == "serialized_exported_program.json" for n in names):
        raise LoadError(f"{path}: refused: this archive has the pre-2.8 torch.export layout, whose weights "
                        "and inputs are pickles; re-save it with torch.export.save on torch 2.8 or newer")
    programs = [n for n in names if re.fullmatch(r"(?:[^/]+/)?models/[^/]+\.json", n)]
    if not programs:
        raise LoadError(f"{path}: not a torch.export archive (no models/*.json in it)")
    named = [n for n in programs if n.endswith("/model.json") or n == "models/model.json"]
    if len(programs) > 1 and not named:
        raise LoadError(f"{path}: the archive holds {len(programs)} programs; nar reads one")
    return (named or programs)[0]


def _meta_tensor(meta: dict, name: str, path: Path) -> Any:
    import torch
    from torch._export.serde.serialize import deserialize_scalar_type

    try:
        sizes = [int(s["as_int"]) for s in meta["sizes"]]
        dtype = deserialize_scalar_type(meta["dtype"])
    except (KeyError, TypeError, ValueError) as exc:
        raise LoadError(f"{path}: {name!r} has no concrete shape in the archive ({type(exc).__name__})") from None
    if any(s < 0 or s >= 1 << 62 for s in sizes):
        raise LoadError(f"{path}: {name!r} has an impossible shape {sizes}")
    return torch.empty(sizes, dtype=dtype, device="meta")


def _tensors(program: dict, path: Path) -> tuple[dict, dict]:
    """The state dict and constants the program's signature names, as meta tensors of its shapes."""
    import torch

    graph = program["graph_module"]["graph"]
    values = graph.get("tensor_values", {})
    state_dict: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    for spec in graph_signature_inputs(program):
        kind, body = next(iter(spec.items()))
        if kind in ("user_input", "token"):
            continue
        if kind == "custom_obj":
            raise LoadError(f"{path}: refused: the archive holds a TorchScript object, which only unpickling "
                            "can read")
        arg_name = body.get("arg", {}).get("name")
        if arg_name not in values:
            raise LoadError(f"{path}: input {arg_name!r} of the program has no recorded shape")
        tensor = _meta_tensor(values[arg_name], arg_name, path)
        if kind == "parameter":
            state_dict[body["parameter_name"]] = torch.nn.Parameter(tensor, requires_grad=False)
        elif kind == "buffer":
            (state_dict if body.get("persistent", True) else constants)[body["buffer_name"]] = tensor
        elif kind == "tensor_constant":
            constants[body["tensor_constant_name"]] = tensor
        else:
            raise LoadError(f"{path}: the program has an input of kind {kind!r}, which nar cannot read")
    return state_dict, constants


def graph_signature_inputs(program: dict) -> list[dict]:
    return program["graph_module"]["signature"]["input_specs"]


def _read_bounded(archive: zipfile.ZipFile, record: str, path: Path) -> bytes:
    """The record's bytes, inflated a megabyte at a time: refused as soon as they pass
    MAX_PROGRAM_BYTES or MAX_RATIO times what they were compressed to, whatever the header claims."""
    info = archive.getinfo(record)
    limit = MAX_PROGRAM_BYTES >> 20
    if info.file_size > MAX_PROGRAM_BYTES:
        raise LoadError(f"{path}: the serialized program is larger than {limit} MB; nar reads programs up to that")
    compressed = max(info.compress_size, 1)
    chunks, total = [], 0
    with archive.open(info) as stream:
        while block := stream.read(_CHUNK):
            total += len(block)
            if total > MAX_PROGRAM_BYTES:
                raise LoadError(f"{path}: the serialized program inflates past {limit} MB (its header said "
                                f"{info.file_size:,} bytes): refused")
            if info.compress_type != zipfile.ZIP_STORED and total > _CHUNK and total > MAX_RATIO * compressed:
                raise LoadError(f"{path}: the serialized program inflates more than {MAX_RATIO}:1 "
                                f"({compressed:,} compressed bytes), as a zip bomb does: refused")
            chunks.append(block)
    return b"".join(chunks)


def program_bytes(path: Path) -> bytes:
    """The serialized program of the archive at `path` (bounded, see `_read_bounded`); LoadError
    when it is not a readable torch.export archive. Standard library only: the scan parent uses it
    for the cache key."""
    try:
        with zipfile.ZipFile(path) as archive:
            record = _program_record(archive, path)
            return _read_bounded(archive, record, path)
    except LoadError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as exc:
        raise LoadError(f"{path}: not a readable torch.export archive ({type(exc).__name__}: {exc})") from None


def load_exported_program(path: Path) -> Any:
    """The `ExportedProgram` in `path`, with meta tensors for its weights; see the module docstring."""
    text = program_bytes(path)
    try:
        program = json.loads(text)
        _check_expressions(program, path)
        state_dict, constants = _tensors(program, path)
    except LoadError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, StopIteration, RecursionError) as exc:
        raise LoadError(f"{path}: the archive's program is not valid ({type(exc).__name__}: {exc})") from None
    return _deserialize(text, state_dict, constants, path)


def _deserialize(text: bytes, state_dict: dict, constants: dict, path: Path) -> Any:
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _bytes_to_dataclass

    try:
        serialized = _bytes_to_dataclass(schema.ExportedProgram, text)
        return ExportedProgramDeserializer().deserialize(serialized, state_dict, constants, ((), {}))
    except LoadError:
        raise
    except Exception as exc:  # the deserializer's errors are many and undocumented
        first = str(exc).strip().splitlines()
        raise LoadError(f"{path}: not a readable torch.export archive ({type(exc).__name__}: "
                        f"{first[0][:200] if first else ''})") from None
