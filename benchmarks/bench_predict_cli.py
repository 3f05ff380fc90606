"""`nar predict` speed (issue 19): a zoo name against `import torch`, and a model file against
`nar scan` of the same file, both cold (a fresh $NAR_HOME each run). Median of 5.

    python benchmarks/bench_predict_cli.py

Targets: `nar predict resnet50` <= 0.5 x `python -c "import torch"`; `nar predict FILE` <= 1.2 x
`nar scan FILE`. Writes benchmarks/results/predict_cli.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import imports_torch, machine, nar_command, wall

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "fixtures" / "resnet50_cifar.py"
RUNS = 5


def median_cold(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as home:
            times.append(wall(cmd, {**os.environ, "NAR_HOME": home}))
    return statistics.median(times)


def main() -> None:
    nar = nar_command()
    torch_import = median_cold([sys.executable, "-c", "import torch"])
    predict_zoo = median_cold(nar + ["predict", "resnet50"])
    scan_file = median_cold(nar + ["scan", str(MODEL), "-i", "1,3,32,32"])
    predict_file = median_cold(nar + ["predict", str(MODEL), "-i", "1,3,32,32"])
    with tempfile.TemporaryDirectory() as home:
        torch_used = imports_torch(["predict", "resnet50"], {**os.environ, "NAR_HOME": home})
    result = {
        "import_torch_s": round(torch_import, 3), "predict_zoo_name_s": round(predict_zoo, 3),
        "predict_zoo_name_ratio": round(predict_zoo / torch_import, 3), "predict_zoo_imports_torch": torch_used,
        "scan_file_cold_s": round(scan_file, 3), "predict_file_cold_s": round(predict_file, 3),
        "predict_file_ratio": round(predict_file / scan_file, 3), "file": MODEL.name, "runs": RUNS,
        "machine": machine(),
    }
    out = ROOT / "benchmarks" / "results" / "predict_cli.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
