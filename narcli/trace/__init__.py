"""From a model file to a `RawGraph`: loading users' `.py`/`.pt2` files, building models on the `meta`
device, example inputs, the torch tracers (run-time recording, torch.export, torch.fx) and the ONNX
reader, plus the machinery that keeps user code at arm's length: a child process with a timeout
(`isolation`), long-lived worker pools (`pool`) and the third-party compat guard (`compat`).

May import: `graph`. torch and onnx are imported only inside the functions that trace.
"""
