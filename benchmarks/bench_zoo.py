"""Zoo read speed, and the zoo's contents and build rates as recorded in the database.

    python benchmarks/bench_zoo.py [--repeat 7] [--db narcli/data/zoo.db]

Prints a table and writes benchmarks/results/zoo.json. Targets (issue: the zoo):
- `nar zoo show resnet50` and `nar zoo list --family vit` <= 0.3 s wall each, without torch;
- >= 2,000 distinct architectures: >= 1,100 from timm, >= 80 torchvision, >= 250 transformers;
  >= 90 % of each library's candidates traced;
- bundled database <= 60 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
from pathlib import Path

from common import imports_torch, machine, nar_command, wall

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TARGETS = {"timm": 1100, "torchvision": 80, "transformers": 250}

def contents(db: Path) -> dict:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = {}
    for source, ok, failed, archs in conn.execute(
            "select source, sum(status = 'ok'), sum(status = 'failed'), "
            "count(distinct case when status = 'ok' then graph_hash end) from models group by source"):
        out[source] = {"models": ok, "failed": failed, "architectures": archs, "traced": ok / (ok + failed)}
    out["all"] = {"architectures": conn.execute(
        "select count(distinct graph_hash) from models where status = 'ok'").fetchone()[0]}
    builds = [json.loads(row[0]) for row in conn.execute("select summary from builds order by id")]
    rates: dict[str, dict] = {}
    for build in builds:
        for report in build:
            r = rates.setdefault(report["source"], {"tried": 0, "seconds": 0.0})
            r["tried"] += report["ok"] + report["failed"]
            r["seconds"] += report["seconds"]
    for r in rates.values():
        r["per_minute"] = r["tried"] / r["seconds"] * 60 if r["seconds"] else None
    conn.close()
    return {"sources": out, "build_rates": rates}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--db", type=Path, default=ROOT / "narcli" / "data" / "zoo.db")
    args = parser.parse_args()

    env = dict(os.environ, NAR_ZOO=str(args.db), NAR_HOME=str(ROOT / "build" / "bench-home"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package would run (see bench_scan.py)
    nar = nar_command()
    commands = {"zoo show resnet50": ["zoo", "show", "resnet50"],
                "zoo list --family vit": ["zoo", "list", "--family", "vit"]}
    timings, torch_imported = {}, {}
    for label, argv in commands.items():
        wall(nar + argv, env)  # warm the page cache and bytecode
        timings[label] = [wall(nar + argv, env) for _ in range(args.repeat)]
        torch_imported[label] = imports_torch(argv, env)

    found = contents(args.db)
    result = {
        "machine": machine(),
        "db": str(args.db), "db_mb": args.db.stat().st_size / 1e6,
        "wall_s": {k: statistics.median(v) for k, v in timings.items()},
        "imports_torch": torch_imported, **found,
        "targets": {"wall_s": 0.3, "db_mb": 60, "architectures": 2000, "per_source": TARGETS, "traced": 0.9},
        "samples": timings,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "zoo.json").write_text(json.dumps(result, indent=2) + "\n")

    for label, value in result["wall_s"].items():
        print(f"nar {label:<28} {value:.3f} s (target <= 0.3), torch imported: {torch_imported[label]}")
    print(f"database {result['db_mb']:.1f} MB (target <= 60)")
    print(f"{'source':<14}{'models':>8}{'archs':>8}{'failed':>8}{'traced':>8}{'target':>8}{'rate/min':>10}")
    for source, s in found["sources"].items():
        if source == "all":
            continue
        rate = found["build_rates"].get(source, {}).get("per_minute")
        print(f"{source:<14}{s['models']:>8}{s['architectures']:>8}{s['failed']:>8}{s['traced']:>8.1%}"
              f"{TARGETS.get(source, ''):>8}{rate or 0:>10.1f}")
    print(f"distinct architectures, all sources: {found['sources']['all']['architectures']} (target >= 2000)")
    print(f"wrote {RESULTS / 'zoo.json'}")


if __name__ == "__main__":
    main()
