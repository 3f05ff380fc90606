"""How this CPU's pointwise convolutions change when PyTorch has more than one thread, measured
directly (`nar calibrate` at more than one thread), for the thread part they have of their own
(`latency_parts.convolution_leaves_gemm_over_one_thread`).

At one thread PyTorch runs a 1x1 convolution as a matrix product; at more it hands it to oneDNN,
which on some CPUs gains nothing from the threads on a plain NCHW input (a 2-vCPU Xeon VM,
2026-12-05: 1.0x over 40x40-80x80 maps, at times 3-10x slower, where the product ran 1.6-1.9x
faster) and on others speeds up like the product it replaces. Twenty zoo
models rarely tell that part apart from the others, so the calibration times it here, beside
matrix products of the same sizes, and fits the thread factors around what it found.

Runs in a child process (`python -m narcli.bench.thread_probe THREADS`), pinned as the timings
are (`quiet.pin`) and with the C allocator in their regime (`allocator.hold_allocator_steady`), so
the caller's thread settings and imports are untouched; about two seconds. Until 2026-12-07 19:50 the
child ran in glibc's fresh-process regime while the timings no longer did: on the AMD VM of that day
it read oneDNN's pointwise convolutions at 1.1-1.25x their one-thread time (relative 0.69-0.82), and
0.59-0.63x (0.07-0.13, about THREAD_SHAPE's -0.1) with the allocator held as the timings hold it; the
calibrations fitted around the first reading predicted held-out zoo models 1-3 points worse (MAPE)
than around the prior shape (`benchmarks/bench_calibration_fit.py`). A probe taken in another
regime than this version's timings is not believed (`shape_with`)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

# (input channels, output channels, map side): pointwise convolutions of MobileNets and ResNet
# bottlenecks, each reading more than the 20,480 elements below which PyTorch keeps the product
SHAPES = ((24, 144, 40), (144, 24, 40), (64, 256, 56), (256, 64, 56), (32, 192, 80), (96, 576, 20))
ROUNDS = 5
CALLS = 5
# how far the measured relative factor may move the prior (log): beyond it the probe is not believed
LIMITS = (-1.0, 3.0)


def _timed(run, calls: int = CALLS) -> float:
    import time

    best = math.inf
    for _ in range(calls):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def measure(threads: int, rounds: int = ROUNDS) -> dict[str, float]:
    """In this process: the time of the pointwise convolutions at `threads` over their time at one
    thread, the same for matrix products of the same sizes, and the log of the first over the
    second (`relative`, the thread part's place against the parallel part's)."""
    import torch

    torch.manual_seed(0)
    cases = []
    for cin, cout, side in SHAPES:
        x, w = torch.randn(1, cin, side, side), torch.randn(cout, cin, 1, 1)
        rows, matrix = torch.randn(side * side, cin), torch.randn(cin, cout)
        cases.append((x, w, rows, matrix))
    before = torch.get_num_threads()
    ratios: dict[str, list[float]] = {"pointwise": [], "matrix": []}
    try:
        with torch.inference_mode():
            for _ in range(rounds):
                times = {}
                for count in (1, threads):  # interleaved, so a slow moment spoils one round, not one side
                    torch.set_num_threads(count)
                    for x, w, rows, matrix in cases:  # warm: oneDNN builds its kernels on the first call
                        torch.nn.functional.conv2d(x, w)
                        rows @ matrix
                    times[count] = (sum(_timed(lambda: torch.nn.functional.conv2d(x, w)) for x, w, _, _ in cases),
                                    sum(_timed(lambda: rows @ matrix) for _, _, rows, matrix in cases))
                ratios["pointwise"].append(times[threads][0] / times[1][0])
                ratios["matrix"].append(times[threads][1] / times[1][1])
    finally:
        torch.set_num_threads(before)
    pointwise, matrix = (sorted(v)[len(v) // 2] for v in (ratios["pointwise"], ratios["matrix"]))
    return {"threads": threads, "pointwise": round(pointwise, 4), "matrix": round(matrix, 4),
            "relative": round(min(max(math.log(pointwise / matrix), LIMITS[0]), LIMITS[1]), 4)}


def probe(threads: int, timeout: float = 120) -> dict[str, float] | None:
    """`measure(threads)` in a child process; None when there is nothing to measure (one thread) or
    the child failed (the prior shape is used then)."""
    if threads <= 1:
        return None
    try:
        done = subprocess.run([sys.executable, "-m", "narcli.bench.thread_probe", str(threads)],
                              capture_output=True, text=True, timeout=timeout)
        found = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    if not isinstance(found, dict) or not all(isinstance(found.get(k), (int, float)) and math.isfinite(found[k])
                                              for k in ("pointwise", "matrix", "relative")):
        return None
    return found


def probe_said(threads: int, report) -> dict[str, float] | None:
    """`probe`, said through `report`: how this CPU's pointwise convolutions change over one thread."""
    found = probe(threads)
    if found is None:
        report("could not time the pointwise convolutions at both thread counts; their thread factor keeps its prior")
    else:
        report(f"pointwise convolutions at {threads} threads: ×{found['pointwise']:.2f} their 1-thread time "
               f"(matrix products of the same sizes ×{found['matrix']:.2f})")
    return found


def shape_with(found: dict[str, float] | None) -> tuple[float, ...]:
    """`transfer.THREAD_SHAPE` with the pointwise part's place taken from a probe, where there is one
    taken in the allocator regime this version times models in (`allocator.same_regime`)."""
    from narcli.bench.allocator import same_regime
    from narcli.bench.transfer import THREAD_SHAPE

    if not found or not isinstance(found.get("relative"), (int, float)) or not math.isfinite(found["relative"]) \
            or not same_regime(found):
        return THREAD_SHAPE
    return (*THREAD_SHAPE[:-1], min(max(float(found["relative"]), LIMITS[0]), LIMITS[1]))


if __name__ == "__main__":
    from narcli.bench.allocator import hold_allocator_steady
    from narcli.bench.quiet import pin

    regime = hold_allocator_steady()  # before the first tensor, as in every process that times a model
    pin(int(sys.argv[1]))  # on as many CPUs as the calibration's timings use
    print(json.dumps(measure(int(sys.argv[1])) | {"allocator": regime}))
