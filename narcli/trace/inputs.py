"""Example inputs: parsing `--input-shape` / `--input-dtype`, and guessing them from a model's first layer."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from narcli.errors import UsageError, shorten
from narcli.trace.torch_ops import torch_layer_kind

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
    return next(candidate_inputs(model))


# literal example inputs in the model's own file, as CIFAR code writes its smoke test:
# `net(torch.randn(1, 3, 32, 32))`, `torch.zeros((2, 3, 32, 32))`, `torch.rand(size=(1, 1, 16000))`
# (a batch first), and torchsummary's `summary(net, (3, 32, 32))` (no batch; torchinfo's
# `input_size=(1, 3, 32, 32)` has one); token ids as `torch.randint(0, vocab, (2, 64))` or
# `torch.zeros(1, 64, dtype=torch.long)` (a batch, then the length)
_EXAMPLE_TENSOR = re.compile(r"torch\.(?:randn|rand|zeros|ones|empty)\(\s*(?:size\s*=\s*)?[(\[]?\s*"
                             r"(\d+(?:\s*,\s*\d+){2,4})\s*[)\],]")
_EXAMPLE_SUMMARY = re.compile(r"(?:\bsummary\s*\(\s*[\w.]+\s*,\s*(?:input_size\s*=\s*)?|\binput_size\s*=\s*)"
                              r"[(\[]\s*(\d+(?:\s*,\s*\d+){2,3})\s*,?\s*[)\]]")
_EXAMPLE_TOKENS = re.compile(r"torch\.randint\(\s*(?:(?:low\s*=\s*)?\d+\s*,\s*)?(?:high\s*=\s*)?[\w.]+\s*,\s*"
                             r"(?:size\s*=\s*)?[(\[]\s*(\d+\s*,\s*\d+)\s*,?\s*[)\]]")
_EXAMPLE_INTEGERS = re.compile(r"torch\.(?:zeros|ones|empty|full)\(\s*(?:size\s*=\s*)?[(\[]?\s*(\d+\s*,\s*\d+)"
                               r"\s*[)\]]?\s*,[^)\n]*?dtype\s*=\s*torch\.(?:long|int64|int32|int)\b")
# bump when the guess changes: a file scanned with guessed inputs is then traced again
GUESS_VERSION = 7  # 4: token-id and sequence examples are read too; 5: graph networks, timesteps, labels;
# 6: masks, translation targets and twin inputs; 7: CIFAR-sized designs at 32 px (`image_size.small_image_respec`)


@dataclass(frozen=True)
class ExampleInput:
    """One sample's shape in an example input the model's file writes: channels, then its sides
    (an image or signal), the time steps then the features (a sequence), or the length (token ids)."""
    shape: tuple[int, ...]
    line: int  # where it first appears (1-based)
    tokens: bool = False  # integer ids for an embedding
    batch: int | None = field(default=None, compare=False)  # the first size, when the call wrote a batch

    @property
    def written(self) -> tuple[int, ...]:
        """The shape as the file writes it, the batch (or a sequence's first size) included."""
        return self.shape if self.batch is None else (self.batch, *self.shape)

    def fits(self, channels: int, sides: int) -> bool:
        return not self.tokens and len(self.shape) == 1 + sides and self.shape[0] == channels and \
            _image_or_signal(self.shape)

    def sequence_of(self, features: int) -> tuple[int, int] | None:
        """(first, second) of a three-size float input whose last size is `features`: a batch and a
        length for batch-first code, a length and a batch otherwise."""
        written = self.written
        if self.tokens or len(written) != 3 or written[2] != features:
            return None
        return written[0], written[1]


def _image_or_signal(sizes: tuple[int, ...]) -> bool:
    """Channels then sides an input can have (not a weight's shape, a tiny grid, a typo)."""
    return 1 <= sizes[0] <= 4096 and all(8 <= side <= 1 << 20 for side in sizes[1:])


def example_inputs(source: str) -> list[ExampleInput]:
    """The sample shapes of the literal example inputs in `source` (a model's `.py` file), the most
    used first (ties: the first written first). A CIFAR network built with adaptive pooling runs at
    224 px as well as at 32; its file's own `torch.randn(1, 3, 32, 32)` says which one it is for,
    as `torch.randint(0, vocab, (1, 64))` says a language model's length."""
    found: dict[tuple[tuple[int, ...], bool], ExampleInput] = {}
    uses: dict[tuple[tuple[int, ...], bool], int] = {}

    def add(match: re.Match, sizes: tuple[int, ...], batch: int | None, tokens: bool) -> None:
        key = (sizes, tokens)
        found.setdefault(key, ExampleInput(sizes, source.count("\n", 0, match.start()) + 1, tokens, batch))
        uses[key] = uses.get(key, 0) + 1

    for pattern, always_batched in ((_EXAMPLE_TENSOR, True), (_EXAMPLE_SUMMARY, False)):
        for match in pattern.finditer(source):
            sizes = tuple(int(n) for n in re.split(r"\s*,\s*", match.group(1)))
            batch = None
            if always_batched or len(sizes) == 4:  # a summary of four sizes is torchinfo's, batch first
                batch, sizes = sizes[0], sizes[1:]
            sequence = always_batched and len(sizes) == 2 and all(sizes)  # (batch, steps, features)
            if sequence or _image_or_signal(sizes):
                add(match, sizes, batch, False)  # else not an input: a weight's shape, a tiny grid, a typo
    for pattern in (_EXAMPLE_TOKENS, _EXAMPLE_INTEGERS):
        for match in pattern.finditer(source):
            batch, length = (int(n) for n in re.split(r"\s*,\s*", match.group(1)))
            if 1 <= length <= 1 << 20:
                add(match, (length,), batch, True)
    return sorted(found.values(), key=lambda e: (-uses[(e.shape, e.tokens)], e.line))


# Sizes tried after the first guess fails, most common first: CIFAR, MNIST, small ImageNet crops,
# Inception's 299; for token ids, shorter contexts first (a small GPT's position table is often 64).
IMAGE_SIDES = (32, 28, 64, 96, 128, 256, 299, 384, 512)
SIGNAL_LENGTHS = (16000, 256, 128, 4096)
SPECTROGRAM = (200, 80)  # frames, mel bins: 80 is what speech models (Conformer, Whisper, ESPnet) read
TOKEN_LENGTHS = (64, 32, 16, 8, 256, 512)
MAX_TRIES = 8  # first guess included: meta-device traces are cheap, but a model may fail at every size


# a graph network's example graph: as many nodes and edges as the pyg zoo source traces its models at
GRAPH_NODES, GRAPH_EDGES = 200, 800


def _message_passing(layer: Any) -> bool:
    """A torch_geometric graph layer (GCNConv, GATConv, GINConv, ...), without importing it."""
    return any(cls.__name__ == "MessagePassing" and cls.__module__.startswith("torch_geometric")
               for cls in type(layer).__mro__)


def _width(layer: Any) -> int | None:
    """The feature width a Linear or a graph layer reads: `in_features`, or torch_geometric's
    `in_channels` (a pair for a bipartite layer; -1 while lazy: unknown)."""
    width = getattr(layer, "in_features", None) or getattr(layer, "in_channels", None)
    if isinstance(width, (tuple, list)) and width:
        width = width[0]
    return width if isinstance(width, int) and width > 0 else None


def _graph_inputs(model: Any) -> Iterator[tuple[list[InputSpec], str]]:
    """Node features and edge indices for a model with a torch_geometric layer, the way its forward
    is nearly always written (`forward(x, edge_index)`, with `batch` for graph classification); the
    width is the first graph layer's, or of the first Linear in it or before it (GINConv wraps an MLP)."""
    modules = list(model.named_modules())
    if not any(_message_passing(m) for _, m in modules):
        return
    widths = [(name, m) for name, m in modules if _width(m) and (_message_passing(m) or
                                                                  torch_layer_kind(m) == "Linear")]
    if not widths:
        return
    name, layer = widths[0]
    width = _width(layer)
    about = f"graph ({GRAPH_NODES} nodes, {GRAPH_EDGES} edges; first layer {name}: " \
            f"{type(layer).__name__}({width}, ...))"
    nodes, edges = InputSpec((GRAPH_NODES, width)), InputSpec((2, GRAPH_EDGES), "int64")
    yield [nodes, edges], about
    yield [nodes, edges, InputSpec((GRAPH_NODES,), "int64")], about.replace("graph", "batched graph", 1)
    # one that builds its graph inside forward (a fixed ring) still reads a graph's worth of nodes
    yield [nodes], f"node features ({GRAPH_NODES} nodes; the graph built inside forward; first layer " \
                   f"{name}: {type(layer).__name__}({width}, ...))"


def candidate_inputs(model: Any, examples: list[ExampleInput] | tuple = ()) -> Iterator[tuple[list[InputSpec], str]]:
    """Example inputs to try, best guess first: the first layer with weights decides the kind of
    input (image, signal, video, token ids, vector, sequence); sizes follow. A convolutional model
    whose file writes an example input with the first layer's channels and as many sides
    (`examples`) is tried at that size first. A graph network is tried with node features and edge
    indices first, then with a graph's worth of node features alone (one that builds its graph
    inside `forward`), then as the rest are.
    A forward that requires more inputs known by their names gets them too (`extra_inputs`)."""
    from narcli.trace.extra_inputs import PER_SAMPLE, extra_inputs

    yield from _graph_inputs(model)
    extra = extra_inputs(model)
    if not extra:
        yield from _layer_inputs(model, examples)
        return
    # the first Linear of a model with a timestep is most often its time embedding's: a convolution,
    # where there is one, says more about the first input
    guesses = []
    timed = any(name.lower() in PER_SAMPLE for name, _ in extra)
    if timed and any(torch_layer_kind(m).startswith("Conv") for m in model.modules()):
        try:
            guesses = list(_layer_inputs(model, examples, skip=("Linear", "Embedding")))
        except UsageError:  # no convolution it can read (a 4-d one): the first layer decides, as without t
            pass
    plain = list(_layer_inputs(model, examples))
    made = False
    for specs, about in guesses + plain:
        more = [make(specs[0]) for _, make in extra]
        if any(spec is None for spec in more):  # a mask over an image: no shape to give it
            continue
        made = True
        words = ", ".join(f"{name} {spec}" for (name, _), spec in zip(extra, more))
        yield specs + more, f"{about}; and {words}"
    if not made:  # as without them: one input, and forward says what it is missing
        yield from plain


def _layer_inputs(model: Any, examples: list[ExampleInput] | tuple = (),
                  skip: tuple[str, ...] = ()) -> Iterator[tuple[list[InputSpec], str]]:
    """The first input, from the first layer with weights (`candidate_inputs`) not of a `skip` kind."""
    for name, layer in model.named_modules():
        own, kind = type(layer).__name__, torch_layer_kind(layer)
        if kind in skip:
            continue
        first = f"first layer {name or own}"
        if kind.startswith("Conv") and hasattr(layer, "in_channels"):
            rank = len(layer.kernel_size)
            what = {1: "signal", 2: "image", 3: "video"}.get(rank)
            if what is None:
                break
            channels = layer.in_channels
            about = f"{what} ({first}: {own}({channels}, ...))"
            # two at most: a file demonstrating many sizes leaves tries for the common ones
            for example in [e for e in examples if e.fits(channels, rank)][:2]:
                yield [InputSpec((1, *example.shape))], \
                    f"{about} at {'×'.join(map(str, example.shape[1:]))}, the size of the example input " \
                    f"on line {example.line} of its file"
            if rank == 1:
                for length in (1024, *SIGNAL_LENGTHS):
                    yield [InputSpec((1, channels, length))], about
                    if channels == 1 and length in (1024, 16000):  # a waveform the model unsqueezes itself
                        yield [InputSpec((1, length))], about
            elif rank == 2:
                for side in (224, *IMAGE_SIDES):
                    yield [InputSpec((1, channels, side, side))], about
                    if channels == 1 and side == 224:  # a speech model takes (batch, frames, mels) and unsqueezes
                        yield [InputSpec((1, *SPECTROGRAM))], f"spectrogram of {SPECTROGRAM[0]} frames and " \
                            f"{SPECTROGRAM[1]} mel bins ({first}: {own}(1, ...) on the frames and bins)"
            else:
                for frames, side in ((16, 112), (8, 112), (16, 224), (16, 64), (8, 32)):
                    yield [InputSpec((1, channels, frames, side, side))], about
            return
        if kind in ("Embedding", "EmbeddingBag"):
            about = f"token ids ({first}: Embedding({layer.num_embeddings}, ...))"
            for example in [e for e in examples if e.tokens][:2]:
                yield [InputSpec((1, example.shape[0]), "int64")], \
                    f"{about} at length {example.shape[0]}, the length of the example input on line {example.line} " \
                    "of its file"
            for length in (128, *TOKEN_LENGTHS):
                yield [InputSpec((1, length), "int64")], about
            return
        if kind == "Linear":
            width = _width(layer)  # torch_geometric's own Linear names it in_channels, -1 while lazy
            if width is None:
                continue  # a lazy layer says nothing; a later one may
            about = f"vector ({first}: Linear({width}, ...))"
            for example, (_, steps) in _sequences(examples, width):
                yield [InputSpec((1, steps, width))], \
                    f"sequence of vectors ({first}: Linear({width}, ...)) of {steps} steps, as the " \
                    f"example input on line {example.line} of its file has it"
            yield [InputSpec((1, width))], about
            yield [InputSpec((1, 16, width))], about.replace("vector", "sequence of vectors", 1)
            # a patch embedding written as a Linear over unfolded patches takes an image
            for shape in ((1, 3, 32, 32), (1, 3, 224, 224), (1, 1, 28, 28)):
                yield [InputSpec(shape)], f"image ({first}: Linear({width}, ...) on patches)"
            return
        if kind in ("LSTM", "GRU", "RNN"):
            about = f"sequence ({first}: {kind}({layer.input_size}, ...))"

            def steps_of(steps: int) -> InputSpec:  # batch-first, or time-major: (steps, batch, features)
                n = layer.input_size
                return InputSpec((1, steps, n) if layer.batch_first else (steps, 1, n))

            for example, (outer, inner) in _sequences(examples, layer.input_size):
                steps = inner if layer.batch_first else outer
                yield [steps_of(steps)], \
                    f"{about} of {steps} steps, as the example input on line {example.line} of its file has it"
            yield [steps_of(32)], about
            return
        if kind in ("LSTMCell", "GRUCell", "RNNCell"):  # stepped by hand: batch-first steps, or one step
            about = f"sequence ({first}: {kind}({layer.input_size}, ...) stepped over it)"
            for example, (_, steps) in _sequences(examples, layer.input_size):
                yield [InputSpec((1, steps, layer.input_size))], \
                    f"{about} of {steps} steps, as the example input on line {example.line} of its file has it"
            yield [InputSpec((1, 32, layer.input_size))], about
            yield [InputSpec((1, layer.input_size))], f"one step ({first}: {kind}({layer.input_size}, ...))"
            return
    raise UsageError("cannot guess the model's input from its layers; pass --input-shape")


def _sequences(examples: list[ExampleInput] | tuple, features: int) -> list[tuple[ExampleInput, tuple[int, int]]]:
    """The examples that are sequences of `features`-wide vectors (two at most), with their first two sizes."""
    return [(e, sizes) for e in examples if (sizes := e.sequence_of(features))][:2]


def features_mismatch(message: str) -> tuple[int, int] | None:
    """(features the head got, features it was built for) from a matrix-size error, meta or CPU."""
    found = re.search(r"\[1, (\d+)\] X \[(\d+), \d+\]", message) or \
        re.search(r"\(1x(\d+) and (\d+)x\d+\)", message)
    if not found or not int(found.group(1)) or not int(found.group(2)):
        return None
    return int(found.group(1)), int(found.group(2))


def side_from_mismatch(message: str, side: int) -> int | None:
    """The image side a classifier head expects, read from a matrix-size error at `side`.

    `[1, 25088] X [512, 10]` at 224 px: the head met 49x the features it was built for, so the
    feature map was 7x too wide and high; the model wants 224 / 7 = 32 px.
    """
    found = features_mismatch(message)
    if not found:
        return None
    got, wanted = found
    ratio = math.sqrt(got / wanted)
    if abs(ratio - round(ratio)) > 1e-6 and abs(1 / ratio - round(1 / ratio)) > 1e-6:
        return None
    fitted = side / ratio
    return int(round(fitted)) if fitted >= 1 and abs(fitted - round(fitted)) < 1e-6 else None


def side_from_two_mismatches(first: tuple[int, str], second: tuple[int, str]) -> int | None:
    """The image side a head expects from matrix-size errors at two sides, `(side, message)` each,
    where one error alone gives no whole ratio: convolutions without padding (the Atari DQN's 8/4,
    4/2, 3/1 stack) shrink the map by a constant besides the stride, so the map's side, the square
    root of the features over the channels, grows linearly with the input's side. The line through
    the two errors says where it meets the features the head was built for (88 px for the DQN,
    which at 224 and 64 px got 192² and 32² features over 64 channels, and wants 56²)."""
    (side_a, message_a), (side_b, message_b) = first, second
    a, b = features_mismatch(message_a), features_mismatch(message_b)
    if not a or not b or a[1] != b[1] or side_a == side_b or a[0] == b[0]:
        return None
    root_a, root_b, root_wanted = math.sqrt(a[0]), math.sqrt(b[0]), math.sqrt(a[1])
    fitted = side_a + (root_wanted - root_a) * (side_b - side_a) / (root_b - root_a)
    return int(math.ceil(fitted - 1e-6)) if 8 <= fitted <= 4096 else None


# what torch says when an embedding (or a gather) is handed floats where it looks up token ids
_WANTS_INDICES = ("'indices' to have one of the following scalar types", "expected scalar type Long",
                  "expected scalar type Int", "must be Long", "index_select(): Expected dtype int")


def token_ids_hint(error: str, specs: list[InputSpec]) -> str:
    """"; ... pass --input-dtype int64" when a float input met a token lookup, else ""."""
    if any(s.dtype.startswith(("float", "bfloat")) for s in specs) and any(w in error for w in _WANTS_INDICES):
        return "; the model takes token ids (integers), not floats: pass --input-dtype int64"
    return ""
