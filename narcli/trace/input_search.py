"""Tracing with example inputs: the ones given, or a search over the sizes a model's layers suggest.

Runs in the tracing child (imports torch lazily, like every tracer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from narcli.errors import LoadError, TraceError, UsageError
from narcli.trace.image_size import channels_wrong, other_channels
from narcli.trace.inputs import (
    MAX_TRIES,
    ExampleInput,
    InputSpec,
    candidate_inputs,
    describe,
    features_mismatch,
    side_from_mismatch,
    side_from_two_mismatches,
    token_ids_hint,
)


def meta_tensors(specs: list[InputSpec]) -> list[Any]:
    import torch

    return [torch.empty(s.shape, dtype=getattr(torch, s.dtype), device="meta") for s in specs]


def forward_failed(name: str, specs: list[InputSpec], exc: TraceError, guessed: bool, tried: str = "") -> TraceError:
    which = "the assumed input" if guessed else "input"
    cause = exc.__cause__ or exc
    text = str(cause).splitlines()[0][:200] if str(cause) else ""
    hint = token_ids_hint(text, specs) or ("; pass --input-shape (and --input-dtype for token ids)" if guessed else "")
    return TraceError(f"{name}: forward failed on {which} {describe(specs)}{tried}: {type(cause).__name__}: {text}{hint}")


def trace_guessing_inputs(name: str, model: Any, trace_module: Callable,
                          examples: list[ExampleInput] | tuple = ()) -> tuple[Any, str, list[InputSpec], str, bool]:
    """Trace with the inputs the model's layers suggest (and the example sizes of its file), trying
    further sizes when the first guess fails (a CIFAR network's head fits only 32 px): the first
    size that runs wins, and the summary says which sizes failed before it. Also returned: whether
    the first guess ran (`small_image_respec` reads a trace only its first guess made)."""
    try:
        queue = list(candidate_inputs(model, examples))
    except UsageError as exc:
        raise LoadError(f"{name}: {exc}") from None
    first_error: TraceError | None = None
    failed: list[str] = []
    tried: set[tuple] = set()
    mismatches: list[tuple[int, str]] = []  # (side, error) of square images whose head was the wrong size
    rechanneled = False
    while queue and len(tried) < MAX_TRIES:
        specs, about = queue.pop(0)
        key = tuple(s.shape for s in specs)
        if key in tried:
            continue
        tried.add(key)
        try:
            raw, tracer = trace_module(model, meta_tensors(specs))
        except TraceError as exc:
            first_error = first_error or forward_failed(name, specs, exc, guessed=True)
            failed.append(describe(specs))
            shape = specs[0].shape
            message = str(exc.__cause__ or exc)
            if not rechanneled and len(specs) == 1 and 3 <= len(shape) <= 5 and channels_wrong(message):
                rechanneled = True  # the first layer registered is not where the forward starts
                for channels, layer in reversed(other_channels(model, shape)):
                    resized = InputSpec((shape[0], channels, *shape[2:]), specs[0].dtype)
                    queue.insert(0, ([resized], f"{about.split(' (')[0]} (layer {layer} reads {channels} "
                                                f"channel{'s' * (channels != 1)}; the first registered, "
                                                f"{shape[1]}, did not fit)"))
                continue
            # one square image, or several alike (a Siamese network's pair): the head can say the side
            if all(spec == specs[0] for spec in specs) and len(shape) == 4 and shape[2] == shape[3]:
                fitted = side_from_mismatch(message, shape[2])
                if fitted is None and mismatches:  # no whole ratio: the line through this error and the last
                    fitted = side_from_two_mismatches(mismatches[-1], (shape[2], message))
                if features_mismatch(message):
                    mismatches.append((shape[2], message))
                if fitted is not None:  # the head said which side it was built for: try that next
                    resized = InputSpec((*shape[:2], fitted, fitted), specs[0].dtype)
                    queue.insert(0, ([resized] * len(specs), about.replace(str(specs[0]), str(resized))))
            continue
        if failed:
            about += f"; {', '.join(failed)} failed, {describe(specs)} ran"
        return raw, tracer, specs, about, not failed
    assert first_error is not None
    if len(failed) > 1:
        first_error = TraceError(f"{first_error}; also failed: {', '.join(failed[1:])}")
    raise first_error
