"""nar zoo source: every transformers `model_type` whose default config builds, base model and heads.

Family = the `model_type`. Inputs come from the model's `main_input_name` and its config: token ids,
pixel values, raw audio or audio features; encoder-decoders also get decoder token ids.
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import (
    BuiltModel,
    ZooEntry,
    ZooSource,
    build_on_meta,
)

# task -> the auto-mapping (in transformers.models.auto.modeling_auto) that lists its classes
TASKS = {
    "base": "MODEL_MAPPING_NAMES",
    "sequence-classification": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "token-classification": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "question-answering": "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES",
    "masked-lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "seq2seq-lm": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "image-classification": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "semantic-segmentation": "MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES",
    "speech-seq2seq": "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
    "audio-classification": "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES",
    "ctc": "MODEL_FOR_CTC_MAPPING_NAMES",
}
# the kinds of input this source makes; a model whose forward requires anything else is skipped
SUPPORTED_INPUTS = {"input_ids", "pixel_values", "pixel_values_videos", "input_values", "input_features", "decoder_input_ids"}
SEQUENCE = 128  # tokens, or fewer when the model's positions are fewer
DECODER_SEQUENCE = 16
AUDIO_SAMPLES = 16000  # one second at 16 kHz
VIDEO_FRAMES = 16


class TransformersSource(ZooSource):
    name = "transformers"
    prefix = "hf"
    description = "Hugging Face transformers: every model type, base model and task heads"
    rank = 30
    library = "transformers"

    def list_models(self) -> list[ZooEntry]:
        import warnings

        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import transformers.models.auto.modeling_auto as auto
        from transformers import AutoConfig

        entries = []
        for model_type in sorted(auto.MODEL_MAPPING_NAMES):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    AutoConfig.for_model(model_type)
            except Exception:  # a config that needs arguments is not a candidate
                continue
            for task, mapping in TASKS.items():
                class_name = getattr(auto, mapping, {}).get(model_type)
                if isinstance(class_name, (list, tuple)):
                    class_name = class_name[0]
                if class_name:
                    name = model_type if task == "base" else f"{model_type}/{task}"
                    entries.append(ZooEntry(name, model_type, "feature-extraction" if task == "base" else task,
                                            {"class": class_name}, unsupported=_unsupported(class_name)))
        # every base model before any head, so a partial build already covers every model type
        return sorted(entries, key=lambda e: (e.task != "feature-extraction", e.name))

    def build(self, entry: ZooEntry) -> BuiltModel:
        import warnings

        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import transformers
        from transformers import AutoConfig

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = AutoConfig.for_model(entry.family)
            model_class = getattr(transformers, entry.extra["class"])
            config = _config_for(model_class, config)
            _complete(config)
            model = build_on_meta(lambda: model_class(config))
        model.eval()
        if hasattr(model, "set_default_language") and getattr(config, "languages", None):
            model.set_default_language(config.languages[0])  # X-MOD routes through one adapter per language
        names, tensors = _inputs(model, config)
        return BuiltModel(_KeywordCall(model, names), tensors, input_names=names, weights=model)


# structural fields that some default configs leave empty or unusable, set as the type's released
# checkpoint sets them ("type" or "type.sub-config" -> fields)
RELEASED = {
    "esm": {"vocab_size": 33, "pad_token_id": 1, "mask_token_id": 32},
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    "deepseek_v2": {"num_experts_per_tok": 6, "n_group": 8, "topk_group": 3, "moe_intermediate_size": 1408},
    "dbrx.attn_config": {"clip_qkv": 8},
}


def _config_for(model_class: object, config: object) -> object:
    """The config the class takes: a composite config's sub-config when the class is one part of it."""
    wanted = getattr(model_class, "config_class", None)
    if wanted is None or isinstance(config, wanted):
        return config
    for value in vars(config).values():
        if isinstance(value, wanted):
            return value
    return config


