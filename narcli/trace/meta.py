"""Construct models on the `meta` device, so that no weights are allocated whatever their size."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


_REAL_WEIGHTS = contextvars.ContextVar("nar_real_weights", default=False)


@contextmanager
def real_weights() -> Iterator[None]:
    """Within this block `build_on_meta` builds on the CPU with the library's own random
    initialisation (`nar bench` runs the model; the memory check comes first)."""
    token = _REAL_WEIGHTS.set(True)
    try:
        yield
    finally:
        _REAL_WEIGHTS.reset(token)


def build_on_meta(factory: Callable[[], Any]) -> Any:
    """`factory()` with every parameter on meta (on the CPU inside `real_weights()`).

    First under `torch.device("meta")`. Constructors that compute with tensors (`.item()`,
    `.tolist()`) fail there; those are built again on the CPU with each parameter moved to meta as
    soon as it is registered, so only one layer's weights exist at a time.
    """
    import torch

    if _REAL_WEIGHTS.get():
        return factory()
    try:
        with torch.device("meta"):
            return factory()
    except TypeError:
        raise  # wrong arguments: building again would not help
    except Exception:
        with _parameters_to_meta():
            return factory().to("meta")


@contextmanager
def _parameters_to_meta() -> Iterator[None]:
    from torch import nn

    original = nn.Module.register_parameter

    def register(module: nn.Module, name: str, param: Any) -> None:
        original(module, name, param)
        param = module._parameters.get(name)
        if param is not None and param.device.type != "meta":
            module._parameters[name] = type(param)(param.to("meta"), requires_grad=param.requires_grad)

    nn.Module.register_parameter = register  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module.register_parameter = original  # type: ignore[method-assign]
