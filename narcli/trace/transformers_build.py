"""Build a Hugging Face transformers model from its config on the meta device, with example inputs.

Used by the transformers zoo source (default configs of every model type) and by `nar scan` on a
model folder (`config.json`). Imports transformers and torch; runs in a child process or worker.
"""

from __future__ import annotations

from typing import Any

# the kinds of input this module makes; a model whose forward requires anything else is not built
SUPPORTED_INPUTS = {"input_ids", "pixel_values", "pixel_values_videos", "input_values", "input_features", "decoder_input_ids"}
SEQUENCE = 128  # tokens, or fewer when the model's positions are fewer
DECODER_SEQUENCE = 16
AUDIO_SAMPLES = 16000  # one second at 16 kHz
VIDEO_FRAMES = 16


def build_transformers(model_class: Any, config: Any) -> tuple[Any, list[Any], list[str], Any]:
    """(module to trace, meta input tensors, input names, the model itself) for `model_class(config)`.

    The module to trace calls the model with keyword inputs and returns its output tensors."""
    import warnings

    from narcli.trace.meta import build_on_meta

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = config_for(model_class, config)
        complete_config(config)
        model = build_on_meta(lambda: model_class(config))
    model.eval()
    if hasattr(model, "set_default_language") and getattr(config, "languages", None):
        model.set_default_language(config.languages[0])  # X-MOD routes through one adapter per language
    names, tensors = example_inputs(model, config)
    return keyword_call(model, names), tensors, names, model


# structural fields that some default configs leave empty or unusable, set as the type's released
# checkpoint sets them ("type" or "type.sub-config" -> fields)
RELEASED = {
    "esm": {"vocab_size": 33, "pad_token_id": 1, "mask_token_id": 32},
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    "deepseek_v2": {"num_experts_per_tok": 6, "n_group": 8, "topk_group": 3, "moe_intermediate_size": 1408},
    "dbrx.attn_config": {"clip_qkv": 8},
}


def config_for(model_class: object, config: object) -> object:
    """The config the class takes: a composite config's sub-config when the class is one part of it."""
    wanted = getattr(model_class, "config_class", None)
    if wanted is None or isinstance(config, wanted):
        return config
    for value in vars(config).values():
        if isinstance(value, wanted):
            return value
    return config


def complete_config(config: object) -> None:
    """Fill the derivable structural fields a default config leaves as None (head size, KV heads)."""
    model_type = _get(config, "model_type", "")
    for key, fields in RELEASED.items():
        owner, _, sub = key.partition(".")
        target = _get(config, sub, None) if sub else config
        if owner == model_type and target is not None:
            for name, value in fields.items():
                setattr(target, name, value)
    if _get(config, "is_encoder_decoder", False) and _get(config, "decoder_start_token_id", None) is None \
            and isinstance(_get(config, "pad_token_id", None), int):
        config.decoder_start_token_id = config.pad_token_id  # T5's convention
    for holder in (config, *(v for v in vars(config).values() if hasattr(v, "to_dict") and hasattr(v, "model_type"))):
        heads = _get(holder, "num_attention_heads", None)
        hidden = _get(holder, "hidden_size", None)
        if isinstance(heads, int) and heads > 0:
            if "head_dim" in vars(holder) and _get(holder, "head_dim") is None and isinstance(hidden, int):
                holder.head_dim = hidden // heads
            if _get(holder, "num_key_value_heads", None) is None:
                holder.num_key_value_heads = heads
        layer_types, rope_by_type = _get(holder, "layer_types", None), _get(holder, "rope_parameters", None)
        if isinstance(layer_types, list) and rope_by_type == {}:  # RoPE settings kept per layer type, none given
            holder.rope_parameters = {t: {"rope_type": "default", "rope_theta": 10000.0} for t in set(layer_types)}
        by_type = _get(holder, "rope_parameters", None)
        rope = _get(holder, "rope_theta", None) or (by_type.get("rope_theta") if isinstance(by_type, dict) else None)
        rope = rope if isinstance(rope, (int, float)) else None
        for sub in ("attn_config",):  # DBRX keeps attention settings in a sub-config that lacks the base
            part = _get(holder, sub, None)
            if part is not None and rope is not None and _get(part, "rope_theta", None) is None:
                part.rope_theta = rope


UNREADABLE = object()  # a config field that exists but cannot be read as one global value


def _get(holder: Any, name: str, default: Any = None) -> Any:
    """An attribute, `default` when it is missing, UNREADABLE when reading it raises: heterogeneous
    configs refuse global reads of per-layer fields such as head_dim (and are then left alone)."""
    try:
        return getattr(holder, name, default)
    except Exception:  # noqa: BLE001 - AmbiguousGlobalPerLayerAttributeError and the like
        return UNREADABLE


