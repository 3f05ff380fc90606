"""nar zoo source: every transformers `model_type` whose default config builds, base model and heads.

Family = the `model_type`. Inputs come from the model's `main_input_name` and its config: token ids,
pixel values, raw audio or audio features; encoder-decoders also get decoder token ids.
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.meta import build_on_meta
from narcli.sources import (
    BuiltModel,
    ZooEntry,
    ZooSource,
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
SUPPORTED_INPUTS = {"input_ids", "pixel_values", "input_values", "input_features", "decoder_input_ids"}
SEQUENCE = 128  # tokens, or fewer when the model's positions are fewer
DECODER_SEQUENCE = 16
AUDIO_SAMPLES = 16000  # one second at 16 kHz


class TransformersSource(ZooSource):
    name = "transformers"
    prefix = "hf"
    description = "Hugging Face transformers: every model type, base model and task heads"
    rank = 30
    library = "transformers"

    def list_models(self) -> list[ZooEntry]:
        import warnings

        from narcli.compat import ensure_torchvision_importable

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

        from narcli.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import transformers
        from transformers import AutoConfig

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = AutoConfig.for_model(entry.family)
            model_class = getattr(transformers, entry.extra["class"])
            model = build_on_meta(lambda: model_class(config))
        model.eval()
        names, tensors = _inputs(model, config)
        return BuiltModel(_KeywordCall(model, names), tensors, input_names=names)


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
    if main == "pixel_values" or (main != "input_ids" and "pixel_values" in params and main not in params):
        size = _find(config, "image_size", "img_size", default=224)
        if isinstance(size, (list, tuple)):
            size = tuple(int(s) for s in size[-2:])
        else:
            size = (int(size), int(size))
        channels = int(_find(config, "num_channels", "in_channels", "in_chans", default=3))
        add("pixel_values", (1, channels, *size))
    elif main == "input_values":
        add("input_values", (1, AUDIO_SAMPLES))
    elif main == "input_features":
        mels = int(_find(config, "num_mel_bins", "feature_size", "input_feat_per_channel", default=80))
        frames = _find(config, "max_source_positions", default=1500)
        if "whisper" in type(model).__module__ or getattr(config, "model_type", "") in ("whisper",):
            add("input_features", (1, mels, 2 * int(frames)))
        else:
            add("input_features", (1, 200, mels))
    else:
        add(main if main in params else "input_ids", (1, seq), torch.long)
    required = _required(type(model))
    if "input_ids" in required and "input_ids" not in names:
        add("input_ids", (1, seq), torch.long)
    if names == ["input_ids"] and "pixel_values" in params and ("pixel_values" in required or _dual_encoder(config)):
        size = _find(config, "image_size", default=224)
        add("pixel_values", (1, 3, int(size), int(size)) if isinstance(size, int) else (1, 3, *size[-2:]))
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        add("decoder_input_ids", (1, DECODER_SEQUENCE), torch.long)
    return names, tensors


def _dual_encoder(config: object) -> bool:
    """CLIP-like: separate text and vision towers, no image tokens spliced into the text."""
    vision = getattr(config, "vision_config", None)
    return getattr(config, "text_config", None) is not None and vision is not None and not any(
        hasattr(config, a) for a in ("image_token_id", "image_token_index"))


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [TransformersSource()]
