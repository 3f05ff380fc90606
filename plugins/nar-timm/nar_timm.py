"""nar zoo source: every architecture `timm.list_models()` knows, at its pretrained input size.

Family = the generator function the model's entry point calls (`_gen_mobilenet_v3`,
`_create_resnet`, ...) when its module has several, else the module (`convnext`, `eva`, ...).
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import (
    BuiltModel,
    ZooEntry,
    ZooSource,
    build_on_meta,
    missing_module,
)

GENERATOR_PREFIXES = ("_gen_", "_create_")


class TimmSource(ZooSource):
    name = "timm"
    description = "PyTorch Image Models: image classification backbones"
    rank = 10
    library = "timm"

    def missing(self) -> str | None:
        return missing_module("timm", "torchvision")


    def list_models(self) -> list[ZooEntry]:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import timm
        from timm.models import model_entrypoint

        entries = []
        for module in timm.list_modules():
            names = timm.list_models(module=module)
            generators = {name: _generator(model_entrypoint(name)) for name in names}
            several = len(set(generators.values()) - {None}) > 1
            for name in names:
                family = generators[name] if several and generators[name] else module
                entries.append(ZooEntry(name, family, "image-classification", {"module": module}))
        return entries

    def build(self, entry: ZooEntry) -> BuiltModel:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import timm
        import torch

        model = build_on_meta(lambda: timm.create_model(entry.name, pretrained=False))
        config = getattr(model, "pretrained_cfg", None) or {}
        size = tuple(config.get("input_size") or (3, 224, 224))
        # a ResNeXt or SE-ResNet built by the resnet module is named by its blocks (zoo.labels.refine_family)
        return BuiltModel(model, [torch.empty((1, *size), device="meta")], None, ["pixel_values"])


def _generator(entrypoint: object) -> str | None:
    """The `_gen_*` / `_create_*` function an entry point calls, without its prefix."""
    code = getattr(entrypoint, "__code__", None)
    for name in code.co_names if code else ():
        for prefix in GENERATOR_PREFIXES:
            if name.startswith(prefix):
                return name[len(prefix):]
    return None


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [TimmSource()]
