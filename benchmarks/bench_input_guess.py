"""How often a `.py` model's guessed input is the one its author meant.

    python benchmarks/bench_input_guess.py [--out input-guess]

Every row of the benchmark sets' manifests (`benchmarks/real_clients/*/MANIFEST.csv`,
`benchmarks/breadth/*/MANIFEST.csv`) names the input its model was written for. Each model is
scanned here *without* `--input-shape`, as a user's first `nar scan` does, and the guess is compared
with the manifest's: the same number of inputs with the same sizes after the batch (the batch a
manifest writes is the author's choice, not the model's). Image rows (a first input of four sizes)
are counted on their own: their side decides MACs and latency by its square.

The rule for designs built for small images (`trace.image_size.small_image_respec`: a guessed 224 px
RGB image whose classifier pools a map downsampled 1, 2, 4 or 8 times, or whose fixed pool spread
its map over the batch, is traced again at 32 px) says so in its summary; for the rows it moved, the
guess before it was 224 px, so the figure without the rule is counted from the same run
(`before_rule`). A row that fails to scan counts as a miss.

Writes benchmarks/results/<out>.json: per row the manifest's input, the guess, whether it matched,
whether the rule fired; the summary.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = ("real_clients", "breadth")
RULE_SAYS = "as networks built for CIFAR-sized images do"  # and a side other than 32: " samples for "


def manifest_rows() -> list[dict]:
    rows = []
    for name in SETS:
        for manifest in sorted((ROOT / "benchmarks" / name).rglob("MANIFEST.csv")):
            for entry in csv.DictReader(manifest.open()):
                if not entry.get("input_shape"):
                    continue
                shapes = [tuple(int(n) for n in s.split(",")) for s in entry["input_shape"].split(";")]
                rows.append({"file": str((manifest.parent / entry["file"]).relative_to(ROOT)),
                             "model": entry.get("model") or None, "manifest": shapes})
    return rows


def after_batch(shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    return [tuple(s[1:]) for s in shapes]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="input-guess")
    args = parser.parse_args()
    from narcli.errors import NarError
    from narcli.scan.scanner import ScanOptions, scan_file

    out = []
    began = time.time()
    for row in manifest_rows():
        image = len(row["manifest"][0]) == 4  # from the manifest: a row that fails stays counted
        try:
            records, _ = scan_file(ROOT / row["file"], ScanOptions(model=row["model"], remember=False, use_cache=False))
        except NarError as exc:
            out.append(row | {"manifest": [list(s) for s in row["manifest"]], "image": image, "error": str(exc)[:200]})
            continue
        record = records[0]
        guessed = [tuple(i["shape"]) for i in record.inputs]
        fired = any(said in (record.assumed or "") for said in (RULE_SAYS, " samples for "))
        before = [(*s[:2], 224, 224) for s in guessed] if fired else guessed
        out.append({"file": row["file"], "model": row["model"], "manifest": [list(s) for s in row["manifest"]],
                    "guessed": [list(s) for s in guessed], "assumed": record.assumed,
                    "image": image, "rule_fired": fired,
                    "matched": after_batch(guessed) == after_batch(row["manifest"]),
                    "matched_before_rule": after_batch(before) == after_batch(row["manifest"])})
        print(f"{'=' if out[-1]['matched'] else 'x'} {row['file']} {row['model'] or ''}: "
              f"{guessed} vs {row['manifest']}{' (rule)' if fired else ''}", flush=True)

    def share(rows: list[dict], key: str) -> dict:
        return {"rows": len(rows), "matched": sum(r.get(key, False) for r in rows),
                "share": round(sum(r.get(key, False) for r in rows) / len(rows), 3) if rows else None}

    images = [r for r in out if r.get("image")]
    summary = {
        "rows": len(out), "errors": sum("error" in r for r in out),
        "all": share(out, "matched"), "all_before_rule": share(out, "matched_before_rule"),
        "images": share(images, "matched"), "images_before_rule": share(images, "matched_before_rule"),
        "rule_fired": sum(r.get("rule_fired", False) for r in out),
        "rule_fired_and_right": sum(r.get("rule_fired", False) and r["matched"] for r in out),
        "seconds": round(time.time() - began, 1),
    }
    print(json.dumps(summary, indent=1))
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    path.write_text(json.dumps({"summary": summary, "rows": out}, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
