"""The inputs a model's `forward` requires after its first, made from the first input's spec when
their names say what they are (`forward(self, x, t)`, `forward(self, input_ids, attention_mask)`,
`forward(self, src, tgt)`, `forward(self, x1, x2)`); `inputs.candidate_inputs` adds them to each
guess of the first."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# what a diffusion model's (or a class-conditional model's) forward calls the inputs after the
# first: one step or label per sample, as the diffusers zoo source traces them
_STEPS = frozenset(("t", "ts", "time", "times", "timestep", "timesteps", "step", "steps", "noise_level",
                    "noise_labels", "y", "label", "labels", "class_label", "class_labels", "classes"))
_SCALES = frozenset(("sigma", "sigmas", "log_snr", "logsnr", "gamma", "noise_scale"))  # a float each
PER_SAMPLE = _STEPS | _SCALES  # with one of these, a convolution says more about the first input


# a mask over the first input's tokens (`forward(self, input_ids, attention_mask)`); PyTorch's own
# padding masks are bool, a Hugging Face style attention mask is integer
_MASK_NAMES = frozenset(("mask", "attention_mask", "attn_mask", "input_mask", "src_mask", "token_type_ids"))
_PADDING_MASK_NAMES = frozenset(("padding_mask", "key_padding_mask", "src_key_padding_mask"))
# a second sequence of the first's kind: a translation model's target (`forward(self, src, tgt)`)
_TARGET_NAMES = frozenset(("tgt", "trg", "target", "targets", "tgt_ids", "tgt_tokens", "tgt_seq", "trg_seq",
                           "decoder_input", "decoder_input_ids", "dec_input", "dec_inputs"))
# inputs that come in sets alike (`forward(self, x1, x2)`, a triplet network's three)
_ALIKE_SETS = (frozenset(("left", "right")), frozenset(("anchor", "positive", "negative")),
               frozenset(("query", "support")), frozenset(("a", "b")))

# the input after the first, from the first's `inputs.InputSpec` (made as its type: this module is
# imported by `inputs`, not the other way round)
Extra = Callable[[Any], Any]


def _alike(first: str, name: str) -> bool:
    """`name` is another of the inputs `first` is one of: x1 and x2, img_a and img_b, left and right."""
    stem = re.compile(r"^(.*?)_?([0-9]+|[ab])$")
    one, two = stem.match(first), stem.match(name)
    if one and two and one.group(1) == two.group(1) and one.group(1):
        return True
    return any(first in group and name in group for group in _ALIKE_SETS)


def _extra_input(first: str, name: str) -> Extra | None:
    """How to make the required input `name` from the spec of the first (named `first`)."""
    if name in _STEPS:
        return lambda spec: type(spec)((1,), "int64")
    if name in _SCALES:
        return lambda spec: type(spec)((1,))
    if name in _MASK_NAMES | _PADDING_MASK_NAMES:  # over token ids only: a mask over an image has no one shape
        dtype = "bool" if name in _PADDING_MASK_NAMES else "int64"
        return lambda spec: type(spec)(spec.shape, dtype) if spec.dtype == "int64" else None
    if name in _TARGET_NAMES or _alike(first, name):
        return lambda spec: spec
    return None


def extra_inputs(model: Any) -> list[tuple[str, Extra]]:
    """The inputs a forward requires after its first, when every one is known by its name: a timestep,
    noise level or class label (`forward(self, x, t)`, `forward(self, x, t, y)`: one per sample, int64,
    or a float for a noise level), a mask over token ids (`forward(self, input_ids, attention_mask)`), a
    translation model's target (`forward(self, src, tgt)`: like the source), or another of a set
    (`forward(self, x1, x2)`: like the first). Empty otherwise: the guess stays one input."""
    import inspect

    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    required = [p for p in parameters if p.default is inspect.Parameter.empty and
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not required:
        return []
    extra = []
    for parameter in required[1:]:
        made = _extra_input(required[0].name.lower(), parameter.name.lower())
        if made is None:
            return []
        extra.append((parameter.name, made))
    return extra
