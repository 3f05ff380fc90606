"""Work-arounds for broken installs of third-party model libraries, applied in one place."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

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
    Those libraries import torchaudio too when it is installed, so its guard runs first.
    """
    global _library
    import sys

    ensure_torchaudio_importable()

    if _library is not None or "torchvision" in sys.modules:
        return
    import torch

    missing = [name for name in _TORCHVISION_OPS if not _has_op(torch, f"torchvision::{name}")]
    if not missing:
        return
    import importlib.util

    spec = importlib.util.find_spec("torchvision")
    if spec is None or _compiled_ops_load(torch, spec):
        # a torchvision built for this torch (a CUDA machine's) registers the ops itself when its
        # library loads; schemas defined here first would collide with them and abort the process
        return
    library = torch.library.Library("torchvision", "FRAGMENT")
    for name in missing:
        library.define(_TORCHVISION_OPS[name])
    _library = library


def _compiled_ops_load(torch: Any, spec: Any) -> bool:
    """Whether torchvision's compiled ops library loads with this torch (then it is loaded, and
    has registered whatever ops this torchvision has: nothing may be defined beside them)."""
    from pathlib import Path

    folder = Path(spec.origin or "").parent
    for library in sorted(folder.glob("_C*.so")) + sorted(folder.glob("_C*.pyd")):
        try:
            torch.ops.load_library(str(library))
        except (OSError, RuntimeError):  # built for another torch: undefined symbols
            return False
        return True
    return False


def _has_op(torch: object, qualified: str) -> bool:
    try:
        torch._C._dispatch_find_schema_or_throw(qualified, "")  # type: ignore[attr-defined]
        return True
    except RuntimeError:
        return False


def ensure_torchaudio_importable() -> None:
    """Import torchaudio without its compiled extension when that extension cannot load.

    The registry's torchaudio wheels link CUDA libraries; next to a CPU torch, `import torchaudio`
    then fails in `torchaudio._extension` before any model is defined. Its model definitions are
    pure Python, so a stand-in `_extension` that reports "no extension" lets them import (the
    ops that need the extension, such as forced alignment, still fail when called).
    """
    import importlib.util
    import sys

    if "torchaudio" in sys.modules or importlib.util.find_spec("torchaudio") is None:
        return
    try:
        import torchaudio  # noqa: F401
        return
    except (OSError, ImportError, RuntimeError):  # RuntimeError: built for another CUDA than torch's
        for name in [name for name in sys.modules if name == "torchaudio" or name.startswith("torchaudio.")]:
            del sys.modules[name]
    import types

    stand_in = types.ModuleType("torchaudio._extension")
    stand_in._IS_TORCHAUDIO_EXT_AVAILABLE = False  # type: ignore[attr-defined]
    stand_in._IS_ALIGN_AVAILABLE = False  # type: ignore[attr-defined]
    stand_in.fail_if_no_align = lambda function: function  # type: ignore[attr-defined]
    stand_in._check_cuda_version = lambda: None  # type: ignore[attr-defined]
    sys.modules["torchaudio._extension"] = stand_in
    import torchaudio  # noqa: F401,F811


@contextlib.contextmanager
def pyg_templates_removed() -> Iterator[None]:
    """While torch_geometric layers are made: the `propagate` it generates per layer class from a
    jinja template, which it writes as a `.py` file into the temp directory, imports and never
    removes (three files each `nar similar NEW_FILE`), goes to a private folder removed afterwards
    (the module is imported by then; it needs its file no more)."""
    import functools
    import shutil
    import tempfile
    import types

    try:
        from torch_geometric import template
    except ImportError:
        yield
        return
    folder = tempfile.mkdtemp(prefix="nar-pyg-")
    real = template.tempfile
    # only torch_geometric's template module sees the private folder; every other temp file stays put
    template.tempfile = types.SimpleNamespace(NamedTemporaryFile=functools.partial(real.NamedTemporaryFile,
                                                                                   dir=folder))
    try:
        yield
    finally:
        template.tempfile = real
        shutil.rmtree(folder, ignore_errors=True)
