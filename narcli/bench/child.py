"""What runs in `nar bench`'s measuring child process (`runner.bench_target` starts it through
`trace.isolation.run_isolated`): build the model with weights, pin the threads, time it with the
protocol in `measure`, beside a matrix-product probe of the core's arithmetic. The request is
`runner._Request`. torch and onnxruntime are imported inside the functions, so importing this module
costs nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from narcli.errors import NarError

PROBE_MATRIX = 384  # the matrix-product probe's size: about 0.6 ms at 2 threads, 1.1 ms at one


def matmul_probe(torch: Any) -> Callable[[], float]:
    """A probe of this process's arithmetic at the threads torch was given: ms of one fixed matrix
    product, the faster of two (`quiet.COMPUTE_DRIFT` says why a loop probe alone is not enough)."""
    import time

    generator = torch.Generator().manual_seed(0)
    a = torch.randn(PROBE_MATRIX, PROBE_MATRIX, generator=generator)
    b = torch.randn(PROBE_MATRIX, PROBE_MATRIX, generator=generator)

    def probe() -> float:
        best = float("inf")
        for _ in range(2):
            start = time.perf_counter()
            torch.mm(a, b)
            best = min(best, time.perf_counter() - start)
        return best * 1000

    return probe


def measure_in_child(request: Any) -> dict[str, Any]:
    from narcli.bench.allocator import hold_allocator_steady
    from narcli.bench.measure import time_runs
    from narcli.bench.quiet import pin

    regime = hold_allocator_steady()  # before the model's first tensor
    pinned = pin(request.threads) if request.device == "cpu" else []
    watch = request.threads if request.device == "cpu" else 0
    if request.kind == "onnx":
        run = _onnx_runner(request)
        return time_runs(run, request.repeat, watch_threads=watch).to_dict() | {"pinned": pinned, "allocator": regime}
    import torch

    if request.device == "cpu":
        torch.set_num_threads(request.threads)
    module, inputs = _build(request)
    module = module.eval().to(request.device)
    inputs = [x.to(request.device) for x in inputs]
    sync = torch.cuda.synchronize if request.device == "cuda" else (lambda: None)

    def run() -> None:
        with torch.inference_mode():
            module(*inputs)

    compute = matmul_probe(torch) if request.device == "cpu" else None
    return time_runs(run, request.repeat, sync=sync, watch_threads=watch,
                     compute_probe=compute).to_dict() | {"pinned": pinned, "allocator": regime}


def _build(request: Any) -> tuple[Any, list[Any]]:
    import torch

    from narcli.trace.compat import ensure_torchvision_importable
    from narcli.trace.meta import real_weights

    ensure_torchvision_importable()
    if request.kind == "zoo":
        from narcli.zoo.plugins import zoo_sources

        source = zoo_sources().get(request.source)
        if source is None:
            from narcli.zoo.plugins import missing_source_message

            raise NarError(missing_source_message(request.name, request.source))
        name = request.name.split("/", 1)[1] if "/" in request.name else request.name
        entry = _listed(request.source, source).get(name)
        if entry is None:
            raise NarError(f"{request.name}: the {request.source} source no longer lists it")
        with real_weights():
            built = source.build(entry)
        module, example = built.module, built.inputs
        inputs = example_inputs(example, request.batch)
    else:
        from narcli.trace.loader import build_models

        with real_weights():
            module = dict(build_models(Path(request.path), request.spec)).get(request.spec)
        if module is None:
            raise NarError(f"{request.name}: could not build {request.spec}")
        inputs = [_example(tuple(i["shape"]), getattr(torch, i.get("dtype", "float32")), request.batch)
                  for i in request.inputs]
    return _materialise(module), inputs


def example_inputs(example: list[Any], batch: int) -> list[Any]:
    """Real tensors shaped like a source's (meta) example inputs, at `batch`. The example is batch 1,
    and is kept as it is at batch 1: some inputs (a graph's edge_index) have no batch axis."""
    if batch == 1:
        return [_example(x.shape, x.dtype, x.shape[0] if len(x.shape) else 1) for x in example]
    return [_example(x.shape, x.dtype, batch) for x in example]


_LISTS: dict[str, dict[str, Any]] = {}


def _listed(name: str, source: Any) -> dict[str, Any]:
    """The source's entries by name, listed once per process (a worker measuring many models of a
    source pays for timm's or transformers' registry once)."""
    if name not in _LISTS:
        _LISTS[name] = {e.name: e for e in source.list_models()}
    return _LISTS[name]


def _example(shape: tuple, dtype: Any, batch: int) -> Any:
    import torch

    shape = (batch, *tuple(shape)[1:]) if len(shape) else shape
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype)
    return torch.zeros(shape, dtype=dtype)


def _materialise(module: Any) -> Any:
    """A module some source built on meta anyway: real memory and weights (`fill_weights`)."""
    if not any(p.is_meta for p in module.parameters()):
        return module
    return fill_weights(module)


def fill_weights(module: Any) -> Any:
    """A module built on meta, in CPU memory with weights: matrices are tiled from one random block
    (memcpy speed — the library's own initialisers took 1-2 s a model, longer than timing it),
    norm scales and running variances are 1, biases and integer buffers 0. Dense kernels' speed
    does not depend on the values (the reference worker also flushes denormals)."""
    import torch

    block = torch.randn(1 << 20) * 0.02
    if any(t.is_meta for t in list(module.parameters()) + list(module.buffers())):
        module = module.to_empty(device="cpu")
    with torch.no_grad():
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if not tensor.is_floating_point():
                tensor.zero_()
            elif tensor.dim() >= 2:
                flat = tensor.view(-1) if tensor.is_contiguous() else None
                if flat is None:
                    tensor.normal_(0, 0.02)
                    continue
                for start in range(0, flat.numel(), block.numel()):
                    piece = flat[start:start + block.numel()]
                    piece.copy_(block[: piece.numel()])
            elif name.endswith(("running_var", "weight")):
                tensor.fill_(1.0)
            else:
                tensor.zero_()
    return module


def _onnx_runner(request: Any) -> Any:
    import numpy as np
    import onnxruntime

    settings = onnxruntime.SessionOptions()
    settings.intra_op_num_threads = request.threads  # what was asked for, as torch is given it
    settings.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(request.path, settings, providers=["CPUExecutionProvider"])
    feeds = {}
    for spec, meta in zip(request.inputs, session.get_inputs()):
        shape = (request.batch, *spec["shape"][1:])
        dtype = np.float32 if "float" in spec.get("dtype", "float32") else np.int64
        feeds[meta.name] = np.random.standard_normal(shape).astype(dtype) if dtype == np.float32 \
            else np.zeros(shape, dtype)
    return lambda: session.run(None, feeds)
