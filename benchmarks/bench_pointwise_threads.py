"""Pointwise (1x1) convolutions at one thread and at more, beside the same matrix product written as
`x @ W`: how much PyTorch's switch from its matrix product to oneDNN over one thread costs on this
CPU (the thread part `latency_parts.convolution_leaves_gemm_over_one_thread`). Run alone on the
machine. It times in this process without holding the C allocator as `nar bench` and `nar
calibrate` do (`narcli/bench/allocator.py`): the 2026-12-05 figures were taken so. Held (2026-12-07,
the AMD VM, six of these shapes), pointwise convolutions through oneDNN took 0.58-0.63x their
one-thread time at two threads, matrix products 0.49-0.60x; not held, 1.15-1.25x.

    python benchmarks/bench_pointwise_threads.py [--threads 2] [--out NAME]

For each shape: the median of 60 calls after 20 warm-up calls, the better of two such medians, at
one thread and at `--threads`; which kernel ran is read from `torch.profiler`. Writes
benchmarks/results/<out>.json (default pointwise-threads.json).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from common import machine

from narcli.bench.measure import time_runs

ROOT = Path(__file__).resolve().parent.parent
# (input channels, output channels, map side): pointwise convolutions of MobileNets and ResNet bottlenecks,
# each reading more than the 20,480 elements below which PyTorch keeps the product, a smaller map, and one
# small enough to stay a product
SHAPES = ((24, 144, 40), (144, 24, 40), (64, 256, 56), (256, 64, 56), (32, 192, 80), (96, 576, 20),
          (16, 96, 80), (96, 576, 10))


def median_us(run) -> float:
    return time_runs(run, 60, warmup_runs=20, warmup_seconds=0.0).median_ms * 1000


def kernel(run) -> str:
    """The convolution kernel PyTorch dispatched to, from the profiler."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as found:
        run()
    names = [e.key for e in found.key_averages()]
    return next((n for n in names if n in ("aten::mkldnn_convolution", "aten::_slow_conv2d_forward")), "other")


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--out", default="pointwise-threads")
    args = parser.parse_args()
    rows = []
    with torch.inference_mode():
        for cin, cout, side in SHAPES:
            x, w = torch.randn(1, cin, side, side), torch.randn(cout, cin, 1, 1)
            flat, matrix = torch.randn(side * side, cin), torch.randn(cin, cout)
            row = {"shape": [cin, cout, side], "input_elements": cin * side * side}
            for count in (1, args.threads, 1, args.threads):  # twice each, interleaved
                torch.set_num_threads(count)
                conv = median_us(lambda: torch.nn.functional.conv2d(x, w))
                product = median_us(lambda: flat @ matrix)
                key = f"{count}t"
                row[f"conv_{key}_us"] = round(min(conv, row.get(f"conv_{key}_us", conv)), 1)
                row[f"matmul_{key}_us"] = round(min(product, row.get(f"matmul_{key}_us", product)), 1)
                row[f"kernel_{key}"] = kernel(lambda: torch.nn.functional.conv2d(x, w))
            rows.append(row)
            print(f"{cin}->{cout} over {side}x{side}: convolution {row['conv_1t_us']:.0f} us at 1 thread "
                  f"({row['kernel_1t']}), {row[f'conv_{args.threads}t_us']:.0f} us at {args.threads} "
                  f"({row[f'kernel_{args.threads}t']}); x @ W {row['matmul_1t_us']:.0f} -> "
                  f"{row[f'matmul_{args.threads}t_us']:.0f} us", flush=True)
    out = {"machine": machine(), "torch": torch.__version__, "threads": args.threads, "rows": rows}
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
