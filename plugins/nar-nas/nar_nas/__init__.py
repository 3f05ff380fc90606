"""nar zoo sources for two NAS spaces, built as real `nn.Module`s and traced like any user model.

- `nasbench201`: the NAS-Bench-201 network for any architecture string (all 15,625 by default, or
  the `arch_str` column of the CSV named by `$NAR_NB201_ARCHS`).
- `darts`: the DARTS space of `narcli.nas`; `$NAR_DARTS_COUNT` architectures (default 30,000) in
  10 classes generated from `$NAR_DARTS_SEED` (default 0): 10 diverse centres, the rest small edits
  of them, class = nearest centre. (`nar eval retrieval --nas` writes the same graphs without tracing.)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from nar_nas import darts, nb201
from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource


class NasBench201Source(ZooSource):
    name = "nasbench201"
    description = "NAS-Bench-201 cell space (CIFAR network, 32x32 inputs)"
    rank = 60
    bundled = False

    def version(self) -> str:
        # "reference-2": every edge computed as the benchmark's code runs it (none = x * 0);
        # graphs traced by an earlier network are another architecture's
        return nb201.NETWORK_VERSION

    def list_models(self) -> list[ZooEntry]:
        path = os.environ.get("NAR_NB201_ARCHS")
        archs = nb201.archs_from_csv(path) if path else nb201.all_archs()
        return [ZooEntry(arch, "nasbench201", "image-classification") for arch in archs]

    def build(self, entry: ZooEntry) -> BuiltModel:
        return _cifar_network(lambda: nb201.network(entry.name))


class DartsSource(ZooSource):
    name = "darts"
    description = "DARTS-style cell space, 10 classes around diverse centres (generated from a seed)"
    rank = 61
    bundled = False

    def list_models(self) -> list[ZooEntry]:
        seed = int(os.environ.get("NAR_DARTS_SEED", "0"))
        count = int(os.environ.get("NAR_DARTS_COUNT", str(darts.DEFAULT_COUNT)))
        return [ZooEntry(f"{i:05d}", f"darts-class{label}", "image-classification",
                         {"genotype": darts.encode(genotype), "class": label})
                for i, (genotype, label) in enumerate(darts.generate(count, seed))]

    def build(self, entry: ZooEntry) -> BuiltModel:
        return _cifar_network(lambda: darts.network(darts.decode(entry.extra["genotype"])))


def _cifar_network(make: Callable[[], Any]) -> BuiltModel:
    """Both spaces' networks: built on meta, traced on one 32x32 RGB image."""
    import torch

    with torch.device("meta"):
        model = make()
    return BuiltModel(model, [torch.empty((1, 3, 32, 32), device="meta")], input_names=["images"])


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [NasBench201Source(), DartsSource()]
