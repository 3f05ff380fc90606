"""nar zoo source `diffusers`: the denoising networks and autoencoders of diffusion models, built on
`meta` from the configs their well-known checkpoints publish (no weights, no downloads).

Family = the diffusers model class (`unet-2d-condition`, `autoencoder-kl`, `dit`, ...); the task
says what the network does in a pipeline (denoising, latent autoencoding, conditioning).
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource

SD15 = {"sample_size": 64, "cross_attention_dim": 768, "attention_head_dim": 8}
SD2 = {"sample_size": 96, "cross_attention_dim": 1024, "attention_head_dim": [5, 10, 20, 20], "use_linear_projection": True}
SDXL = {"sample_size": 128, "block_out_channels": [320, 640, 1280], "layers_per_block": 2,
        "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
        "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
        "transformer_layers_per_block": [1, 2, 10], "cross_attention_dim": 2048, "attention_head_dim": [5, 10, 20],
        "addition_embed_type": "text_time", "addition_time_embed_dim": 256,
        "projection_class_embeddings_input_dim": 2816, "use_linear_projection": True}
SD_VAE = {"block_out_channels": [128, 256, 512, 512], "layers_per_block": 2, "latent_channels": 4,
          "down_block_types": ["DownEncoderBlock2D"] * 4, "up_block_types": ["UpDecoderBlock2D"] * 4}
DDPM_CIFAR = {"sample_size": 32, "block_out_channels": [128, 256, 256, 256],
              "down_block_types": ["DownBlock2D", "AttnDownBlock2D", "DownBlock2D", "DownBlock2D"],
              "up_block_types": ["UpBlock2D", "UpBlock2D", "AttnUpBlock2D", "UpBlock2D"]}

# name -> (family, task, class, config, inputs: [(argument, shape, dtype)], extra keyword inputs)
MODELS: dict[str, tuple] = {
    "ddpm_cifar10_unet": ("unet-2d", "denoising", "UNet2DModel", DDPM_CIFAR,
                          [("sample", (1, 3, 32, 32), "float"), ("timestep", (1,), "long")]),
    "ddpm_256_unet": ("unet-2d", "denoising", "UNet2DModel", {"sample_size": 256},
                      [("sample", (1, 3, 256, 256), "float"), ("timestep", (1,), "long")]),
    "ldm_unet_small": ("unet-2d", "denoising", "UNet2DModel",
                       {"sample_size": 64, "in_channels": 4, "out_channels": 4, "block_out_channels": [128, 256, 512],
                        "down_block_types": ["DownBlock2D", "AttnDownBlock2D", "AttnDownBlock2D"],
                        "up_block_types": ["AttnUpBlock2D", "AttnUpBlock2D", "UpBlock2D"]},
                       [("sample", (1, 4, 64, 64), "float"), ("timestep", (1,), "long")]),
    "sd15_unet": ("unet-2d-condition", "denoising", "UNet2DConditionModel", SD15,
                  [("sample", (1, 4, 64, 64), "float"), ("timestep", (1,), "long"), ("encoder_hidden_states", (1, 77, 768), "float")]),
    "sd2_unet": ("unet-2d-condition", "denoising", "UNet2DConditionModel", SD2,
                 [("sample", (1, 4, 96, 96), "float"), ("timestep", (1,), "long"), ("encoder_hidden_states", (1, 77, 1024), "float")]),
    "sdxl_unet": ("unet-2d-condition", "denoising", "UNet2DConditionModel", SDXL,
                  [("sample", (1, 4, 128, 128), "float"), ("timestep", (1,), "long"), ("encoder_hidden_states", (1, 77, 2048), "float"),
                   ("text_embeds", (1, 1280), "float"), ("time_ids", (1, 6), "float")]),
    "sd_vae": ("autoencoder-kl", "latent-autoencoding", "AutoencoderKL", SD_VAE, [("sample", (1, 3, 256, 256), "float")]),
    "sdxl_vae": ("autoencoder-kl", "latent-autoencoding", "AutoencoderKL", {**SD_VAE, "force_upcast": True},
                 [("sample", (1, 3, 512, 512), "float")]),
    "autoencoder_kl_small": ("autoencoder-kl", "latent-autoencoding", "AutoencoderKL", {},
                             [("sample", (1, 3, 64, 64), "float")]),
    "vq_model": ("vq-model", "latent-autoencoding", "VQModel",
                 {"block_out_channels": [128, 256, 512], "down_block_types": ["DownEncoderBlock2D"] * 3,
                  "up_block_types": ["UpDecoderBlock2D"] * 3, "latent_channels": 3, "num_vq_embeddings": 8192},
                 [("sample", (1, 3, 256, 256), "float")]),
    "sd15_controlnet": ("controlnet", "conditioning", "ControlNetModel", {"cross_attention_dim": 768},
                        [("sample", (1, 4, 64, 64), "float"), ("timestep", (1,), "long"),
                         ("encoder_hidden_states", (1, 77, 768), "float"), ("controlnet_cond", (1, 3, 512, 512), "float")]),
    "dit_xl_2": ("dit", "denoising", "DiTTransformer2DModel", {},
                 [("hidden_states", (1, 4, 32, 32), "float"), ("timestep", (1,), "long"), ("class_labels", (1,), "long")]),
    "dit_l_2": ("dit", "denoising", "DiTTransformer2DModel", {"num_layers": 24, "num_attention_heads": 16},
                [("hidden_states", (1, 4, 32, 32), "float"), ("timestep", (1,), "long"), ("class_labels", (1,), "long")]),
    "dit_b_2": ("dit", "denoising", "DiTTransformer2DModel", {"num_layers": 12, "num_attention_heads": 12},
                [("hidden_states", (1, 4, 32, 32), "float"), ("timestep", (1,), "long"), ("class_labels", (1,), "long")]),
    "pixart_alpha": ("pixart", "denoising", "PixArtTransformer2DModel", {"sample_size": 64, "caption_channels": 4096},
                     [("hidden_states", (1, 4, 64, 64), "float"), ("encoder_hidden_states", (1, 120, 4096), "float"),
                      ("timestep", (1,), "long")]),
    "sd3_transformer": ("sd3-transformer", "denoising", "SD3Transformer2DModel", {"sample_size": 64, "num_layers": 24},
                        [("hidden_states", (1, 16, 64, 64), "float"), ("encoder_hidden_states", (1, 154, 4096), "float"),
                         ("pooled_projections", (1, 2048), "float"), ("timestep", (1,), "long")]),
    "flux_transformer": ("flux-transformer", "denoising", "FluxTransformer2DModel", {"guidance_embeds": True},
                         [("hidden_states", (1, 1024, 64), "float"), ("encoder_hidden_states", (1, 512, 4096), "float"),
                          ("pooled_projections", (1, 768), "float"), ("timestep", (1,), "float"),
                          ("img_ids", (1024, 3), "float"), ("txt_ids", (512, 3), "float"), ("guidance", (1,), "float")]),
    "unet_3d_condition": ("unet-3d-condition", "video-denoising", "UNet3DConditionModel", {"cross_attention_dim": 1024},
                          [("sample", (1, 4, 8, 32, 32), "float"), ("timestep", (1,), "long"),
                           ("encoder_hidden_states", (1, 77, 1024), "float")]),
}
ADDED_CONDITIONS = ("text_embeds", "time_ids")  # SDXL's micro-conditioning, passed as `added_cond_kwargs`


class DiffusersSource(ZooSource):
    name = "diffusers"
    description = "diffusers: DDPM/LDM/SD U-Nets, VAEs, VQ-GAN, ControlNet, DiT, PixArt, SD3 and Flux transformers"
    rank = 35
    library = "diffusers"

    def list_models(self) -> list[ZooEntry]:
        return [ZooEntry(name, family, task) for name, (family, task, *_) in MODELS.items()]

    def build(self, entry: ZooEntry) -> BuiltModel:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()  # diffusers imports torchvision and torchaudio when present
        import diffusers
        import torch

        _, _, cls, config, inputs = MODELS[entry.name]
        with torch.device("meta"):
            inner = getattr(diffusers, cls)(**config).eval()
        names = [name for name, _, _ in inputs]

        class Denoiser(torch.nn.Module):
            """Keyword arguments in, the first output tensor out (diffusers returns dataclasses)."""

            def __init__(self) -> None:
                super().__init__()
                self.model = inner

            def forward(self, *args: torch.Tensor) -> torch.Tensor:
                kwargs = dict(zip(names, args))
                added = {k: kwargs.pop(k) for k in ADDED_CONDITIONS if k in kwargs}
                if added:
                    kwargs["added_cond_kwargs"] = added
                if cls in ("AutoencoderKL", "VQModel"):  # encode and decode: the whole autoencoder
                    out = self.model(kwargs.pop("sample"), return_dict=False)
                else:
                    out = self.model(**kwargs, return_dict=False)
                return out[0] if isinstance(out, (tuple, list)) else out

        tensors = [torch.zeros(shape, dtype=torch.long, device="meta") if dtype == "long" else
                   torch.empty(shape, device="meta") for _, shape, dtype in inputs]
        return BuiltModel(Denoiser(), tensors, input_names=names, weights=inner)


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [DiffusersSource()]
