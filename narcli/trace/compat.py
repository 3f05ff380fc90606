"""Work-arounds for broken installs of third-party model libraries, applied in one place."""

from __future__ import annotations

_library: object = None  # keeps the op definitions alive (they vanish with the Library object)

# Schemas of torchvision's compiled ops that its Python code looks up at import or trace time.
_TORCHVISION_OPS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor",
}


def ensure_torchvision_importable() -> None:
    """Define torchvision's `nms`/`qnms` op schemas when its compiled ops failed to load.

    A torchvision wheel built for another torch cannot load its C++ ops, and then fails on import
    with "operator torchvision::nms does not exist" (timm and transformers import it too). Its
    model definitions are pure Python and only need the schemas to exist. Call this before the
    first import of torchvision, timm or transformers; it does nothing when the ops are present.
    """
    global _library
    import sys

    if _library is not None or "torchvision" in sys.modules:
        return
    import torch

    missing = [name for name in _TORCHVISION_OPS if not _has_op(torch, f"torchvision::{name}")]
    if not missing:
        return
    import importlib.util

    if importlib.util.find_spec("torchvision") is None:
        return
    library = torch.library.Library("torchvision", "FRAGMENT")
    for name in missing:
        library.define(_TORCHVISION_OPS[name])
    _library = library


def _has_op(torch: object, qualified: str) -> bool:
    try:
        torch._C._dispatch_find_schema_or_throw(qualified, "")  # type: ignore[attr-defined]
        return True
    except RuntimeError:
        return False