def _complete(config: object) -> None:
    """Fill the derivable structural fields a default config leaves as None (head size, KV heads)."""
    model_type = getattr(config, "model_type", "")
    for key, fields in RELEASED.items():
        owner, _, sub = key.partition(".")
        target = getattr(config, sub, None) if sub else config
        if owner == model_type and target is not None:
            for name, value in fields.items():
                setattr(target, name, value)
    if getattr(config, "is_encoder_decoder", False) and getattr(config, "decoder_start_token_id", None) is None \
            and isinstance(getattr(config, "pad_token_id", None), int):
        config.decoder_start_token_id = config.pad_token_id  # T5's convention
    for holder in (config, *(v for v in vars(config).values() if hasattr(v, "to_dict") and hasattr(v, "model_type"))):
        heads = getattr(holder, "num_attention_heads", None)
        hidden = getattr(holder, "hidden_size", None)
        if isinstance(heads, int) and heads > 0:
            if "head_dim" in vars(holder) and holder.head_dim is None and isinstance(hidden, int):
                holder.head_dim = hidden // heads
            if getattr(holder, "num_key_value_heads", None) is None:
                holder.num_key_value_heads = heads
        layer_types, rope_by_type = getattr(holder, "layer_types", None), getattr(holder, "rope_parameters", None)
        if isinstance(layer_types, list) and rope_by_type == {}:  # RoPE settings kept per layer type, none given
            holder.rope_parameters = {t: {"rope_type": "default", "rope_theta": 10000.0} for t in set(layer_types)}
        rope = getattr(holder, "rope_theta", None) or (getattr(holder, "rope_parameters", None) or {}).get("rope_theta")
        for sub in ("attn_config",):  # DBRX keeps attention settings in a sub-config that lacks the base
            part = getattr(holder, sub, None)
            if part is not None and rope is not None and getattr(part, "rope_theta", None) is None:
                part.rope_theta = rope


