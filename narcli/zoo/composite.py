"""Composite designs: a decoder (the zoo family) built over a backbone that another family names.

smp's `unet_resnet34` is a U-Net decoder over a ResNet-34 encoder; MONAI's FlexibleUNet takes its
encoder by name the same way. The family says which decoder the author chose; the backbone says
what most of the graph is. Both are read from the model id the source gave it (the sources below
name their models `<decoder>_<backbone>`), so reading them needs neither the plugin nor the library.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

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


Signatures = dict[str, list[dict[str, int]]]


def decoder_prototypes(zoo: Any, keep: Callable[[Any], bool] = lambda model: True) -> Signatures:
    """Each decoder family's distinct decoder signatures (`graph.decoder`), from every zoo model of
    it (any source, composite or not): what a query's decoder is compared with. A decoder family is
    one that some source builds over named backbones (smp's, MONAI's FlexibleUNet's). `keep`: which
    models may serve (a benchmark leaves a query's own sources out)."""
    models = _named_models(zoo)
    return _signatures(zoo, models, _decoder_families(models), keep)


def split_decoder_prototypes(zoo: Any, keep: Callable[[Any], bool] = lambda model: True
                             ) -> tuple[Signatures, Signatures]:
    """(the decoder families' signatures, as `decoder_prototypes`; those of every other family whose
    models upsample: an Attention U-Net, a V-Net, a VAE), read in one pass: the second are rename
    targets only for a family the query's own vote names (`search.family.query_names`)."""
    models = _named_models(zoo)
    composite = _decoder_families(models)
    every = _signatures(zoo, models, None, keep)
    return ({f: known for f, known in every.items() if f in composite},
            {f: known for f, known in every.items() if f not in composite})


def _named_models(zoo: Any) -> list[Any]:
    return [m for m in zoo.models() if m.status == "ok" and m.family]


def _decoder_families(models: list[Any]) -> set[str]:
    """The families some source builds over a named backbone."""
    return {m.family for m in models if backbone_of(m.id)}


def _signatures(zoo: Any, models: list[Any], families: set[str] | None, keep: Callable[[Any], bool]) -> Signatures:
    """The distinct decoder signatures of `models` of `families` (None: every family) that `keep`
    lets serve, by family; a family with none is left out."""
    from narcli.graph.decoder import UPSAMPLING, decoder_signature
    from narcli.graph.idioms import normalise_idioms

    out: Signatures = {}
    seen: set[tuple[str, str]] = set()
    for m in models:
        if (families is not None and m.family not in families) or not keep(m) or (m.family, m.graph_hash) in seen:
            continue
        seen.add((m.family, m.graph_hash))
        graph = zoo.graph(m)
        if not any(node.op in UPSAMPLING for node in graph.nodes):
            continue  # no decoder (most of the zoo), and normalising every graph took half a minute
        signature = decoder_signature(normalise_idioms(graph))  # as the embedder reads a query
        if signature and signature not in out.setdefault(m.family, []):
            out[m.family].append(signature)
    return {family: known for family, known in sorted(out.items()) if known}
