"""What a checkpoint holds — tensor names, shapes and dtypes — read without its weights and without
running any code stored in it.

`.safetensors` files are read with the standard library (an 8-byte length, then a JSON header);
`.pt` / `.pth` / `.bin` / `.ckpt` only through `torch.load(weights_only=True, mmap=True)`, which
refuses pickled objects other than tensors and containers, so a malicious pickle cannot run.
The same names are computed for a built model (`module_signature`), which is how the zoo's
signatures are made.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narcli.errors import LoadError, shorten
from narcli.fsutil import atomic_writer

SAFETENSORS_SUFFIXES = {".safetensors"}
TORCH_SUFFIXES = {".pt", ".pth", ".bin", ".ckpt"}
CHECKPOINT_SUFFIXES = SAFETENSORS_SUFFIXES | TORCH_SUFFIXES
CODE_SUFFIXES = {".py", ".onnx", ".pt2"}  # a folder with these is a project to scan, not a checkpoint
MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header
# keys under which training scripts nest the weights, most specific first; EMA copies come after
# the live weights (the two have the same names and shapes)
NESTED_KEYS = ("state_dict", "model_state_dict", "model_state", "model", "module", "net", "network",
               "state_dict_ema", "model_ema", "ema_state_dict", "ema")
# leading name components that wrap a model without changing it (DataParallel, torch.compile,
# Lightning's `model.`, EMA copies); dropped from names before matching, on both sides
WRAPPERS = {"module", "_orig_mod", "model", "ema", "model_ema", "ema_model", "module_ema"}
IGNORED_SUFFIXES = ("num_batches_tracked",)

Shape = tuple[int, ...]


@dataclass
class Checkpoint:
    """The tensors of a checkpoint (name -> shape, dtype), as stored."""

    path: Path
    format: str  # "safetensors" or "torch"
    tensors: dict[str, tuple[Shape, str]]
    files: int = 1
    nested_key: str | None = None  # the entry of a training checkpoint the weights came from
    ignored: list[str] = field(default_factory=list)  # other top-level entries (optimizer, epoch, ...)

    def shapes(self) -> dict[str, Shape]:
        return {name: shape for name, (shape, _) in self.tensors.items()}

    def dtypes(self) -> dict[str, int]:
        """Tensors per dtype, the commonest first."""
        counts: dict[str, int] = {}
        for _, dtype in self.tensors.values():
            counts[dtype] = counts.get(dtype, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def numel(self) -> int:
        total = 0
        for shape, _ in self.tensors.values():
            n = 1
            for d in shape:
                n *= d
            total += n
        return total


def is_checkpoint_path(path: Path) -> bool:
    """A checkpoint file, or a folder of checkpoint shards with no model config and no model code."""
    if path.is_file():
        return path.suffix.lower() in CHECKPOINT_SUFFIXES
    if path.is_dir() and not (path / "config.json").exists():
        suffixes = {p.suffix.lower() for p in path.iterdir() if p.is_file()}
        return bool(suffixes & CHECKPOINT_SUFFIXES) and not suffixes & CODE_SUFFIXES
    return False


def read_checkpoint(path: Path) -> Checkpoint:
    """The tensors of a checkpoint file, or of every shard in a folder; LoadError for anything else."""
    path = Path(path)
    if not path.exists():
        raise LoadError(f"{path}: no such file or directory")
    if path.is_dir():
        return _read_folder(path)
    suffix = path.suffix.lower()
    if suffix in SAFETENSORS_SUFFIXES:
        return Checkpoint(path, "safetensors", read_safetensors_header(path))
    if suffix in TORCH_SUFFIXES:
        return _read_torch(path)
    raise LoadError(f"{path}: not a checkpoint (expected {', '.join(sorted(CHECKPOINT_SUFFIXES))})")


def _read_folder(folder: Path) -> Checkpoint:
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in CHECKPOINT_SUFFIXES)
    safetensors = [p for p in files if p.suffix.lower() in SAFETENSORS_SUFFIXES]
    shards = safetensors or files  # a folder with both holds the same weights twice: the safe format wins
    if not shards:
        raise LoadError(f"{folder}: neither a model config (config.json) nor checkpoint files "
                        f"({', '.join(sorted(CHECKPOINT_SUFFIXES))}) in it")
    tensors: dict[str, tuple[Shape, str]] = {}
    fmt = "safetensors" if safetensors else "torch"
    for shard in shards:
        part = read_checkpoint(shard)
        tensors.update(part.tensors)
    return Checkpoint(folder, fmt, tensors, files=len(shards))


# bits per element of each safetensors dtype: the data a tensor's offsets span must be exactly its size
DTYPE_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16,
              "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
              "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}


def read_safetensors_header(path: Path) -> dict[str, tuple[Shape, str]]:
    """name -> (shape, dtype) from a safetensors file's header; the weights are never read. A header
    that could not describe the file is refused: negative or non-integer dimensions, data offsets
    past the end of the file, overlapping another tensor's, or not the size dtype × shape needs."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise LoadError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER or 8 + length > size:
            raise LoadError(f"{path}: truncated or not a safetensors file (header of {length:,} bytes, "
                            f"file of {size:,})")
        raw = f.read(length)
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise LoadError(f"{path}: corrupt safetensors header (not JSON)") from None
    except RecursionError:  # nesting thousands deep: no header is, and it must not crash a whole scan
        raise LoadError(f"{path}: corrupt safetensors header (JSON nested too deep)") from None
    if not isinstance(header, dict):
        raise LoadError(f"{path}: corrupt safetensors header (not a JSON object)")
    tensors, spans = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or not isinstance(info.get("shape"), list):
            raise LoadError(f"{path}: corrupt safetensors header (entry {name!r} has no shape)")
        shape, dtype = info["shape"], str(info.get("dtype", "?"))
        if not all(type(d) is int and d >= 0 for d in shape):
            raise LoadError(f"{path}: corrupt safetensors header (entry {name!r} has shape {shorten(shape)}: "
                            "dimensions are whole numbers, 0 or more)")
        spans.append((_data_span(path, name, info, shape, dtype, size - 8 - length), name))
        tensors[name] = (tuple(shape), dtype)
    spans.sort()
    for ((_, end), before), ((start, _), after) in zip(spans, spans[1:]):
        if start < end:
            raise LoadError(f"{path}: corrupt safetensors header (the data of {before!r} and {after!r} overlap)")
    return tensors


