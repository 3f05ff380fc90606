"""Pointwise (1x1) convolutions at one thread and at more, beside the same matrix product written as
`x @ W`: how much PyTorch's switch from its matrix product to oneDNN over one thread costs on this
CPU (the thread part `latency_parts.convolution_leaves_gemm_over_one_thread`, and the probe
`nar calibrate` runs: `narcli/bench/thread_probe.py`). Run alone on the machine.

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
from narcli.bench.thread_probe import SHAPES as PROBED

ROOT = Path(__file__).resolve().parent.parent
# (input channels, output channels, map side): the probe's shapes, a smaller map, and one small enough
# to stay a product
SHAPES = (*PROBED, (16, 96, 80), (96, 576, 10))


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