def _required(model_class: object) -> list[str]:
    import inspect

    try:
        params = inspect.signature(model_class.forward).parameters
    except Exception:  # a placeholder class for a missing backend raises ImportError: the build says so
        return []
    return [n for n, p in params.items() if n != "self" and p.default is p.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _unsupported(class_name: str) -> str:
    """Why this class can't be fed by this source ('' when it can)."""
    import transformers

    try:
        model_class = getattr(transformers, class_name)
    except Exception as exc:  # an optional dependency missing, say: the build will report it
        return "" if not isinstance(exc, AttributeError) else f"no class {class_name} in transformers"
    import torch

    try:
        if getattr(model_class, "forward", None) is torch.nn.Module.forward:
            return "has no forward (a component used through other methods)"
    except Exception:  # a placeholder class for a missing backend
        return ""
    needs = [n for n in _required(model_class) if n not in SUPPORTED_INPUTS]
    return f"needs input {', '.join(needs)}" if needs else ""


def _KeywordCall(model: object, names: list[str]) -> object:
    import torch

    class KeywordCall(torch.nn.Module):
        """Calls a transformers model with keyword inputs; returns its output tensors."""

        def __init__(self, inner: torch.nn.Module, input_names: list[str]):
            super().__init__()
            self.inner = inner
            self.input_names = input_names

        def forward(self, *tensors: torch.Tensor) -> tuple:
            out = self.inner(**dict(zip(self.input_names, tensors)), use_cache=False) \
                if _accepts(self.inner, "use_cache") else self.inner(**dict(zip(self.input_names, tensors)))
            values = out.values() if hasattr(out, "values") else (out if isinstance(out, (tuple, list)) else [out])
            return tuple(v for v in values if isinstance(v, torch.Tensor))

    return KeywordCall(model, names)


def _accepts(model: object, name: str) -> bool:
    import inspect

    params = inspect.signature(model.forward).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _find(config: object, *names: str, default: object = None) -> object:
    """A config value, looked up in the config and then its text/vision/audio/encoder sub-configs."""
    for holder in (config, *(getattr(config, sub, None) for sub in
                             ("text_config", "vision_config", "audio_config", "encoder_config", "encoder"))):
        if holder is None or isinstance(holder, dict):
            continue
        for name in names:
            value = getattr(holder, name, None)
            if value is not None:
                return value
    return default


def _inputs(model: object, config: object) -> tuple[list[str], list[object]]:
    import inspect

    import torch

    params = inspect.signature(model.forward).parameters
    main = getattr(model, "main_input_name", "input_ids")
    names, tensors = [], []

    def add(name: str, shape: tuple, dtype: object = torch.float32) -> None:
        names.append(name)
        tensors.append(torch.empty(shape, dtype=dtype, device="meta"))

    positions = _find(config, "max_position_embeddings", "n_positions", "max_seq_len", default=SEQUENCE)
    seq = max(8, min(SEQUENCE, int(positions) if isinstance(positions, int) else SEQUENCE))
    if main in ("pixel_values", "pixel_values_videos") or (
            main != "input_ids" and "pixel_values" in params and main not in params):
        add(main if main in params else "pixel_values", _image_shape(config, video=main == "pixel_values_videos"))
    elif main == "input_values":
        mels, length = _find(config, "num_mel_bins"), _find(config, "max_length")
        if isinstance(mels, int) and isinstance(length, int):  # a spectrogram (AST), not a waveform
            add("input_values", (1, length, mels))
        else:  # a waveform: (batch, samples), or (batch, channels, samples) for codecs
            names.append("input_values")
            tensors.append(_first_that_fits(model, config, "input_values",
                                            [(1, AUDIO_SAMPLES), (1, 1, AUDIO_SAMPLES)]))
    elif main == "input_features":
        names.append("input_features")
        tensors.append(_features_that_fit(model, config))
    else:
        codebooks = _find(config, "num_codebooks")
        rows = codebooks if isinstance(codebooks, int) and "Musicgen" in type(model).__name__ else 1
        add(main if main in params else "input_ids", (rows, seq), torch.long)  # MusicGen: a row per codebook
    required = _required(type(model))
    if "input_ids" in required and "input_ids" not in names:
        add("input_ids", (1, seq), torch.long)
    if names == ["input_ids"] and "pixel_values" in params and ("pixel_values" in required or _dual_encoder(config)):
        add("pixel_values", _image_shape(config))
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params \
            and not type(model).__name__.endswith("ForSequenceClassification"):  # it shifts input_ids itself
        add("decoder_input_ids", (1, DECODER_SEQUENCE), torch.long)
    return names, tensors


def _image_shape(config: object, video: bool = False) -> tuple[int, ...]:
    """(1, channels, H, W), or (1, frames, channels, H, W) for a video model."""
    size = _find(config, "image_size", "img_size", default=224)
    size = tuple(int(s) for s in size[-2:]) if isinstance(size, (list, tuple)) else (int(size), int(size))
    channels = int(_find(config, "num_channels", "in_channels", "in_chans", default=3))
    frames = _find(config, "num_frames", default=VIDEO_FRAMES if video else None)
    return (1, int(frames), channels, *size) if isinstance(frames, int) and frames > 0 else (1, channels, *size)


def _features_that_fit(model: object, config: object) -> object:
    """Audio features in the first layout the model accepts.

    Speech models disagree on layout (Whisper: mels x frames with a fixed frame count; most others:
    frames x features, where features may be stacked mel frames), so each candidate is tried with
    one forward pass on meta tensors, which costs no memory or arithmetic.
    """
    import torch

    mels = int(_find(config, "feature_projection_input_dim", "num_mel_bins", "feature_size",
                     "input_feat_per_channel", default=80))
    first = next((m for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv1d))), None)
    width = getattr(first, "in_features", None) or getattr(first, "in_channels", None) or mels
    frames = int(_find(config, "max_source_positions", default=1500))
    shapes = [(1, 200, mels), (1, mels, 2 * frames), (1, 200, width), (1, width, 2 * frames), (1, mels, 3000)]
    return _first_that_fits(model, config, "input_features", shapes)


def _first_that_fits(model: object, config: object, name: str, shapes: list[tuple[int, ...]]) -> object:
    """A meta tensor of the first shape that one forward pass on meta accepts (else the first)."""
    import torch

    candidates = [torch.empty(shape, device="meta") for shape in dict.fromkeys(shapes)]
    extra = {}
    if getattr(config, "is_encoder_decoder", False) and _accepts(model, "decoder_input_ids"):
        extra["decoder_input_ids"] = torch.zeros((1, DECODER_SEQUENCE), dtype=torch.long, device="meta")
    from narcli.trace.torch_tracer import run_on_meta

    for tensor in candidates:
        try:
            run_on_meta(lambda: model(**{name: tensor}, **extra))
            return tensor
        except Exception:  # this layout does not fit; the next one may
            continue
    return candidates[0]


def _dual_encoder(config: object) -> bool:
    """CLIP-like: separate text and vision towers, no image tokens spliced into the text."""
    vision = getattr(config, "vision_config", None)
    return getattr(config, "text_config", None) is not None and vision is not None and not any(
        hasattr(config, a) for a in ("image_token_id", "image_token_index"))


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [TransformersSource()]
