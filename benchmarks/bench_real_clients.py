"""Retrieval on models written by other people: the real-client validation set.

    python benchmarks/bench_real_clients.py [--set benchmarks/real_clients] [--out NAME]

Each `MANIFEST.csv` under the set folder lists model files written independently of timm,
torchvision and transformers (`own/`: re-implementations written from the papers for this set;
`public/<owner>__<repo>/`: permissively licensed public files, licence and origin beside them), with
the `--model` spec, input shape and the expected zoo family. For each model this runs
`nar similar FILE --json` (as a user would, in a fresh NAR_HOME) and prints: the nearest zoo
architecture and its family, the predicted family, whether the expected family is in the 5 nearest
zoo architectures, the cosine, and whether "no close family" was said. Overall: nearest-zoo family
top-1, predicted-family accuracy, top-5 hit rate, and the rate of wrong "no close family".

The zoo sometimes labels one architecture with several families (timm's `vit_small_patch16_224`
and `deit_small_patch16_224` are the same graph; so are HF's wav2vec2 and HuBERT CTC models). The
strict figures count only the family the manifest names; the `*_equivalent` figures also accept a
family that shares an identical zoo graph with it, since no retrieval can tell those apart; the
`coarse_right` compares the coarse class said with the one most of the
expected family's zoo models have, or with the manifest's `coarse` column where it has one (a
network whose own layers put it in another class than its family's usual one: a WGAN with an MLP
generator, a dense VAE, a PointNet written with per-point `Linear` layers are `mlp`). The `*_design` figures compare designs (`narcli.zoo.lineage`: Helium, Mistral or Qwen3 are Llama
designs, as transformers' own modular files derive them), the answer `nar similar` gives beside
the family. Rows whose manifest family is `new` (designs no zoo library ships, `breadth/new/`) are
left out of all of that and scored apart: `new_called_new`, the share `nar similar` called new.
With `--guess-inputs` the manifest's input shapes and dtypes are not passed: each file is searched
as a user's first `nar similar FILE` does, with the inputs `nar` guesses (a model it cannot guess
for is a failed scan, so a miss).
Writes benchmarks/results/<out>.json (default real-clients.json).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import tempfile
from pathlib import Path

from common import machine, nar_command

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
NEW = "new"  # the manifest family of a design no zoo library ships: it should be called new


def rows(folder: Path) -> list[dict]:
    found = []
    for manifest in sorted(folder.rglob("MANIFEST.csv")):
        with open(manifest, newline="") as handle:
            for row in csv.DictReader(handle):
                row["path"] = str((manifest.parent / row["file"]).resolve())
                parts = Path(row["path"]).relative_to(folder.resolve()).parts
                row["set"] = "/".join(parts[:2]) if parts[0] == "public" else parts[0]  # one source each
                found.append(row)
    return found


def family_coarse() -> dict[str, str]:
    """family -> the coarse class most of its zoo models have: what a model of that family is."""
    from collections import Counter, defaultdict

    from narcli.zoo.store import Zoo

    counts: dict[str, Counter] = defaultdict(Counter)
    with Zoo() as zoo:
        for model in zoo.models():
            counts[model.family][model.coarse] += 1
    return {family: c.most_common(1)[0][0] for family, c in counts.items()}


def zoo_families() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """graph hash -> the families labelling it; family -> the families that label an identical graph
    somewhere in the zoo (itself included)."""
    from collections import defaultdict

    from narcli.zoo.store import Zoo

    by_hash: dict[str, set[str]] = defaultdict(set)
    with Zoo() as zoo:
        for model in zoo.models():  # the models that traced
            if model.graph_hash:
                by_hash[model.graph_hash].add(model.family)
    out: dict[str, set[str]] = defaultdict(set)
    for families in by_hash.values():
        for family in families:
            out[family] |= families
    return by_hash, out


def run_one(nar: list[str], row: dict, env: dict, timeout: float, order: str | None = None,
            guess_inputs: bool = False) -> dict:
    cmd = [*nar, "similar", row["path"], "--json", "-k", "20", "--timeout", str(int(timeout))]
    if order:
        cmd += ["--order", order]
    if row.get("model"):
        cmd += ["--model", row["model"]]
    # several inputs are separated by ";" in the manifest: "1,4,32,32;1;1" with "float32;long;long"
    given = () if guess_inputs else (("input_shape", "--input-shape"), ("input_dtype", "--input-dtype"))
    for key, flag in given:
        for value in filter(None, (row.get(key) or "").split(";")):
            cmd += [flag, value.strip()]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout + 60)
    if done.returncode == 2 and "--input-dtype" in done.stderr:
        # a nar from before `similar --input-dtype`: let it guess the inputs (token ids for a model
        # that starts with an embedding), as its users had to
        drop = {"--input-dtype", "--input-shape"}
        cmd = [c for i, c in enumerate(cmd) if c not in drop and (i == 0 or cmd[i - 1] not in drop)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout + 60)
    out = {"file": os.path.relpath(row["path"], ROOT), "model": row.get("model", ""), "set": row["set"],
           "expected": row["family"], "expected_coarse": row.get("coarse") or None}
    if done.returncode != 0:
        out["error"] = (done.stderr.strip().splitlines() or ["?"])[-1][:200]
        return out
    result = json.loads(done.stdout)["results"][0]
    zoo = [n for n in result["neighbours"] if n["kind"] == "zoo"]
    prediction = result["prediction"] or {}
    out.update({
        "nearest": zoo[0]["name"] if zoo else None,
        "nearest_family": zoo[0]["family"] if zoo else None,
        "nearest_hash": zoo[0].get("graph_hash") if zoo else None,
        "cosine": zoo[0]["cosine"] if zoo else None,
        "predicted": prediction.get("family"),
        "coarse": prediction.get("coarse"),
        # the design `nar similar` names beside the family (None: the family is its own design)
        "predicted_design": prediction.get("design") or prediction.get("family"),
        "novel": bool(prediction.get("novel")),
        "top5": any(n["family"] == row["family"] for n in zoo[:5]),
    })
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=ROOT / "benchmarks" / "real_clients")
    parser.add_argument("--out", default=None, help="results name (default real-clients, or "
                                                     "real-clients-guessed-inputs with --guess-inputs)")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--order", choices=("family", "cosine"), default=None,
                        help="nar similar --order (default: what nar similar does; 'nearest' is its first row)")
    parser.add_argument("--guess-inputs", action="store_true",
                        help="leave the manifest's inputs out: nar guesses them, as on a user's first search")
    args = parser.parse_args()
    args.out = args.out or ("real-clients-guessed-inputs" if args.guess_inputs else "real-clients")
    nar = nar_command()
    items = rows(args.set)
    results = []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "NAR_HOME": home}
        print(f"{'model':<58} {'expected':<14} {'nearest family':<14} {'cos':>5} {'predicted':<14} top5 new")
        for row in items:
            r = run_one(nar, row, env, args.timeout, args.order, args.guess_inputs)
            results.append(r)
            name = (r["file"].split("real_clients/")[-1] + (f":{r['model']}" if r["model"] else ""))[-58:]
            if "error" in r:
                print(f"{name:<58} {r['expected']:<14} error: {r['error']}")
                continue
            print(f"{name:<58} {r['expected']:<14} {str(r['nearest_family']):<14} {r['cosine']:>5.2f} "
                  f"{str(r['predicted']):<14} {'yes' if r['top5'] else 'no':<4} {'yes' if r['novel'] else ''}")
    # designs no zoo library ships (manifest family "new"): scored only on being called new
    new = [r for r in results if r["expected"] == NEW]
    results_known = [r for r in results if r["expected"] != NEW]
    scored = [r for r in results_known if "error" not in r]
    n = len(results_known)
    by_hash, same = zoo_families()
    coarse_of = family_coarse()
    from narcli.zoo.lineage import design

    def equivalent(found: str | None, expected: str) -> bool:
        return found == expected or (found is not None and expected in same.get(found, ()))

    def nearest_is(r: dict) -> bool:  # the nearest architecture itself carries the expected family
        return r["nearest_family"] == r["expected"] or r["expected"] in by_hash.get(r.get("nearest_hash"), ())

    summary = {"models": 0} if not n else {
        "inputs": "guessed" if args.guess_inputs else "manifest", "models": n, "sources": len({r["set"] for r in results_known}), "failed_to_scan": n - len(scored),
        # failures count as misses: a model we cannot read is not retrieved
        "nearest_family_top1": round(sum(r["nearest_family"] == r["expected"] for r in scored) / n, 3),
        "predicted_family": round(sum(r["predicted"] == r["expected"] for r in scored) / n, 3),
        "top5_hit": round(sum(r["top5"] for r in scored) / n, 3),
        "wrongly_novel": round(sum(r["novel"] for r in scored) / n, 3),
        "nearest_family_top1_equivalent": round(sum(nearest_is(r) for r in scored) / n, 3),
        "predicted_family_equivalent": round(sum(equivalent(r["predicted"], r["expected"]) for r in scored) / n, 3),
        "nearest_design": round(sum(design(r["nearest_family"]) == design(r["expected"]) for r in scored) / n, 3),
        "predicted_design": round(sum(r["predicted_design"] is not None
                                      and design(r["predicted_design"]) == design(r["expected"]) for r in scored) / n, 3),
        # the coarse class said for the model against its family's in the zoo
        "coarse_right": round(sum(r.get("coarse") == (r.get("expected_coarse") or coarse_of.get(r["expected"]))
                                  for r in scored) / n, 3),
        "mean_nearest_cosine": round(sum(r["cosine"] for r in scored) / max(len(scored), 1), 3),
    }
    if new:  # a design that failed to scan was not called new
        summary["new_designs"] = len(new)
        summary["new_called_new"] = round(sum(r.get("novel", False) for r in new) / len(new), 3)
    print()
    for key, value in summary.items():
        print(f"{key:<22}{value}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps({"summary": summary, "models": results,
                                                           "machine": machine()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
