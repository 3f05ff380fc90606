"""The compat guard for torchvision's compiled ops: schemas defined only where its library cannot
load (this CPU torch beside a CUDA torchvision), never beside a library that registers them itself
(a GPU machine's matching build, where defining them first aborted `nar bench --device cuda`)."""

import types

import torch

from narcli.trace import compat


def test_a_compiled_library_that_cannot_load_is_reported_as_such(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "_C.so").write_bytes(b"not a shared object")
    spec = types.SimpleNamespace(origin=str(tmp_path / "__init__.py"))
    assert compat._compiled_ops_load(torch, spec) is False


def test_a_package_without_a_compiled_library_gets_the_schemas(tmp_path):
    spec = types.SimpleNamespace(origin=str(tmp_path / "__init__.py"))
    assert compat._compiled_ops_load(torch, spec) is False


def test_a_library_that_loads_means_nothing_is_defined(tmp_path, monkeypatch):
    (tmp_path / "_C.so").write_bytes(b"")
    loaded = []
    monkeypatch.setattr(torch.ops, "load_library", loaded.append)
    spec = types.SimpleNamespace(origin=str(tmp_path / "__init__.py"))
    assert compat._compiled_ops_load(torch, spec) is True and loaded == [str(tmp_path / "_C.so")]
