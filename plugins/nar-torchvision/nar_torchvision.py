"""nar zoo source: torchvision's classification, detection, segmentation and video models.

Family = the module that defines the builder (`torchvision.models.resnet` -> `resnet`,
`torchvision.models.detection.faster_rcnn` -> `faster_rcnn`).
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import (
    BuiltModel,
    ZooEntry,
    ZooSource,
    build_on_meta,
)

# task -> (torchvision.models submodule, example input without the batch dimension)
TASKS = {
    "image-classification": ("", (3, 224, 224)),
    "object-detection": ("detection", (3, 512, 512)),
    "semantic-segmentation": ("segmentation", (3, 520, 520)),
    "video-classification": ("video", (3, 16, 224, 224)),
}
# the few classifiers whose architecture fixes another input size
INPUT_SIZE = {"inception_v3": (3, 299, 299)}


class TorchvisionSource(ZooSource):
    name = "torchvision"
    description = "torchvision.models: classification, detection, segmentation, video"
    rank = 20
    library = "torchvision"

    def list_models(self) -> list[ZooEntry]:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import importlib

        from torchvision import models

        entries = []
        for task, (sub, _) in TASKS.items():
            module = importlib.import_module(f"torchvision.models.{sub}") if sub else models
            for name in models.list_models(module=module):
                builder = models.get_model_builder(name)
                family = builder.__module__.rsplit(".", 1)[-1]
                entries.append(ZooEntry(name, family, task))
        return entries

    def build(self, entry: ZooEntry) -> BuiltModel:
        from narcli.trace.compat import ensure_torchvision_importable

        ensure_torchvision_importable()
        import torch
        from torchvision import models

        size = INPUT_SIZE.get(entry.name, TASKS[entry.task][1])
        import inspect

        builder = models.get_model_builder(entry.name)
        no_weights = {k: None for k in ("weights", "weights_backbone") if k in inspect.signature(builder).parameters}
        model = weights = build_on_meta(lambda: builder(**no_weights))
        if entry.task == "object-detection":
            # detectors take a list of images, resize them and run NMS; trace the network proper
            model = _DetectorCore(model)
        return BuiltModel(model, [torch.empty((1, *size), device="meta")], input_names=["images"], weights=weights)


def _DetectorCore(detector: object) -> object:
    import torch

    class DetectorCore(torch.nn.Module):
        """Backbone and heads of a torchvision detector on a batch of images (no resizing, no NMS)."""

        def __init__(self, inner: torch.nn.Module):
            super().__init__()
            self.inner = inner

        def forward(self, images: torch.Tensor) -> object:
            inner = self.inner
            features = inner.backbone(images)
            if isinstance(features, torch.Tensor):
                features = {"0": features}
            feature_list = list(features.values())
            if hasattr(inner, "rpn"):  # two-stage: RPN head + box (and mask/keypoint) heads
                objectness, deltas = inner.rpn.head(feature_list)
                heads = inner.roi_heads
                pooled = _roi_pool(heads.box_roi_pool, feature_list)
                scores, boxes = heads.box_predictor(heads.box_head(pooled))
                outs = [*objectness, *deltas, scores, boxes]
                for pool, head, predictor in (("mask_roi_pool", "mask_head", "mask_predictor"),
                                              ("keypoint_roi_pool", "keypoint_head", "keypoint_predictor")):
                    if getattr(heads, pool, None) is not None:
                        pooled = _roi_pool(getattr(heads, pool), feature_list)
                        outs.append(getattr(heads, predictor)(getattr(heads, head)(pooled)))
                return outs
            head = inner.head  # one-stage: RetinaNet, FCOS, SSD
            out = head(feature_list)
            return list(out.values()) if isinstance(out, dict) else out

    return DetectorCore(detector)


def _roi_pool(pool: object, features: list) -> object:
    # RoIAlign is a compiled torchvision op that meta tensors can't run: stand in an adaptive
    # average pool of the finest feature map to the same output size, for 100 proposals
    import torch.nn.functional as F

    size = pool.output_size
    pooled = F.adaptive_avg_pool2d(features[0], size if isinstance(size, (list, tuple)) else (size, size))
    return pooled.expand(100, *pooled.shape[1:])


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [TorchvisionSource()]
