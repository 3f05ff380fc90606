"""nar zoo source `monai`: MONAI's medical-imaging networks (segmentation, classification,
registration, autoencoders and generative models), each in 2D and 3D where MONAI builds both, in a
few sizes, on `meta` (no weights, no downloads).

Family = the design (`unet`, `unetr`, `swin-unetr`, `segresnet`, `dynunet`, ...), shared with other
sources where the design is the same (a DenseNet-121 is `densenet` here and in timm).
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource

SIZE = {2: 128, 3: 96}  # input side: 2D slices, and the 96^3 patches UNETR/Swin-UNETR train on
LEVELS5 = (16, 32, 64, 128, 256)
SIDE_OVERRIDE = {"ahnet_3d": 128}  # its pyramid pooling needs at least 64 voxels a side after the stem


def _specs() -> list[tuple[str, str, str, str, dict, int]]:
    """(name, family, task, constructor, keyword arguments, input channels), 2D and 3D."""
    specs: list[tuple[str, str, str, str, dict, int]] = []

    def add(name: str, family: str, task: str, ctor: str, kwargs: dict, channels: int = 1,
            dims: tuple[int, ...] = (2, 3)) -> None:
        for d in dims:
            args = {k: (v(d) if callable(v) else v) for k, v in kwargs.items()}
            specs.append((f"{name}_{d}d", family, task, ctor, {"spatial_dims": d, **args}, channels))

    seg, cls, ae, reg = "semantic-segmentation", "image-classification", "autoencoding", "registration"
    for units in (0, 2):
        add(f"unet_res{units}", "unet", seg, "UNet",
            {"in_channels": 1, "out_channels": 2, "channels": LEVELS5, "strides": (2, 2, 2, 2), "num_res_units": units})
    add("unet_wide", "unet", seg, "UNet", {"in_channels": 1, "out_channels": 3, "channels": (32, 64, 128, 256, 512),
                                           "strides": (2, 2, 2, 2), "num_res_units": 2})
    add("basic_unet", "unet", seg, "BasicUNet", {"in_channels": 1, "out_channels": 2})
    add("basic_unet_small", "unet", seg, "BasicUNet", {"in_channels": 1, "out_channels": 2, "features": (16, 16, 32, 64, 128, 16)})
    add("basic_unetpp", "unet++", seg, "BasicUNetPlusPlus", {"in_channels": 1, "out_channels": 2})
    add("attention_unet", "attention-unet", seg, "AttentionUnet",
        {"in_channels": 1, "out_channels": 2, "channels": LEVELS5, "strides": (2, 2, 2, 2)})
    add("attention_unet_small", "attention-unet", seg, "AttentionUnet",
        {"in_channels": 1, "out_channels": 2, "channels": (16, 32, 64, 128), "strides": (2, 2, 2)})
    for levels in (5, 6):
        add(f"dynunet_{levels}", "dynunet", seg, "DynUNet",
            {"in_channels": 1, "out_channels": 2, "kernel_size": lambda d: [[3] * d] * levels,
             "strides": lambda d: [[1] * d] + [[2] * d] * (levels - 1), "upsample_kernel_size": lambda d: [[2] * d] * (levels - 1)})
    for filters in (8, 16, 32):
        add(f"segresnet_{filters}", "segresnet", seg, "SegResNet", {"init_filters": filters, "in_channels": 4, "out_channels": 3}, 4)
    add("segresnet_ds", "segresnet", seg, "SegResNetDS", {"init_filters": 32, "in_channels": 1, "out_channels": 2})
    add("segresnet_vae", "segresnet", seg, "SegResNetVAE", {"input_image_size": lambda d: (SIZE[d],) * d,
                                                            "in_channels": 4, "out_channels": 3}, 4)
    for features, hidden, heads in ((16, 768, 12), (32, 768, 12), (16, 384, 6)):
        add(f"unetr_f{features}_h{hidden}", "unetr", seg, "UNETR",
            {"in_channels": 1, "out_channels": 14, "img_size": lambda d: (SIZE[d],) * d, "feature_size": features,
             "hidden_size": hidden, "mlp_dim": hidden * 4, "num_heads": heads})
    for features in (24, 48):
        add(f"swin_unetr_f{features}", "swin-unetr", seg, "SwinUNETR", {"in_channels": 1, "out_channels": 14, "feature_size": features})
    add("swin_unetr_v2", "swin-unetr", seg, "SwinUNETR", {"in_channels": 1, "out_channels": 14, "feature_size": 24, "use_v2": True})
    add("vnet", "vnet", seg, "VNet", {"in_channels": 1, "out_channels": 2}, dims=(3,))
    add("highresnet", "highresnet", seg, "HighResNet", {"in_channels": 1, "out_channels": 2})
    for backbone in ("efficientnet-b0", "efficientnet-b2", "efficientnet-b4", "resnet18", "resnet34", "resnet50"):
        add(f"flexible_unet_{backbone}", "unet", seg, "FlexibleUNet",
            {"in_channels": 1, "out_channels": 2, "backbone": backbone, "pretrained": False})
    for size in ("S", "B", "M", "L"):
        add(f"mednext_{size.lower()}", "mednext", seg, f"MedNeXt{size}", {"in_channels": 1, "out_channels": 2})
    add("mednext_k5", "mednext", seg, "MedNeXt", {"in_channels": 1, "out_channels": 2, "kernel_size": 5})
    add("daf3d", "daf3d", seg, "DAF3D", {"in_channels": 1, "out_channels": 1}, dims=())
    specs.append(("daf3d_3d", "daf3d", seg, "DAF3D", {"in_channels": 1, "out_channels": 1}, 1))
    add("ahnet", "ahnet", seg, "AHNet", {"in_channels": 1, "out_channels": 2})
    for depth in (121, 169, 201):
        add(f"densenet{depth}", "densenet", cls, f"DenseNet{depth}", {"in_channels": 1, "out_channels": 2})
    for depth in (10, 18, 34, 50, 101):
        add(f"resnet{depth}", "resnet", cls, f"resnet{depth}", {"n_input_channels": 1, "num_classes": 2})
    for ctor in ("SEResNet50", "SEResNeXt50", "SENet154"):
        add(ctor.lower(), "senet", cls, ctor, {"in_channels": 1, "num_classes": 2})
    for b in range(4):
        add(f"efficientnet_b{b}", "efficientnet", cls, "EfficientNetBN",
            {"model_name": f"efficientnet-b{b}", "pretrained": False, "in_channels": 1, "num_classes": 2})
    add("vit_classifier", "vit", cls, "ViT", {"in_channels": 1, "img_size": lambda d: (SIZE[d],) * d,
                                              "patch_size": lambda d: (16,) * d, "classification": True, "num_classes": 2})
    add("autoencoder", "autoencoder", ae, "AutoEncoder",
        {"in_channels": 1, "out_channels": 1, "channels": (16, 32, 64), "strides": (2, 2, 2), "num_res_units": 2})
    add("var_autoencoder", "vae", ae, "VarAutoEncoder",
        {"in_shape": lambda d: (1,) + (SIZE[d],) * d, "out_channels": 1, "latent_size": 64,
         "channels": (16, 32, 64), "strides": (2, 2, 2)})
    add("vit_autoenc", "vit-autoencoder", ae, "ViTAutoEnc", {"in_channels": 1, "img_size": lambda d: (SIZE[d],) * d,
                                                            "patch_size": lambda d: (16,) * d})
    add("autoencoder_kl", "autoencoder-kl", ae, "AutoencoderKL",
        {"in_channels": 1, "out_channels": 1, "channels": (32, 64, 64), "latent_channels": 3,
         "attention_levels": (False, False, True), "num_res_blocks": 1, "norm_num_groups": 32})
    add("vqvae", "vq-vae", ae, "VQVAE", {"in_channels": 1, "out_channels": 1, "channels": (64, 128),
                                         "num_res_channels": 64, "num_res_layers": 2,
                                         "downsample_parameters": ((2, 4, 1, 1), (2, 4, 1, 1)),
                                         "upsample_parameters": ((2, 4, 1, 1, 0), (2, 4, 1, 1, 0)),
                                         "num_embeddings": 256, "embedding_dim": 32})
    add("patch_discriminator", "patchgan", "generation", "PatchDiscriminator",
        {"num_layers_d": 3, "channels": 64, "in_channels": 1, "out_channels": 1})
    add("localnet", "localnet", reg, "LocalNet", {"in_channels": 2, "num_channel_initial": 16, "extract_levels": (0, 1, 2, 3),
                                                  "out_channels": lambda d: d}, 2)
    add("regunet", "regunet", reg, "RegUNet", {"in_channels": 2, "num_channel_initial": 16, "depth": 3,
                                               "out_channels": lambda d: d}, 2)
    add("globalnet", "globalnet", reg, "GlobalNet", {"image_size": lambda d: (SIZE[d],) * d, "in_channels": 2,
                                                     "num_channel_initial": 16, "depth": 3}, 2)
    return specs


SPECS = {name: spec for name, *spec in _specs()}


class MonaiSource(ZooSource):
    name = "monai"
    description = "MONAI: medical-imaging U-Nets, UNETR/Swin-UNETR, SegResNet, nnU-Net (DynUNet), MedNeXt, VNet, registration nets"
    rank = 45
    library = "monai"

    def list_models(self) -> list[ZooEntry]:
        return [ZooEntry(name, family, task) for name, (family, task, *_) in SPECS.items()]

    def build(self, entry: ZooEntry) -> BuiltModel:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()  # DAF3D builds on a torchvision ResNet
        import monai.networks.nets as nets
        import torch

        from narcli.sources import build_on_meta

        _, _, ctor, kwargs, channels = SPECS[entry.name]
        model = build_on_meta(lambda: getattr(nets, ctor)(**kwargs).eval())
        dims = kwargs.get("spatial_dims", 3)  # DAF3D is 3D only and takes no spatial_dims
        shape = (1, channels) + (SIDE_OVERRIDE.get(entry.name, SIZE[dims]),) * dims
        return BuiltModel(model, [torch.empty(shape, device="meta")], input_names=["image"])


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [MonaiSource()]