def _data_span(path: Path, name: str, info: dict, shape: list[int], dtype: str, data_bytes: int) -> tuple[int, int]:
    """The checked [start, end) of one tensor's data, relative to the end of the header."""
    offsets = info.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise LoadError(f"{path}: corrupt safetensors header (entry {name!r} has data offsets "
                        f"{shorten(offsets)}, not [start, end])")
    start, end = offsets
    if end > data_bytes:
        raise LoadError(f"{path}: corrupt safetensors header (the data of {name!r} ends at byte {end:,}, past "
                        f"the {data_bytes:,} bytes of data the file holds)")
    if dtype in DTYPE_BITS:
        count = 1
        for d in shape:
            count *= d
        if (count * DTYPE_BITS[dtype] + 7) // 8 != end - start:
            raise LoadError(f"{path}: corrupt safetensors header (entry {name!r}: {end - start:,} bytes of data "
                            f"for {count:,} {dtype} values)")
    return start, end


def _read_torch(path: Path) -> Checkpoint:
    import pickle
    import warnings

    import torch

    if path.stat().st_size == 0:
        raise LoadError(f"{path}: file is empty")
    try:
        warnings.filterwarnings("ignore", module="torch.serialization")
        warnings.filterwarnings("ignore", message=".*weights_only Unpickler.*")
        try:
            data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap" not in str(exc):
                raise
            data = torch.load(path, map_location="cpu", weights_only=True)  # the legacy format cannot be mapped
    except pickle.UnpicklingError as exc:
        found = _refused_global(str(exc))
        if found is None:  # not an object refused: a pickle torch.save did not write, or garbage
            raise LoadError(f"{path}: not a readable PyTorch checkpoint (the safe loader cannot read it)") from None
        raise LoadError(f"{path}: refused: it stores Python objects ({found}) that only full unpickling, which can run code, "
                        f"would read; nar reads tensors only (save a state_dict, or convert to safetensors)") from None
    except Exception as exc:  # garbage fails in torch's loaders in many ways (struct.error, KeyError, ...)
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        raise LoadError(f"{path}: not a readable PyTorch checkpoint ({first})") from None
    tensors, nested, ignored = _state_dict_of(data, path)
    return Checkpoint(path, "torch", tensors, nested_key=nested, ignored=ignored)


