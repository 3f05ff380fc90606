"""Helpers shared by the benchmark scripts: how to run `nar`, time a command, probe for torch, score a
calibrated device on user-written models."""

from __future__ import annotations

import json
import os
import platform
import statistics
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
    """What the figures were measured on: Python, CPU count and model (VMs of one kind differ), platform."""
    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo().splitlines() if line.startswith("model name")),
                 platform.processor() or None)
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "cpu": model, "platform": platform.platform()}


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def change_figures(ratios: list[float]) -> dict[str, float]:
    """How far re-timed labels moved from the stored ones (`ratios`: again / stored): the figures
    bench_reference_noise.py and bench_cuda_reference.py --compare-store report."""
    errors = [abs(r - 1) for r in ratios]
    return {"median_abs_change_pct": round(statistics.median(errors) * 100, 2),
            "mean_abs_change_pct": round(statistics.fmean(errors) * 100, 2),
            "within10_pct": round(sum(e <= 0.1 for e in errors) / len(errors) * 100, 1),
            "median_ratio": round(statistics.median(ratios), 3)}


def run_json(command: list[str]) -> dict:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout)


def score_device(nar: list[str], models: dict[Path, list[str]], threads: int, device: str) -> dict:
    """Each model measured with `nar bench --threads T` (a timing the machine's own check calls busy
    is taken again, up to four times; one still busy is reported, not scored) against `nar predict
    --device DEVICE` (the calibrated head's value and 90 % interval): the median error, how many
    measured values fall inside the interval, and the widest interval's half-width."""
    rows = []
    for path, inputs in models.items():
        for _ in range(4):
            measured = run_json([*nar, "bench", str(path), *inputs, "--threads", str(threads), "--json"])
            if not measured["busy"]:
                break
        found = run_json([*nar, "predict", str(path), *inputs, "--device", device, "--json"])
        row = next(r for r in found["results"][0]["predictions"] if r["head"] == "device")
        truth = measured["median_ms"]
        item = {"model": path.name, "measured_ms": round(truth, 3), "busy": measured["busy"],
                "status": row["status"], "predicted_ms": row["value"], "low_ms": row["low"], "high_ms": row["high"]}
        if row["value"]:
            item["error_pct"] = round((row["value"] - truth) / truth * 100, 1)
            item["inside"] = row["low"] <= truth <= row["high"]
            item["half_width_pct"] = round((row["high"] / row["value"] - 1) * 100, 1)
        rows.append(item)
        print(json.dumps(item))
    scored = [r for r in rows if "error_pct" in r and not r["busy"]]
    summary = {"threads": threads, "device": device, "models": rows, "scored": len(scored),
               "median_abs_error_pct": round(statistics.median(abs(r["error_pct"]) for r in scored), 1)
               if scored else None,
               "inside": sum(r["inside"] for r in scored),
               "half_width_pct": max((r["half_width_pct"] for r in scored), default=None)}
    print(json.dumps({k: v for k, v in summary.items() if k != "models"}))
    return summary
