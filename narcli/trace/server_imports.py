"""Imported once by the fork server that starts trace children (`isolation.process_context`):
the libraries every child would otherwise import again (torch, torch.fx, torchaudio through its
guard, torch_geometric: about 6 s here), so that each child starts with them done. No threads
are started and no op runs here, which keeps forking from this process safe."""

import contextlib
import warnings


def _import_all() -> None:
    with warnings.catch_warnings():  # a library's import-time deprecation would reach nar's stderr
        warnings.simplefilter("ignore")
        with contextlib.suppress(Exception):  # a broken install fails in the child, under its timeout
            from narcli.trace.compat import ensure_torchvision_importable

            ensure_torchvision_importable()
            import torch.fx  # noqa: F401
        with contextlib.suppress(Exception):
            import torch_geometric  # noqa: F401


_import_all()
