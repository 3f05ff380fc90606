"""How a reference-CPU latency prediction splits for carrying it to another CPU and thread count
(`LatencyHead.parts`; fitted by `bench.transfer`): by kind of work, and by how the work spreads over
threads. Kept apart from the head itself: these are facts about how eager PyTorch runs operations
on a CPU, not learnt costs."""

from __future__ import annotations

import math

import numpy as np

from narcli.graph.vocab import RECURRENT, RECURRENT_CALLS


def convolution_runs_as_gemm(node, input_elements: float) -> bool:
    """Whether eager PyTorch on a CPU, at one thread and batch 1, runs this convolution as im2col
    and a matrix product rather than through oneDNN: a pointwise convolution (1x1, stride 1, no
    dilation), or an ungrouped one with no kernel side above 3 over at most 20,480 input elements
    (a CIFAR net's last stages). Profiled on torch 2.13: `_slow_conv2d_forward` for those,
    `mkldnn_convolution` for the rest. Its time then moves between CPUs like a matrix product's."""
    found = _convolution(node)
    if found is None:
        return False
    kernel, pointwise, groups = found
    if pointwise:
        return True
    large = len(kernel) >= 2 and kernel[-1] > 3 and kernel[-2] > 3
    return groups == 1 and not large and 0 < input_elements <= GEMM_INPUT_ELEMENTS


def convolution_leaves_gemm_over_one_thread(node, input_elements: float) -> bool:
    """Whether eager PyTorch runs this convolution as a matrix product at one thread but through
    oneDNN at more: a pointwise one (1x1, stride 1, no dilation, batch 1) that is grouped or reads
    more than GEMM_INPUT_ELEMENTS (PyTorch's rule sends 1x1 convolutions to oneDNN whenever it has
    more than one thread). Measured on torch 2.13 on a 2-vCPU Xeon VM: there oneDNN on a plain NCHW
    input ran 1x1 convolutions over 40x40-80x80 maps no faster at two threads than the matrix
    product at one, and in some runs 3-10x slower, where the product itself ran 1.6-1.9x faster;
    a MobileNet gained nothing from its second thread (`benchmarks/bench_pointwise_threads.py`)."""
    found = _convolution(node)
    return found is not None and found[1] and (found[2] != 1 or input_elements > GEMM_INPUT_ELEMENTS)


def _convolution(node) -> tuple[list, bool, int] | None:
    """A batch-1 convolution's kernel, whether it is pointwise (1x1, stride 1, no dilation) and its
    groups; None for any other node, or a convolution traced without its kernel."""
    if node.op not in ("conv1d", "conv2d", "conv3d") or not node.shape or node.shape[0] != 1:
        return None
    attrs = node.attrs or {}
    kernel, stride = list(attrs.get("kernel") or []), list(attrs.get("stride") or [1])
    dilation = list(attrs.get("dilation") or [1])
    if not kernel:
        return None
    pointwise = all(k == 1 for k in kernel) and all(v == 1 for v in stride + dilation)
    return kernel, pointwise, attrs.get("groups", 1)


def parallel_share(graph) -> np.ndarray:
    """Per node, the share of its compute that spreads over threads: w / (w + PARALLEL_MACS) for the
    MACs w one call does at once. A whole recurrence (`recurrent_share`) is several calls of its own;
    a recurrent cell called from a Python loop is one step, its w one step's MACs."""
    out = []
    for node in graph.nodes or []:
        macs = float(max(node.macs, 0))
        whole = recurrence(node) == "whole"
        out.append(recurrent_share(node, macs) if whole else macs / (macs + PARALLEL_MACS))
    return np.array(out or [0.0])


def recurrence(node) -> str | None:
    """What kind of recurrent operation a node is: "whole" for a recurrence over all its steps
    (output (batch, steps, features)), "cell" for one step a Python loop calls (traced cells take
    their layer's name, `vocab.TORCH_ALIASES`), None for any other operation."""
    if node.op not in RECURRENT and node.op not in RECURRENT_CALLS:
        return None
    return "whole" if node.shape and len(node.shape) >= 3 else "cell"


def recurrent_share(node, macs: float) -> float:
    """The share of a whole recurrence's compute (output (batch, steps, features)) that spreads over
    threads, by how eager PyTorch 2.x runs it on a CPU. A GRU or plain RNN is PyTorch's own loop of
    small per-step calls: none of it (five GRUs, hidden 64-1024, 1-2 layers, 32-96 steps, ran
    0.95-1.05x as fast at two threads as at one, torch 2.13, 2026-12-07). An LSTM is one oneDNN kernel
    per layer and direction (`mkldnn_rnn_layer`), which spreads each step's products over threads
    from far smaller sizes than PyTorch's own operations do: one layer's step MACs w spread as
    w / (w + ONEDNN_STEP_MACS) (the same five sizes as LSTMs: 0.78x at hidden 64, 1.12x at 128,
    1.6-2.8x from 256). Without the layer's sizes (`recurrent_attrs`): one step's MACs against
    PARALLEL_MACS, as before 2026-12-07."""
    if node.op != "lstm":
        return 0.0
    attrs = node.attrs or {}
    hidden, inputs, matrix = (int(attrs.get(k) or 0) for k in ("hidden", "input_size", "matrix_size"))
    per_step = macs / max(int(node.shape[1]), 1)
    if hidden <= 0 or inputs <= 0 or matrix <= 0:
        return per_step / (per_step + PARALLEL_MACS)
    layers = max(1, round(matrix / (4 * hidden * (inputs + hidden))))  # about: later layers read more inputs
    return (per_step / layers) / (per_step / layers + ONEDNN_STEP_MACS)


