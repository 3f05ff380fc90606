"""Composite designs: a decoder (the zoo family) built over a backbone that another family names.

smp's `unet_resnet34` is a U-Net decoder over a ResNet-34 encoder; MONAI's FlexibleUNet takes its
encoder by name the same way. The family says which decoder the author chose; the backbone says
what most of the graph is. Both are read from the model id the source gave it (the sources below
name their models `<decoder>_<backbone>`), so reading them needs neither the plugin nor the library.
"""

from __future__ import annotations

import re

# source -> how its model ids name the backbone (group "backbone")
ID_PATTERNS = {
    "smp": re.compile(r"^smp/[^_/]+_(?P<backbone>.+)$"),
    "monai": re.compile(r"^monai/flexible_unet_(?P<backbone>.+)_[23]d$"),
}


def backbone_of(model_id: str) -> str:
    """The backbone a composite zoo model is built over ('' for a model that is not composite)."""
    source = model_id.split("/", 1)[0]
    pattern = ID_PATTERNS.get(source)
    match = pattern.match(model_id) if pattern else None
    return match["backbone"] if match else ""


def design_label(family: str, backbone: str) -> str:
    """'unet over resnet34' for a composite design, the family alone otherwise."""
    return f"{family} over {backbone}" if family and backbone else family
