"""nar zoo source `smp`: segmentation-models-pytorch's architectures (U-Net, U-Net++, FPN, PSPNet,
DeepLabV3/V3+, LinkNet, MA-Net, PAN, UPerNet, SegFormer, DPT) over a spread of encoders, built on
`meta` with `encoder_weights=None` (no downloads).

Family = the decoder architecture (`unet`, `fpn`, ...): that is what smp's user chose, and the
encoder is a backbone the zoo already knows from timm. The encoder is kept in the entry's `extra`.
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource

# smp class -> family; SegFormer and UPerNet keep the names the transformers/mmseg models use
ARCHITECTURES = {
    "Unet": "unet", "UnetPlusPlus": "unet++", "MAnet": "manet", "Linknet": "linknet", "FPN": "fpn",
    "PSPNet": "pspnet", "DeepLabV3": "deeplabv3", "DeepLabV3Plus": "deeplabv3+", "PAN": "pan",
    "UPerNet": "upernet", "Segformer": "segformer", "DPT": "dpt",
}
# timm backbones reached through smp's `tu-` prefix: families the native list lacks, CNN and
# hierarchical transformer alike (DPT takes only plain ViTs, listed apart)
TIMM_ENCODERS = (
    "convnext_atto", "convnext_tiny", "convnextv2_nano", "regnetx_032", "regnety_040", "regnetz_b16",
    "efficientnetv2_rw_s", "tf_efficientnetv2_b0", "resnest26d", "res2net50_26w_4s", "cspdarknet53",
    "cspresnext50", "dla34", "ghostnet_100", "mobilenetv3_large_100", "mobilenetv4_conv_small",
    "rexnet_100", "fbnetv3_b", "lcnet_100", "repvgg_a2", "mixnet_s", "resnet50d", "seresnext26d_32x4d",
    "ecaresnet50t", "gernet_m", "hrnet_w18_small", "efficientvit_b1", "fastvit_t8", "caformer_s18",
    "pvt_v2_b1", "mambaout_femto", "inception_next_tiny", "hgnetv2_b0", "tiny_vit_5m_224",
)
VIT_ENCODERS = ("vit_small_patch16_384", "vit_base_patch16_384", "vit_large_patch16_384",
                "deit_small_patch16_224", "deit3_small_patch16_384", "eva02_small_patch14_224",
                "vit_small_patch16_dinov3", "vit_base_patch14_reg4_dinov2")
DEFAULT_SIZE = 512
# combinations smp itself refuses: its dilated decoders (output stride 8 or 16) need an encoder that
# can trade pooling for dilation; U-Net++ and LinkNet need a convolutional first stage
DILATED = ("DeepLabV3", "DeepLabV3Plus", "PAN")
NOT_DILATABLE = ("vgg", "densenet", "inception", "xception", "tu-hrnet", "tu-dla", "tu-ghostnet", "tu-efficientvit",
                 "tu-fastvit", "tu-caformer", "tu-pvt_v2", "tu-mambaout", "tu-hgnetv2", "tu-tiny_vit")


def refused(cls: str, encoder: str) -> str:
    """Why smp refuses this decoder over this encoder ('' when it builds)."""
    if cls in DILATED and encoder.startswith(NOT_DILATABLE):
        return f"smp: {cls} needs a dilatable encoder; {encoder} downsamples by pooling or has no output_stride"
    if cls in ("UnetPlusPlus", "Linknet") and encoder.startswith("mit_"):
        return f"smp: {cls} does not take the Mix Transformer encoder {encoder}"
    return ""


class SmpSource(ZooSource):
    name = "smp"
    description = "segmentation-models-pytorch: U-Net, U-Net++, FPN, PSPNet, DeepLab, LinkNet, MA-Net, PAN, UPerNet, SegFormer, DPT"
    rank = 40
    library = "segmentation_models_pytorch"
    distribution = "segmentation-models-pytorch"

    def list_models(self) -> list[ZooEntry]:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        from segmentation_models_pytorch.encoders import encoders as native

        entries = []
        for cls, family in ARCHITECTURES.items():
            if cls == "DPT":
                encoders = [f"tu-{name}" for name in VIT_ENCODERS]
            else:
                encoders = sorted(native) + [f"tu-{name}" for name in TIMM_ENCODERS]
            for encoder in encoders:
                name = f"{family}_{encoder}".replace("tu-", "timm-")
                entries.append(ZooEntry(name, family, "semantic-segmentation", {"class": cls, "encoder": encoder},
                                       unsupported=refused(cls, encoder)))
        return entries

    def build(self, entry: ZooEntry) -> BuiltModel:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import segmentation_models_pytorch as smp
        import torch

        from narcli.sources import build_on_meta

        cls, encoder = entry.extra["class"], entry.extra["encoder"]
        kwargs = {"encoder_name": encoder, "encoder_weights": None, "classes": 21}
        if cls == "DPT":
            kwargs["dynamic_img_size"] = True
        model = build_on_meta(lambda: getattr(smp, cls)(**kwargs).eval())
        size = DEFAULT_SIZE
        if cls == "DPT" or encoder.startswith(("tu-tiny_vit", "tu-efficientvit")):
            size = 384 if "384" in encoder else 224  # fixed-size position embeddings / attention windows
        return BuiltModel(model, [torch.empty((1, 3, size, size), device="meta")], input_names=["pixel_values"])


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [SmpSource()]