ONEDNN_STEP_MACS = 250_000  # one LSTM layer's step at which oneDNN spreads half its work (`recurrent_share`)


def recurrent_steps(node) -> bool:
    """Whether this node's compute that does not spread (`parallel_share`) is PyTorch's own loop over a
    recurrence's steps (a whole GRU or plain RNN, or a recurrent cell a Python loop calls) rather than
    a small operation's: a thread part of its own (`THREAD_PARTS`). The two move apart with threads:
    GRUs ran 0.95-1.05x as fast at two threads, while small operations elsewhere sped up. A whole
    LSTM is oneDNN's kernel, which does speed up: what of it does not spread counts as serial (with it
    among the steps, the two-thread calibration of 2026-12-07 16:32 fitted the steps at 1.35x the
    parallel factor and its GRUs came out 20-55 % fast)."""
    kind = recurrence(node)
    return kind is not None and not (kind == "whole" and node.op == "lstm")


# how a prediction splits for carrying it to other CPUs (`LatencyHead.parts`, first group): convolutions
# and matrix products of a million MACs or more, and the rest (smaller arithmetic, memory traffic, call
# overhead). Another CPU can run each faster or slower by its own factor: the 2-vCPU VM of 2026-12-04
# ran the calibration's convolution nets 1.6-2.4x the reference machine's times and its transformers
# 1.2-1.3x. The split before 2026-12-05 (dense products together, other compute, memory, calls) could
# not tell the two apart, and the calibration's ridge made its four scales one
PARTS = ("convolution", "matrix products", "other work")  # convolutions run as GEMMs count as products
GEMM_INPUT_ELEMENTS = 20_480  # below it PyTorch runs a small ungrouped convolution without oneDNN
DENSE_MACS = 1_000_000  # a product below a million MACs is over before its kernel's speed matters
# ... and for carrying it to more threads (second group, `transfer.fit_over_one_thread`): memory
# traffic and the share of each operation's compute that spreads (`parallel_share`), the compute
# that does not, and the per-call overhead, which a thread pool's start and join per operation make
# larger. An operation doing PARALLEL_MACS at once spreads half its compute: the value a fit of
# 535 one- and two-thread timings (6 days of `nar eval calibration` on this project's VM) chose,
# 4.3 M; scored offline on the same timings, 1 M to 30 M came within 0.1 point of it, and a threshold
# of its own for convolutions or matrix products did no better (README, "Threads and the work split")
# The fourth thread part is the compute of PyTorch's own recurrent loops that does not spread
# (`recurrent_steps`): a second thread slows it, where small operations' compute ("serial") gains a little.
# The fifth is the compute of the pointwise convolutions that leave the matrix product for oneDNN over one
# thread (`convolution_leaves_gemm_over_one_thread`): their time changes by a factor of its own, larger than
# one on a CPU where that path is slow
THREAD_PARTS = ("parallel", "serial", "calls", "recurrent steps", "pointwise to oneDNN")
PARALLEL_MACS = 4e6
# ... and a last column, not part of the prediction: the graph's operations as traced (a loop's body
# once), each weighted by its output's size e as e / (e + DISPATCH_ELEMENTS) (`dispatch_calls`), times
# DISPATCH_MS: a cost per operation call that the reference head's per-call terms do not carry to this
# machine, whose rate a one-thread calibration fits. Without it, a calibration fitted mostly on 20-800 ms
# models predicted this VM's 4-50 ms nets 10-25 % too fast (2026-12-06). The calibration's ridge pulls
# every scale towards one, so the unit is a prior: 10 microseconds did best on nine days of one-thread
# `nar eval calibration` timings scored offline (3 and 30 tried, and counting the operations with loops
# unrolled; `benchmarks/bench_calibration_fit.py`, README "2026-12-06, 20:00").
# Until 2026-12-08 every call counted whole: the calibration's models (0.05-20 GMACs) fitted the column at
# 10-16 microseconds a call, where a call on a few hundred numbers costs 1.3-3 here, and the reference
# head's own per-call terms already hold that; small models (an MLP policy, a tabular net, PyG's small
# graph nets) came out 2-4x their time after a one-thread calibration. Weighted by size, a call on a few
# hundred numbers counts almost nothing and one on a feature map in full. DISPATCH_ELEMENTS (16 KB of
# float32) is the largest of 256, 1,024, 4,096 and 16,384 whose mean held-out MAPE over fourteen dated
# one-thread `nar eval calibration` runs came within 0.1 point of the best (`benchmarks/bench_dispatch_size.py`)
DISPATCH_MS = 0.01
DISPATCH_ELEMENTS = 4096
NOT_CALLED = ("input", "output")  # graph nodes that are no operation call


def dispatch_calls(graph, elements: float = DISPATCH_ELEMENTS) -> float:
    """The graph's operation calls as traced (a loop's body once, with any graph-structure work folded out
    of storage), each counted as e / (e + `elements`) for its output's e numbers (a call whose output
    size was not traced counts as one number); `elements` 0 counts every call whole (before 2026-12-08)."""
    folded = (graph.meta.get("structure") or {}).get("nodes") or []
    sizes = [_numbers(node.shape) for node in graph.nodes if node.op not in NOT_CALLED]
    sizes += [_numbers(data.get("shape")) for data in folded if data.get("op") not in NOT_CALLED]
    if not elements:
        return float(len(sizes))
    return float(sum(size / (size + elements) for size in sizes))


def _numbers(shape) -> float:
    try:
        return float(math.prod(max(int(d), 1) for d in shape)) if shape else 1.0
    except (TypeError, ValueError):  # a multi-output node's list of shapes, or a symbolic size
        return 1.0
