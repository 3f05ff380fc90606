"""nar zoo source `torchaudio`: torchaudio's models (speech recognition, self-supervised speech,
separation, enhancement assessment, synthesis, vocoders), built on `meta` from their factory
functions (no weights, no downloads).

Family = the design (`wav2vec2`, `hubert`, `wavlm` are shared with the transformers source's model
types of the same name). Models that take lengths are traced with full-length inputs.
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource

SECOND = 16000
# name -> (family, task, factory, keyword arguments, inputs: [(shape, dtype)])
MODELS: dict[str, tuple] = {
    "wav2letter_waveform": ("wav2letter", "speech-recognition", "Wav2Letter", {"num_classes": 40, "input_type": "waveform",
                                                                               "num_features": 1}, [((1, 1, SECOND), "float")]),
    "wav2letter_mfcc": ("wav2letter", "speech-recognition", "Wav2Letter", {"num_classes": 40, "input_type": "mfcc",
                                                                          "num_features": 13}, [((1, 13, 200), "float")]),
    "deepspeech": ("deepspeech", "speech-recognition", "DeepSpeech", {"n_feature": 80, "n_class": 40},
                   [((1, 1, 200, 80), "float")]),
    "conformer_small": ("conformer", "speech-recognition", "Conformer",
                        {"input_dim": 80, "num_heads": 4, "ffn_dim": 256, "num_layers": 4, "depthwise_conv_kernel_size": 31},
                        [((1, 200, 80), "float")]),
    "conformer_base": ("conformer", "speech-recognition", "Conformer",
                       {"input_dim": 144, "num_heads": 4, "ffn_dim": 576, "num_layers": 16, "depthwise_conv_kernel_size": 31},
                       [((1, 200, 144), "float")]),
    "emformer_base": ("emformer", "speech-recognition", "Emformer",
                      {"input_dim": 512, "num_heads": 8, "ffn_dim": 2048, "num_layers": 20, "segment_length": 4},
                      [((1, 200, 512), "float"), ((1,), "length")]),
    "conv_tasnet_base": ("conv-tasnet", "source-separation", "conv_tasnet_base", {}, [((1, 1, SECOND), "float")]),
    "conv_tasnet_small": ("conv-tasnet", "source-separation", "ConvTasNet",
                          {"num_sources": 2, "enc_num_feats": 256, "msk_num_hidden_feats": 256, "msk_num_layers": 6,
                           "msk_num_stacks": 2}, [((1, 1, SECOND), "float")]),
    "hdemucs_low": ("hdemucs", "source-separation", "hdemucs_low", {"sources": ["drums", "bass", "other", "vocals"]},
                    [((1, 2, 44100), "float")]),
    "hdemucs_medium": ("hdemucs", "source-separation", "hdemucs_medium", {"sources": ["drums", "bass", "other", "vocals"]},
                       [((1, 2, 44100), "float")]),
    "hdemucs_high": ("hdemucs", "source-separation", "hdemucs_high", {"sources": ["drums", "bass", "other", "vocals"]},
                     [((1, 2, 44100), "float")]),
    "wavernn": ("wavernn", "vocoder", "WaveRNN", {"upsample_scales": [5, 5, 8], "n_classes": 256, "hop_length": 200},
                [((1, 1, 200 * 60), "float"), ((1, 1, 128, 64), "float")]),
    "squim_objective": ("squim", "speech-quality", "squim_objective_base", {}, [((1, SECOND), "float")]),
    "squim_subjective": ("squim", "speech-quality", "squim_subjective_base", {},
                         [((1, SECOND), "float"), ((1, SECOND), "float")]),
    "emformer_rnnt_base": ("rnnt", "speech-recognition", "emformer_rnnt_base", {"num_symbols": 4097},
                           [((1, 200, 80), "float"), ((1,), "length"), ((1, 20), "token"), ((1,), "token_length")]),
}
for _name in ("wav2vec2_base", "wav2vec2_large", "wav2vec2_large_lv60k", "wav2vec2_xlsr_300m", "wav2vec2_xlsr_1b",
              "hubert_base", "hubert_large", "hubert_xlarge", "wavlm_base", "wavlm_large"):
    MODELS[_name] = (_name.split("_")[0], "speech-representation", _name, {}, [((1, SECOND), "float")])


class TorchaudioSource(ZooSource):
    name = "torchaudio"
    description = "torchaudio: wav2vec 2.0/HuBERT/WavLM, Conformer, Emformer RNN-T, DeepSpeech, Conv-TasNet, HDemucs, WaveRNN, SQUIM"
    rank = 45
    library = "torchaudio"

    def list_models(self) -> list[ZooEntry]:
        return [ZooEntry(name, family, task) for name, (family, task, *_) in MODELS.items()]

    def build(self, entry: ZooEntry) -> BuiltModel:
        from narcli.trace.compat import ensure_torchaudio_importable

        ensure_torchaudio_importable()
        import torch
        import torchaudio.models as models

        from narcli.sources import build_on_meta

        _, _, factory, kwargs, inputs = MODELS[entry.name]
        model = build_on_meta(lambda: getattr(models, factory)(**kwargs).eval())
        if factory == "Conformer":
            model = _UnpaddedConformer(model)
        tensors = []
        for shape, kind in inputs:
            if kind == "float":
                tensors.append(torch.empty(shape, device="meta"))
            else:  # lengths are the full length of the tensor before them (tokens: ids in range)
                full = {"length": 200, "token": 0, "token_length": 20}[kind]
                tensors.append(torch.full(shape, full, dtype=torch.long, device="meta"))
        return BuiltModel(model, tensors)


def _UnpaddedConformer(conformer):  # noqa: N802 (stands in for a class)
    """The Conformer's layers over a full-length batch. Its own forward builds the padding mask
    from `lengths.max().item()`, a value a meta tensor does not have; unpadded, the mask is empty
    and the layers compute the same."""
    import torch

    class UnpaddedConformer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conformer = conformer

        def forward(self, features: torch.Tensor) -> torch.Tensor:
            x = features.transpose(0, 1)
            for layer in self.conformer.conformer_layers:
                x = layer(x, None)
            return x.transpose(0, 1)

    return UnpaddedConformer()


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [TorchaudioSource()]
