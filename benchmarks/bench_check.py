"""`nar check` (the pre-commit hook): which copies it calls known, with no hook arguments, and how
often its "adapted" rule links two zoo architectures.

    python benchmarks/bench_check.py [--skip-clients] [--skip-zoo]

1. The must-reach project (issue 43): a CIFAR ResNet-18, a hand-written VGG-16 and a GPT-2 block
   stack (tests/fixtures), each at its natural input; `nar check` with no arguments must call all
   three KNOWN.
2. The real-client files (benchmarks/real_clients: models written by other people), each checked
   with its MANIFEST `model` but **no input shape**: how many find a working input by themselves,
   which rule calls them known, and whether the known model's family is the MANIFEST's.
3. The zoo against itself: each architecture against its 10 nearest; how many pairs the adapted
   rule links, and how many of those join two families.

Writes benchmarks/results/check.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from common import machine, nar_command

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
COPIES = ("resnet18_cifar.py", "vgg16.py", "gpt2_blocks.py")


def check(nar: list[str], args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    done = subprocess.run([*nar, "check", *args, "--json"], cwd=cwd, env=env, capture_output=True, text=True)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"results": [], "error": (done.stdout + done.stderr).strip()[-300:]}


def the_project(nar: list[str], env: dict[str, str], folder: Path) -> dict:
    project = folder / "project"
    (project / "models").mkdir(parents=True)
    for name in COPIES:
        shutil.copy(ROOT / "tests" / "fixtures" / name, project / "models" / name)
    (project / "pyproject.toml").write_text('[tool.nar]\ncheck-paths = ["models/**/*.py"]\n')
    start = time.perf_counter()
    report = check(nar, [], project, env)
    rows = [{"file": Path(r["path"]).name, "known": r["flagged"], "rule": (r.get("known") or {}).get("rule"),
             "nearest": r["nearest"], "cosine": r["cosine"], "error": r["error"]} for r in report["results"]]
    for row in rows:
        print(f"  {row['file']:22} {'KNOWN' if row['known'] else 'ok':6} {row['rule'] or '':10} {row['nearest']}")
    return {"seconds": round(time.perf_counter() - start, 1), "rows": rows,
            "all_known": len(rows) == len(COPIES) and all(r["known"] for r in rows)}


def the_clients(nar: list[str], env: dict[str, str]) -> dict:
    rows = []
    for manifest in sorted((ROOT / "benchmarks" / "real_clients").glob("*/MANIFEST.csv")):
        for entry in csv.DictReader(manifest.open()):
            path = manifest.parent / entry["file"]
            args = [str(path), "--model", entry["model"]] if entry.get("model") else [str(path)]
            report = check(nar, args, ROOT, env)
            result = (report.get("results") or [{}])[0]
            known = result.get("known") or {}
            rows.append({"file": f"{manifest.parent.name}/{entry['file']}", "family": entry["family"],
                         "traced": bool(result) and not result.get("error"), "error": result.get("error") or
                         report.get("error", ""), "rule": known.get("rule"), "known_as": known.get("zoo_id"),
                         "known_family": result.get("family") if known else None,
                         "nearest": result.get("nearest"), "cosine": result.get("cosine")})
            row = rows[-1]
            print(f"  {row['file']:44} {'traced' if row['traced'] else 'FAILED':7} {row['rule'] or 'not known':10} "
                  f"{row['known_as'] or row['nearest'] or row['error'][:60]}")
    traced = [r for r in rows if r["traced"]]
    known = [r for r in traced if r["rule"]]
    return {"files": len(rows), "traced_without_input_shape": len(traced), "known": len(known),
            "by_rule": dict(Counter(r["rule"] for r in known)),
            "known_with_the_manifest_family": sum(r["known_family"] == r["family"] for r in known), "rows": rows}


def the_zoo() -> dict:
    from narcli.search.known import adapted_changes
    from narcli.search.neighbours import zoo_index
    from narcli.zoo.store import Zoo

    zoo, index = Zoo(), zoo_index()
    graphs: dict[str, object] = {}
    groups = zoo.models_by_hash(list(index.keys))

    def graph(graph_hash: str):
        if graph_hash not in graphs:
            graphs[graph_hash] = zoo.graph(groups[graph_hash][0])
        return graphs[graph_hash]

    pairs = linked = 0
    across: list[tuple[str, str]] = []
    for position, graph_hash in enumerate(index.keys):
        if graph_hash not in groups:
            continue
        for other, _ in index.query(index.vectors([position])[0], 11):
            if other == graph_hash or other not in groups:
                continue
            pairs += 1
            if adapted_changes(graph(graph_hash), graph(other)) is not None:
                linked += 1
                a, b = groups[graph_hash][0], groups[other][0]
                if a.family != b.family:
                    across.append((a.id, b.id))
    families = Counter(tuple(sorted((groups_family(zoo, a), groups_family(zoo, b)))) for a, b in across)
    print(f"  {pairs} pairs, {linked} linked by the adapted rule, {len(across)} across families")
    return {"pairs": pairs, "linked": linked, "across_families": len(across),
            "top_family_pairs": [[*pair, n] for pair, n in families.most_common(15)]}


def groups_family(zoo, model_id: str) -> str:
    return zoo.resolve(model_id).family


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-clients", action="store_true")
    parser.add_argument("--skip-zoo", action="store_true")
    args = parser.parse_args()
    nar = nar_command()
    out: dict = {"machine": machine()}
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "NAR_HOME": str(Path(folder) / "home")}
        print("the must-reach project (no hook arguments):")
        out["project"] = the_project(nar, env, Path(folder))
        if not args.skip_clients:
            print("real-client files, no input shape:")
            out["clients"] = the_clients(nar, env)
    if not args.skip_zoo:
        print("the zoo against its 10 nearest:")
        out["zoo"] = the_zoo()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "check.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS / 'check.json'}")


if __name__ == "__main__":
    main()
