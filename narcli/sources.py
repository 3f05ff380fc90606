"""The plugin API in one import, at the path third-party plugins use.

A zoo source subclasses `ZooSource`, lists `ZooEntry` items and builds a `BuiltModel` (the module on
the `meta` device, via `build_on_meta`, plus example inputs). They live in `narcli.zoo.sources` and
`narcli.trace.meta`; `build_transformers` builds a transformers model from a config with example
inputs (`narcli.trace.transformers_build`). This module keeps `from narcli.sources import ...` working for plugins.
"""

from narcli.trace.meta import build_on_meta
from narcli.trace.transformers_build import SUPPORTED_INPUTS, build_transformers, required_inputs
from narcli.zoo.sources import (
    BuiltModel,
    ZooEntry,
    ZooSource,
    missing_module,
    module_version,
)

__all__ = ["SUPPORTED_INPUTS", "BuiltModel", "ZooEntry", "ZooSource", "build_on_meta", "build_transformers",
           "missing_module", "module_version", "required_inputs"]
