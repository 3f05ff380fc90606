"""The image size a classifier was built for, read from a trace at the default guess; and the channels
a forward that does not start at its first registered layer reads. Runs in the tracing child and
in tests; imports no torch."""

from __future__ import annotations

import math
import re
from typing import Any

from narcli.trace.inputs import InputSpec
from narcli.trace.torch_ops import torch_layer_kind

# A guessed RGB image at `DEFAULT_IMAGE_SIDE` px that a classifier built for small images reads is
# traced again at the size it was built for (`small_image_respec`). Adaptive pooling runs either at
# any size: ImageNet designs pool a 7x7 map (downsampled 32x), CIFAR ones an 8x8 or 4x4 map of a 32 px
# image (4x or 8x: a stem and stages that halve). A fixed `avg_pool2d(x, 8)` then `view(-1, C)` runs
# at 224 px too, and spreads the 7x7 map it leaves over 49 samples.
DEFAULT_IMAGE_SIDE, SMALL_IMAGE_SIDE = 224, 32
SMALL_IMAGE_STRIDES = (1, 2, 4, 8)  # how far a CIFAR design downsamples before its classifier's pool


def _guessed_default_image(specs: list[InputSpec], about: str | None, ran_first: bool) -> bool:
    """The first guess ran, and nothing else chose it (an example input in the file and
    `--input-shape` win), for one RGB image at 224 px or several alike."""
    if about is None or not ran_first or "example input" in about or not specs:
        return False
    shape = specs[0].shape
    return all(spec == specs[0] for spec in specs) and len(shape) == 4 and shape[1] == 3 \
        and shape[2:] == (DEFAULT_IMAGE_SIDE, DEFAULT_IMAGE_SIDE) and specs[0].dtype == "float32"


def classifier_outputs(outputs: list[list[int] | None], batch: int) -> bool:
    """Every output one vector per sample of the batch: what a classifier returns."""
    return bool(outputs) and all(o is not None and len(o) == 2 and o[0] == batch for o in outputs)


def small_image_respec(specs: list[InputSpec], about: str | None, ran_first: bool, *,
                       pooled_sides: list[int], fixed_pool_sides: list[int], outputs: list[list[int] | None],
                       dilated: bool) -> tuple[list[InputSpec], str] | None:
    """The input (and its summary) a classifier guessed at 224 px was built for, else None.

    The signs come from the trace at 224 px (`ArchGraph.image_signs`). Either a fixed-window pool
    left a k×k map that the outputs hold as k² times the samples given (`view(-1, C)`: the side is
    224 / k when that is whole, else 32 px), or every output is one vector per sample from a global
    pool over a map downsampled 1, 2, 4 or 8 times, in a network with no dilated convolution (a
    dilated ResNet keeps a large map at 224 px by design): 32 px. The most downsampled map a global
    pool reads decides: a squeeze-excite gate early in the network reads a large one. The caller
    traces the answer and keeps it only if it returns one vector per sample (`classifier_outputs`).
    """
    if not _guessed_default_image(specs, about, ran_first):
        return None
    shape, side = specs[0].shape, DEFAULT_IMAGE_SIDE
    batch = shape[0]
    spilled = [o[0] for o in outputs if o and len(o) == 2 and o[0] > batch and o[0] % batch == 0
               and math.isqrt(o[0] // batch) ** 2 == o[0] // batch and math.isqrt(o[0] // batch) in fixed_pool_sides]
    if spilled and not classifier_outputs(outputs, batch):
        k = math.isqrt(spilled[0] // batch)
        small = side // k if side % k == 0 and side // k >= 8 else SMALL_IMAGE_SIDE
        why = f"its outputs held {spilled[0]} samples for {batch} at {side} px (the {k}×{k} map a pool " \
              "left, spread over the batch)"
    elif pooled_sides and min(pooled_sides) > 0 and not dilated and classifier_outputs(outputs, batch):
        pooled = min(pooled_sides)
        stride = side / pooled
        nearest = min(SMALL_IMAGE_STRIDES, key=lambda s: abs(stride / s - 1))
        if abs(stride / nearest - 1) > 0.1:
            return None
        small = SMALL_IMAGE_SIDE
        how = f"downsampled {nearest}×" if nearest > 1 else "not downsampled"
        why = f"its classifier pools a map {how} ({pooled}×{pooled} at {side} px)"
    else:
        return None
    resized = InputSpec((batch, 3, small, small), specs[0].dtype)
    like = ", as networks built for CIFAR-sized images do" if small == SMALL_IMAGE_SIDE else ""
    return [resized] * len(specs), f"{about} at {small}×{small}: {why}{like}"


MAX_OTHER_CHANNELS = 3  # channel counts tried after the first layer's fails: the side search needs the rest
_CHANNELS_WRONG = re.compile(r"Invalid channel dimensions|to have \d+ channels")


def channels_wrong(message: str) -> bool:
    """A convolution met an input with other channels than it reads (meta's wording, then CPU's)."""
    return bool(_CHANNELS_WRONG.search(message))


def other_channels(model: Any, shape: tuple[int, ...]) -> list[tuple[int, str]]:
    """(channels, layer name) a convolution of the input's rank reads, other than `shape`'s, fewest
    first: where the forward starts when the first layer registered is not the first it calls
    (VDSR registers its 18 middle layers before its one-channel input layer)."""
    seen: dict[int, str] = {}
    for name, layer in model.named_modules():
        kind = torch_layer_kind(layer)
        channels = getattr(layer, "in_channels", None)
        if kind.startswith("Conv") and isinstance(channels, int) and hasattr(layer, "kernel_size") \
                and len(layer.kernel_size) == len(shape) - 2 and channels != shape[1]:
            seen.setdefault(channels, name)
    return sorted(seen.items())[:MAX_OTHER_CHANNELS]
