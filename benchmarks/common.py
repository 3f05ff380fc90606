"""Helpers shared by the benchmark scripts: how to run `nar`, time a command, probe for torch."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

# Runs the nar CLI in-process on argv, then says whether torch got imported.
NO_TORCH_PROBE = """
import sys
from narcli.cli.app import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
print("torch imported:", "torch" in sys.modules)
"""


def nar_command() -> list[str]:
    script = Path(sys.executable).with_name("nar")
    return [str(script)] if script.exists() else [sys.executable, "-m", "narcli"]


def wall(cmd: list[str], env: dict[str, str]) -> float:
    """Seconds one run of `cmd` takes, start to exit."""
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def imports_torch(argv: list[str], env: dict[str, str]) -> bool:
    probe = subprocess.run([sys.executable, "-c", NO_TORCH_PROBE, *argv], env=env, capture_output=True,
                           text=True, check=True)
    return "torch imported: True" in probe.stdout


def machine() -> dict[str, object]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def change_figures(ratios: list[float]) -> dict[str, float]:
    """How far re-timed labels moved from the stored ones (`ratios`: again / stored): the figures
    bench_reference_noise.py and bench_cuda_reference.py --compare-store report."""
    import statistics

    errors = [abs(r - 1) for r in ratios]
    return {"median_abs_change_pct": round(statistics.median(errors) * 100, 2),
            "mean_abs_change_pct": round(statistics.fmean(errors) * 100, 2),
            "within10_pct": round(sum(e <= 0.1 for e in errors) / len(errors) * 100, 1),
            "median_ratio": round(statistics.median(ratios), 3)}
