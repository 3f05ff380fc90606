"""nar zoo source: every transformers `model_type` whose default config builds, base model and heads.

Family = the `model_type`. Inputs come from the model's `main_input_name` and its config: token ids,
pixel values, raw audio or audio features; encoder-decoders also get decoder token ids.
Beside each default config (often a 7B decoder), the most-used decoder and encoder families also get
the published sizes of their small checkpoints (`SIZES`), named as the checkpoint is.
"""

from __future__ import annotations

from typing import Any

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
    # BertForPreTraining and its kind (masked-LM and next-sentence heads); a model type whose
    # pre-training class is one of the heads above is not listed twice
    "pretraining": "MODEL_FOR_PRETRAINING_MAPPING_NAMES",
}


# The architecture-shaping fields of published checkpoints' config.json (Hugging Face hub), by
# model type: people write these designs at tutorial and small-model sizes, and with the default
# config alone a hand-written 125M Llama sits nearer a 210M encoder of another name than the 7B
# Llama. Each is listed under the head its checkpoint ships with.
LLAMA_3 = {"vocab_size": 128256, "num_key_value_heads": 8, "tie_word_embeddings": True}
QWEN = {"vocab_size": 151936, "tie_word_embeddings": True}
SIZES: dict[str, dict[str, dict]] = {
    "llama": {  # SmolLM2 and TinyLlama are Llama architectures (model_type llama)
        "smollm2-135m": {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                         "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152,
                         "tie_word_embeddings": True},
        "smollm2-360m": {"hidden_size": 960, "intermediate_size": 2560, "num_hidden_layers": 32,
                         "num_attention_heads": 15, "num_key_value_heads": 5, "vocab_size": 49152,
                         "tie_word_embeddings": True},
        "tinyllama-1.1b": {"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
                           "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000},
        "llama-3.2-1b": {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
                         "num_attention_heads": 32, **LLAMA_3},
        "llama-3.2-3b": {"hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
                         "num_attention_heads": 24, **LLAMA_3},
    },
    "qwen2": {
        "qwen2.5-0.5b": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                         "num_attention_heads": 14, "num_key_value_heads": 2, **QWEN},
        "qwen2.5-1.5b": {"hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
                         "num_attention_heads": 12, "num_key_value_heads": 2, **QWEN},
    },
    "qwen3": {
        "qwen3-0.6b": {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
                       "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, **QWEN},
        "qwen3-1.7b": {"hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28,
                       "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, **QWEN},
    },
    "gpt2": {
        "distilgpt2": {"n_embd": 768, "n_layer": 6, "n_head": 12},
        "gpt2-medium": {"n_embd": 1024, "n_layer": 24, "n_head": 16},
        "gpt2-large": {"n_embd": 1280, "n_layer": 36, "n_head": 20},
        "gpt2-xl": {"n_embd": 1600, "n_layer": 48, "n_head": 25},
    },
    "bart": {"bart-base": {"d_model": 768, "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 12,
                           "decoder_attention_heads": 12, "encoder_ffn_dim": 3072, "decoder_ffn_dim": 3072}},
    "bert": {  # google's BERT-large and the compact BERTs (bert_uncased_L-4_H-256_A-4, L-8_H-512_A-8)
        "bert-large-uncased": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                               "intermediate_size": 4096},
        "bert-mini": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024},
        "bert-medium": {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8, "intermediate_size": 2048},
    },
}
SIZED_TASK = {"bert": "masked-lm", "bart": "seq2seq-lm"}  # the head a family's checkpoints ship with; causal-lm otherwise


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
            listed_classes = set()
            for task in TASKS:
                class_name = _class_name(auto, task, model_type)
                if class_name and not (task == "pretraining" and class_name in listed_classes):
                    listed_classes.add(class_name)
                    name = model_type if task == "base" else f"{model_type}/{task}"
                    entries.append(ZooEntry(name, model_type, "feature-extraction" if task == "base" else task,
                                            {"class": class_name}, unsupported=_unsupported(class_name)))
        listed = {e.family for e in entries}
        for model_type, sizes in SIZES.items():
            task = SIZED_TASK.get(model_type, "causal-lm")
            class_name = _class_name(auto, task, model_type)
            if model_type not in listed or not class_name:  # an older transformers without it
                continue
            for checkpoint, fields in sizes.items():
                entries.append(ZooEntry(checkpoint, model_type, task, {"class": class_name, "config": fields},
                                        unsupported=_unsupported(class_name)))
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
            config = AutoConfig.for_model(entry.family, **entry.extra.get("config", {}))
        module, tensors, names, model = build_transformers(getattr(transformers, entry.extra["class"]), config)
        return BuiltModel(module, tensors, input_names=names, weights=model)


def _class_name(auto: Any, task: str, model_type: str) -> str | None:
    """The class transformers' auto-mapping of `task` names for `model_type` (the first of several)."""
    class_name = getattr(auto, TASKS[task], {}).get(model_type)
    return class_name[0] if isinstance(class_name, (list, tuple)) else class_name


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
