"""`nar similar` speed: a zoo name against `import torch`, a model file against its plain scan.

    python benchmarks/bench_similar.py [--repeat 5]

Targets (issue: nar similar): `nar similar resnet50` wall time <= 0.5 x `python -c "import torch"`,
both measured here in the same run; `nar similar resnet50.py` (a user file of ResNet-50 size) on a
cold cache <= 2 x `nar scan resnet50.py` on a cold cache. Also times `nar --help` (start-up of the CLI alone). Writes benchmarks/results/similar.json.
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

from common import machine, nar_command, wall

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
# a hand-written ResNet-50 (the same graph as the zoo's), so the benchmark needs no torchvision
RESNET50_FILE = (ROOT / "tests" / "fixtures" / "resnet50.py").read_text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    nar = nar_command()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "NAR_HOME": str(Path(folder) / "home")}
        subprocess.run([*nar, "similar", "resnet50"], env=env, check=True, capture_output=True)  # warm the OS cache
        similar = [wall([*nar, "similar", "resnet50"], env) for _ in range(args.repeat)]
        help_runs = [wall([*nar, "--help"], env) for _ in range(args.repeat)]
        torch_import = [wall([sys.executable, "-c", "import torch"], env) for _ in range(args.repeat)]
        model = Path(folder) / "resnet50.py"
        model.write_text(RESNET50_FILE)
        scans, files = [], []
        for i in range(max(2, args.repeat // 2)):
            cold = {**env, "NAR_HOME": str(Path(folder) / f"cold-scan-{i}")}
            scans.append(wall([*nar, "scan", str(model)], cold))
            cold = {**env, "NAR_HOME": str(Path(folder) / f"cold-similar-{i}")}
            files.append(wall([*nar, "similar", str(model)], cold))
    out = {"similar_zoo_name_s": round(statistics.median(similar), 3),
           "help_s": round(statistics.median(help_runs), 3),
           "import_torch_s": round(statistics.median(torch_import), 3),
           "scan_file_cold_s": round(statistics.median(scans), 3),
           "similar_file_cold_s": round(statistics.median(files), 3), "machine": machine()}
    out["zoo_name_ratio"] = round(out["similar_zoo_name_s"] / out["import_torch_s"], 3)
    out["file_ratio"] = round(out["similar_file_cold_s"] / out["scan_file_cold_s"], 3)
    for key, value in out.items():
        if key != "machine":
            print(f"{key:<22}{value}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "similar.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