def _refused_global(message: str) -> str | None:
    import re

    found = re.search(r"GLOBAL ([\w.]+)", message) or re.search(r"Unsupported global: ([\w. ]+)", message)
    return found.group(1).strip() if found else None


def _state_dict_of(data: Any, path: Path) -> tuple[dict[str, tuple[Shape, str]], str | None, list[str]]:
    import torch

    def tensors_in(value: Any, prefix: str = "") -> dict[str, tuple[Shape, str]]:
        out: dict[str, tuple[Shape, str]] = {}
        if isinstance(value, torch.Tensor):
            out[prefix.rstrip(".")] = (tuple(value.shape), str(value.dtype).removeprefix("torch."))
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str):
                    out.update(tensors_in(item, f"{prefix}{key}."))
        return out

    if not isinstance(data, dict):
        raise LoadError(f"{path}: holds a {type(data).__name__}, not a dict of tensors (a state_dict)")
    nested = next((k for k in NESTED_KEYS if isinstance(data.get(k), dict) and tensors_in(data[k])), None)
    if nested is not None:
        ignored = sorted(str(k) for k in data if k != nested)
        tensors = tensors_in(data[nested])
    else:
        ignored = sorted(str(k) for k, v in data.items() if not isinstance(v, (torch.Tensor, dict)))
        tensors = tensors_in(data)
    if not tensors:
        raise LoadError(f"{path}: holds no tensors")
    return tensors, nested, ignored


def module_signature(module: Any) -> list[tuple[str, Shape]]:
    """(name, shape) of every tensor a checkpoint of `module` holds, in state_dict order: the state
    dict without `num_batches_tracked` and without the second name of a tied weight (Hugging Face
    saves an `lm_head` tied to the embeddings once)."""
    seen: set[int] = set()
    out = []
    state = module.state_dict(keep_vars=True)
    for name, tensor in state.items():
        if name.endswith(IGNORED_SUFFIXES):
            continue
        if id(tensor) in seen:
            continue
        seen.add(id(tensor))
        out.append((name, tuple(int(d) for d in tensor.shape)))
    return out


def write_safetensors_header(path: Path, shapes: dict[str, Shape] | list[tuple[str, Shape]]) -> Path:
    """A float32 safetensors file with these tensors whose data is a hole (a sparse file): a real
    header at no disk cost, for tests and benchmarks of checkpoint reading."""
    header, offset = {}, 0
    for name, shape in (shapes.items() if isinstance(shapes, dict) else shapes):
        size = 4
        for d in shape:
            size *= d
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    with atomic_writer(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little") + raw)
        if offset:
            f.seek(offset - 1, 1)
            f.write(b"\0")
    return Path(path)


def canonical_name(name: str) -> str:
    """`module.model.layer1.0.conv1.weight` -> `layer1.0.conv1.weight`: wrapper components dropped."""
    parts = name.split(".")
    start = 0
    while start < len(parts) - 1 and parts[start] in WRAPPERS:
        start += 1
    return ".".join(parts[start:])


def canonical_shapes(shapes: dict[str, Shape] | list[tuple[str, Shape]]) -> dict[str, Shape]:
    """Names made canonical (the first of several equal names wins, so an EMA copy folds into the
    live weights), `num_batches_tracked` dropped."""
    items = shapes.items() if isinstance(shapes, dict) else shapes
    out: dict[str, Shape] = {}
    for name, shape in items:
        if name.endswith(IGNORED_SUFFIXES):
            continue
        out.setdefault(canonical_name(name), tuple(shape))
    return out
