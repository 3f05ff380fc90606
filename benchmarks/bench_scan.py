"""Scan speed and memory, measured against a bare torch.export in the same run.

    python benchmarks/bench_scan.py [--repeat 3]

Prints a table and writes benchmarks/results/scan.json. Targets (issue: `nar scan`):
- cold scan of the ResNet-50 fixture <= 1.5 x a bare `torch.export` of the same model (both are
  whole processes: interpreter start, imports, building the model on meta, exporting);
- cache hit <= 0.3 s wall, without importing torch;
- the 7B-parameter decoder fixture scans with peak memory < 2 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import imports_torch, machine, nar_command, wall

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
RESULTS = ROOT / "benchmarks" / "results"

BARE_EXPORT = f"""
import importlib.util, torch
spec = importlib.util.spec_from_file_location("resnet50", {str(FIXTURES / 'resnet50.py')!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
with torch.device("meta"):
    model = module.ResNet50().eval()
    x = torch.empty(1, 3, 224, 224)
torch.export.export(model, (x,), strict=False)
"""

# the largest process of nar's tree, polled: a trace child is nar's grandchild (a supervisor
# forks the worker), and a later one a fork server's child, so RUSAGE_CHILDREN saw only nar itself
# (54 MiB where the worker holds several hundred)
PEAK_RSS = """
import subprocess, sys, time
from narcli.trace.isolation import descendants

def high_water(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return max([int(line.split()[1]) for line in f if line.startswith("VmHWM:")] or [0])
    except OSError:
        return 0

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)  # stderr: the caller's
peak = 0
while proc.poll() is None:
    peak = max([peak, high_water(proc.pid)] + [high_water(p) for p in descendants(proc.pid)])
    time.sleep(0.02)
print(peak)  # KiB, the largest process
sys.exit(proc.returncode)
"""

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    home = tempfile.mkdtemp(prefix="nar-bench-")
    env = dict(os.environ, NAR_HOME=home)
    # an installed package has its bytecode compiled by pip; keep Python's .pyc caching on so an
    # editable checkout is measured the same way (some sandboxes turn it off globally)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    nar = nar_command()
    resnet = str(FIXTURES / "resnet50.py")

    # interleave the two so that machine load affects both alike
    bare, cold = [], []
    for _ in range(args.repeat):
        bare.append(wall([sys.executable, "-c", BARE_EXPORT], env))
        cold.append(wall(nar + ["scan", resnet, "--no-cache"], env))
    subprocess.run(nar + ["scan", resnet], env=env, check=True, capture_output=True)
    hits = [wall(nar + ["scan", resnet], env) for _ in range(max(5, args.repeat))]
    torch_on_hit = imports_torch(["scan", resnet], env)

    llama = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *nar, "scan", str(FIXTURES / "llama7b.py"), "--model", "llama_7b",
         "--input-shape", "1,128", "--input-dtype", "long", "--no-cache", "--json"],
        env=env, capture_output=True, text=True, check=True)
    peak_kib = int(llama.stdout.strip().splitlines()[-1])
    llama_json = subprocess.run(nar + ["scan", str(FIXTURES / "llama7b.py"), "--model", "llama_7b",
                                       "--input-shape", "1,128", "--input-dtype", "long", "--json"],
                                env=env, capture_output=True, text=True, check=True)
    llama_params = json.loads(llama_json.stdout)["models"][0]["params"]

    result = {
        "machine": machine(),
        "repeat": args.repeat,
        "bare_export_s": statistics.median(bare),
        "cold_scan_s": statistics.median(cold),
        "cold_over_bare": statistics.median(cold) / statistics.median(bare),
        "cache_hit_s": statistics.median(hits),
        "cache_hit_imports_torch": torch_on_hit,
        "llama7b_params": llama_params,
        "llama7b_peak_rss_mib": peak_kib / 1024,
        "targets": {"cold_over_bare": 1.5, "cache_hit_s": 0.3, "llama7b_peak_rss_mib": 2048},
        "samples": {"bare_export_s": bare, "cold_scan_s": cold, "cache_hit_s": hits},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "scan.json").write_text(json.dumps(result, indent=2) + "\n")

    print(f"{'measure':<38}{'value':>12}{'target':>10}")
    rows = [
        ("bare torch.export ResNet-50 (s)", result["bare_export_s"], None),
        ("nar scan ResNet-50, cold (s)", result["cold_scan_s"], None),
        ("cold scan / bare export", result["cold_over_bare"], 1.5),
        ("nar scan ResNet-50, cache hit (s)", result["cache_hit_s"], 0.3),
        ("7B decoder peak memory (MiB)", result["llama7b_peak_rss_mib"], 2048),
    ]
    for name, value, target in rows:
        print(f"{name:<38}{value:>12.3f}{'' if target is None else f'<= {target:g}':>10}")
    print(f"cache hit imports torch: {torch_on_hit}; 7B params: {llama_params:,}")
    print(f"wrote {RESULTS / 'scan.json'}")


if __name__ == "__main__":
    main()
