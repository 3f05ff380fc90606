"""What a zoo source is: a named collection of models that it can list and build on the meta device.

Sources come from plugins (see `hookspecs.py`). Listing must be cheap; building runs in a worker
process, so it may import heavy libraries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ZooEntry:
    """One model a source can build."""

    name: str  # unique within its source: "resnet50", "bert/sequence-classification"
    family: str  # the source's own structural key: timm generator, HF model_type, torchvision module
    task: str  # image-classification, object-detection, causal-lm, ...
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # why the source lists this model but cannot build it (e.g. it needs an input of a kind the
    # source does not make); such entries are recorded as skipped, not traced
    unsupported: str = ""


@dataclass
class BuiltModel:
    """A model built on the meta device and the example inputs to trace it with."""

    module: Any  # torch.nn.Module
    inputs: list[Any]  # meta tensors, positional
    family: str | None = None  # a refinement of the entry's family seen in the built model
    input_names: list[str] | None = None
    # the module whose state_dict a checkpoint of this model holds, when `module` wraps it (a
    # keyword-calling shim, say); None means `module` itself
    weights: Any = None


class ZooSource:
    """Base class of zoo sources. Subclasses set `name` and implement `list_models` and `build`."""

    name: str = ""  # what `--source` takes
    prefix: str = ""  # first part of model ids (`hf` for transformers); defaults to `name`
    description: str = ""
    rank: int = 50  # a bare name found in several sources resolves to the lowest rank
    bundled: bool = True  # part of the zoo shipped with nar (NAS spaces are built on demand)

    @property
    def id_prefix(self) -> str:
        return self.prefix or self.name

    library: str = ""  # the module the source builds from, checked by `missing` and `version`
    distribution: str = ""  # its pip name, where that is not `library` (segmentation-models-pytorch)

    def missing(self) -> str | None:
        """Why this source cannot be used here (e.g. its library is not installed), or None. The
        install command pins the installed torch, so pip does not replace it to suit the library."""
        import importlib.util

        if not self.library or importlib.util.find_spec(self.library) is not None:
            return None
        torch = module_version("torch").split("+")[0]
        pin = f" torch=={torch}" if torch else ""
        return f"needs `{self.library}` (pip install {self.distribution or self.library}{pin})"

    def version(self) -> str:
        """The version of what the source builds from, recorded in the zoo."""
        return module_version(self.distribution or self.library) if self.library else ""

    def list_models(self) -> list[ZooEntry]:
        raise NotImplementedError

    def build(self, entry: ZooEntry) -> BuiltModel:
        raise NotImplementedError


def module_version(name: str) -> str:
    """Installed version of a distribution, '' when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return ""


def missing_module(*names: str) -> str | None:
    """A message naming the first module that cannot be imported, or None."""
    import importlib.util

    for name in names:
        if importlib.util.find_spec(name) is None:
            return f"needs `{name}` (pip install {name})"
    return None
