"""Example inputs: parsing `--input-shape` / `--input-dtype`, and guessing them from a model's first layer."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from narcli.errors import UsageError, shorten

DTYPES = {
    "float": "float32", "float32": "float32", "fp32": "float32",
    "half": "float16", "float16": "float16", "fp16": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16", "double": "float64", "float64": "float64",
    "long": "int64", "int64": "int64", "int": "int32", "int32": "int32", "bool": "bool",
}


# far beyond any real input, well inside what torch's int64 sizes can hold (even on meta)
MAX_INPUTS, MAX_RANK, MAX_DIM, MAX_ELEMENTS = 64, 8, 2**31 - 1, 2**50


@dataclass(frozen=True)
class InputSpec:
    shape: tuple[int, ...]
    dtype: str = "float32"

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InputSpec:
        return cls(tuple(int(s) for s in data["shape"]), data.get("dtype", "float32"))


def parse_inputs(shapes: list[str] | None, dtypes: list[str] | None) -> list[InputSpec] | None:
    """`["1,3,224,224"]`, `["long"]` -> input specs; None when no shape was given (infer them).

    One dtype applies to every input; otherwise give one per shape.
    """
    shapes, dtypes = list(shapes or []), list(dtypes or [])
    resolved = []
    for d in dtypes:
        if d.lower() not in DTYPES:
            raise UsageError(f"unknown input dtype {d!r}; use one of {', '.join(sorted(set(DTYPES)))}")
        resolved.append(DTYPES[d.lower()])
    if not shapes:
        if resolved:
            raise UsageError("--input-dtype needs --input-shape")
        return None
    if len(resolved) not in (0, 1, len(shapes)):
        raise UsageError(f"{len(shapes)} input shapes but {len(resolved)} dtypes: give one, or one per shape")
    if len(shapes) > MAX_INPUTS:
        raise UsageError(f"{len(shapes)} input shapes; nar takes at most {MAX_INPUTS}")
    specs = []
    for i, text in enumerate(shapes):
        shown = shorten(text, 60)
        parts = [p.strip() for p in re.split(r"[,x×]", text.strip())]
        if len(text) > 1000 or not all(re.fullmatch(r"[0-9]{1,19}", p) for p in parts):
            raise UsageError(f"bad input shape {shown!r}: expected comma-separated sizes like 1,3,224,224")
        dims = tuple(int(p) for p in parts)
        if any(d <= 0 for d in dims):
            raise UsageError(f"bad input shape {shown!r}: sizes must be positive integers")
        if len(dims) > MAX_RANK or max(dims) > MAX_DIM or math.prod(dims) > MAX_ELEMENTS:
            raise UsageError(f"bad input shape {shown!r}: at most {MAX_RANK} sizes, each at most {MAX_DIM:,}, "
                             f"and at most 2^50 elements in all")
        dtype = resolved[i] if len(resolved) == len(shapes) else (resolved[0] if resolved else "float32")
        specs.append(InputSpec(dims, dtype))
    return specs


def describe(specs: list[InputSpec]) -> str:
    return ", ".join(map(str, specs))


def guess_inputs(model: Any) -> tuple[list[InputSpec], str]:
    """Inputs for a model from its first layer with weights, and a sentence saying what was assumed."""
    for name, layer in model.named_modules():
        kind = type(layer).__name__
        if kind.startswith("Conv") and hasattr(layer, "in_channels"):
            rank = len(layer.kernel_size)
            size = {1: (1024,), 2: (224, 224), 3: (16, 112, 112)}[rank]
            spec = InputSpec((1, layer.in_channels, *size))
            what = {1: "signal", 2: "image", 3: "video"}[rank]
            return [spec], f"{what} (first layer {name or kind}: {kind}({layer.in_channels}, ...))"
        if kind in ("Embedding", "EmbeddingBag"):
            spec = InputSpec((1, 128), "int64")
            return [spec], f"token ids (first layer {name or kind}: Embedding({layer.num_embeddings}, ...))"
        if kind == "Linear":
            spec = InputSpec((1, layer.in_features))
            return [spec], f"vector (first layer {name or kind}: Linear({layer.in_features}, ...))"
        if kind in ("LSTM", "GRU", "RNN"):
            shape = (1, 32, layer.input_size) if layer.batch_first else (32, 1, layer.input_size)
            spec = InputSpec(shape)
            return [spec], f"sequence (first layer {name or kind}: {kind}({layer.input_size}, ...))"
    raise UsageError("cannot guess the model's input from its layers; pass --input-shape")
