"""nar zoo source: every transformers `model_type` whose default config builds, base model and heads.

Family = the `model_type`. Inputs come from the model's `main_input_name` and its config: token ids,
pixel values, raw audio or audio features; encoder-decoders also get decoder token ids.
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import (
    SUPPORTED_INPUTS,
    BuiltModel,
    ZooEntry,
    ZooSource,
    build_transformers,
    required_inputs,
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
        module, tensors, names, model = build_transformers(getattr(transformers, entry.extra["class"]), config)
        return BuiltModel(module, tensors, input_names=names, weights=model)


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
    needs = [n for n in required_inputs(model_class) if n not in SUPPORTED_INPUTS]
    return f"needs input {', '.join(needs)}" if needs else ""


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [TransformersSource()]