def required_inputs(model_class: object) -> list[str]:
    import inspect

    try:
        params = inspect.signature(model_class.forward).parameters
    except Exception:  # a placeholder class for a missing backend raises ImportError: the build says so
        return []
    return [n for n, p in params.items() if n != "self" and p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def keyword_call(model: Any, names: list[str]) -> Any:
    import torch

    class KeywordCall(torch.nn.Module):
        """Calls a transformers model with keyword inputs; returns its output tensors."""

        def __init__(self, inner: torch.nn.Module, input_names: list[str]):
            super().__init__()
            self.inner = inner
            self.input_names = input_names

        def forward(self, *tensors: torch.Tensor) -> tuple:
            out = self.inner(**dict(zip(self.input_names, tensors)), use_cache=False) \
                if accepts(self.inner, "use_cache") else self.inner(**dict(zip(self.input_names, tensors)))
            values = out.values() if hasattr(out, "values") else (out if isinstance(out, (tuple, list)) else [out])
            return tuple(v for v in values if isinstance(v, torch.Tensor))

    return KeywordCall(model, names)


def accepts(model: object, name: str) -> bool:
    import inspect

    params = inspect.signature(model.forward).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def find_value(config: object, *names: str, default: object = None) -> object:
    """A config value, looked up in the config and then its text/vision/audio/encoder sub-configs."""
    for holder in (config, *(_get(config, sub, None) for sub in
                             ("text_config", "vision_config", "audio_config", "encoder_config", "encoder"))):
        if holder is None or holder is UNREADABLE or isinstance(holder, dict):
            continue
        for name in names:
            value = _get(holder, name, None)
            if value is not None and value is not UNREADABLE:
                return value
    return default


def example_inputs(model: object, config: object) -> tuple[list[str], list[object]]:
    import inspect

    import torch

    params = inspect.signature(model.forward).parameters
    main = getattr(model, "main_input_name", "input_ids")
    names, tensors = [], []

    def add(name: str, shape: tuple, dtype: object = torch.float32) -> None:
        names.append(name)
        tensors.append(torch.empty(shape, dtype=dtype, device="meta"))

    positions = find_value(config, "max_position_embeddings", "n_positions", "max_seq_len", default=SEQUENCE)
    seq = max(8, min(SEQUENCE, int(positions) if isinstance(positions, int) else SEQUENCE))
    if main in ("pixel_values", "pixel_values_videos") or (
            main != "input_ids" and "pixel_values" in params and main not in params):
        add(main if main in params else "pixel_values", image_shape(config, video=main == "pixel_values_videos"))
    elif main == "input_values":
        mels, length = find_value(config, "num_mel_bins"), find_value(config, "max_length")
        if isinstance(mels, int) and isinstance(length, int):  # a spectrogram (AST), not a waveform
            add("input_values", (1, length, mels))
        else:  # a waveform: (batch, samples), or (batch, channels, samples) for codecs
            names.append("input_values")
            tensors.append(first_that_fits(model, config, "input_values",
                                            [(1, AUDIO_SAMPLES), (1, 1, AUDIO_SAMPLES)]))
    elif main == "input_features":
        names.append("input_features")
        tensors.append(features_that_fit(model, config))
    else:
        codebooks = find_value(config, "num_codebooks")
        rows = codebooks if isinstance(codebooks, int) and "Musicgen" in type(model).__name__ else 1
        add(main if main in params else "input_ids", (rows, seq), torch.long)  # MusicGen: a row per codebook
    required = required_inputs(type(model))
    if "input_ids" in required and "input_ids" not in names:
        add("input_ids", (1, seq), torch.long)
    if names == ["input_ids"] and "pixel_values" in params and ("pixel_values" in required or dual_encoder(config)):
        add("pixel_values", image_shape(config))
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params \
            and not type(model).__name__.endswith("ForSequenceClassification"):  # it shifts input_ids itself
        add("decoder_input_ids", (1, DECODER_SEQUENCE), torch.long)
    return names, tensors


def image_shape(config: object, video: bool = False) -> tuple[int, ...]:
    """(1, channels, H, W), or (1, frames, channels, H, W) for a video model."""
    size = find_value(config, "image_size", "img_size", default=224)
    size = tuple(int(s) for s in size[-2:]) if isinstance(size, (list, tuple)) else (int(size), int(size))
    channels = int(find_value(config, "num_channels", "in_channels", "in_chans", default=3))
    frames = find_value(config, "num_frames", default=VIDEO_FRAMES if video else None)
    return (1, int(frames), channels, *size) if isinstance(frames, int) and frames > 0 else (1, channels, *size)


def features_that_fit(model: object, config: object) -> object:
    """Audio features in the first layout the model accepts.

    Speech models disagree on layout (Whisper: mels x frames with a fixed frame count; most others:
    frames x features, where features may be stacked mel frames), so each candidate is tried with
    one forward pass on meta tensors, which costs no memory or arithmetic.
    """
    import torch

    mels = int(find_value(config, "feature_projection_input_dim", "num_mel_bins", "feature_size",
                     "input_feat_per_channel", default=80))
    first = next((m for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv1d))), None)
    width = getattr(first, "in_features", None) or getattr(first, "in_channels", None) or mels
    frames = int(find_value(config, "max_source_positions", default=1500))
    shapes = [(1, 200, mels), (1, mels, 2 * frames), (1, 200, width), (1, width, 2 * frames), (1, mels, 3000)]
    return first_that_fits(model, config, "input_features", shapes)


def first_that_fits(model: object, config: object, name: str, shapes: list[tuple[int, ...]]) -> object:
    """A meta tensor of the first shape that one forward pass on meta accepts (else the first)."""
    import torch

    candidates = [torch.empty(shape, device="meta") for shape in dict.fromkeys(shapes)]
    extra = {}
    if getattr(config, "is_encoder_decoder", False) and accepts(model, "decoder_input_ids"):
        extra["decoder_input_ids"] = torch.zeros((1, DECODER_SEQUENCE), dtype=torch.long, device="meta")
    from narcli.trace.torch_tracer import run_on_meta

    for tensor in candidates:
        try:
            run_on_meta(lambda: model(**{name: tensor}, **extra))
            return tensor
        except Exception:  # this layout does not fit; the next one may
            continue
    return candidates[0]


def dual_encoder(config: object) -> bool:
    """CLIP-like: separate text and vision towers, no image tokens spliced into the text."""
    vision = getattr(config, "vision_config", None)
    return getattr(config, "text_config", None) is not None and vision is not None and not any(
        hasattr(config, a) for a in ("image_token_id", "image_token_index"))
