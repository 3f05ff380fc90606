"""Lineage: the design a zoo family is derived from, read from the libraries' own code.

transformers writes many models as edits of another: `models/helium/modular_helium.py` imports
its layers from `..llama.modeling_llama` and changes a few. The family a model extends most (the
one it imports the most names from; for a model without a modular file, the one its
`# Copied from transformers.models.X` comments name most, at least `MIN_COPIES` times) is its
parent; following parents to the end gives the design it belongs to (`design("helium") == "llama"`).
A hand-written Llama whose nearest zoo graph is Helium's has found a Llama design, and the tools
say so beside the family.

The table ships as `data/lineage.csv` (family, parent), written by `python -m narcli.zoo.lineage`
from the installed transformers; reading it needs no transformers.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

from narcli import DATA_DIR
from narcli.fsutil import atomic_writer

TABLE = DATA_DIR / "lineage.csv"
MIN_COPIES = 3  # "# Copied from" comments naming one model before it counts as the parent

_IMPORT = re.compile(r"from \.\.(\w+)\.modeling_\w+ import \(?([^)]*?)\)?\n(?!\s)", re.S)
_COPIED = re.compile(r"# Copied from transformers\.models\.(\w+)\.")


def parents_from_source(models_dir: Path) -> dict[str, str]:
    """transformers model folder -> the folder it derives from most, from its modular or modeling file."""
    parents: dict[str, str] = {}
    for folder in sorted(p for p in models_dir.iterdir() if p.is_dir()):
        name = folder.name
        modular = folder / f"modular_{name}.py"
        counts: Counter[str] = Counter()
        if modular.exists():
            for source, names in _IMPORT.findall(modular.read_text(errors="replace")):
                counts[source] += len([n for n in re.split(r"[,\s]+", names) if n and n != "as"])
        else:
            modeling = folder / f"modeling_{name}.py"
            if modeling.exists():
                found = Counter(_COPIED.findall(modeling.read_text(errors="replace")))
                counts = Counter({k: v for k, v in found.items() if v >= MIN_COPIES})
        counts.pop(name, None)
        if counts:
            parents[name] = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    return parents


def family_parents(folder_parents: dict[str, str], table: dict[tuple[str, str], tuple[str, str]]) -> dict[str, str]:
    """The folder lineage lifted to families (through the reviewed family table's transformers rows)."""
    family_of = {key.replace("-", "_"): family for (source, key), (family, _) in table.items()
                 if source == "transformers"}
    out: dict[str, str] = {}
    for child, parent in folder_parents.items():
        a, b = family_of.get(child), family_of.get(parent)
        if a and b and a != b:
            out.setdefault(a, b)
    return out


@lru_cache(maxsize=1)
def lineage_table(path: Path = TABLE) -> dict[str, str]:
    """family -> parent family, from the shipped table (empty when it is missing)."""
    if not path.exists():
        return {}
    with open(path, newline="") as handle:
        return {row["family"]: row["parent"] for row in csv.DictReader(handle)}


def _chain(family: str, parents: dict[str, str] | None) -> list[str]:
    """`family`, its parent, the parent's parent, ... to its design's root; a cycle stops at the
    family met twice."""
    parents = lineage_table() if parents is None else parents
    seen = [family]
    while (parent := parents.get(seen[-1])) is not None and parent not in seen:
        seen.append(parent)
    return seen


def design(family: str | None, parents: dict[str, str] | None = None) -> str | None:
    """The family at the end of `family`'s lineage (itself when it derives from none)."""
    return None if family is None else _chain(family, parents)[-1]


def lineage_depth(family: str, parents: dict[str, str] | None = None) -> int:
    """How many parents `family` has before its design's root (0: a root, or no lineage)."""
    return len(_chain(family, parents)) - 1


def main() -> None:
    """Write data/lineage.csv from the installed transformers (maintainers)."""
    import importlib.util

    from narcli.zoo.labels import family_table

    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        sys.exit("transformers is not installed; `pip install transformers` first")
    parents = family_parents(parents_from_source(Path(spec.origin).parent / "models"), family_table())
    with atomic_writer(TABLE, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["family", "parent"])
        writer.writerows(sorted(parents.items()))
    print(f"wrote {TABLE}: {len(parents)} families with a parent")


if __name__ == "__main__":
    main()
