"""Every store nar keeps under NAR_HOME, checked and repaired in one place: what `nar cache info`
shows and `nar cache clear` repairs. Each store says its own health and knows its own repair
(this module only lists them):

- `nar.db`, the scan cache (`scan/cache.py`): emptied by `cache clear`; deleted when damaged;
- `bench.db`, latency measurements (`bench/store.py`), the user's `zoo.db` and the NAS-Bench-201
  graphs under `predictor/` (`zoo/health.py`): rows that do not decode are deleted, a file SQLite
  faults is set aside as `NAME.damaged`;
- `devices/`, calibrated device heads (`bench/calibrate.py`): a damaged head is set aside;
- `features/` and `index/` (`encode/feature_cache.py`, `search/neighbours.py`): damaged files are
  deleted; they are made again when next needed.

A store that is not nar's (a symlink, another program's database) is named, never touched.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def _checks() -> list[tuple[Callable[[], dict[str, Any]], Callable[[], str | None]]]:
    """(health, repair) of every store but the scan cache, in the order `cache info` lists them."""
    from narcli.bench import store as bench_store
    from narcli.bench.calibrate import devices_health, repair_devices
    from narcli.encode.feature_cache import features_health, repair_features
    from narcli.scan.cache import nar_home
    from narcli.search.neighbours import indexes_health, repair_indexes
    from narcli.zoo.health import repair_zoo, zoo_health

    checks: list[tuple[Callable[[], dict[str, Any]], Callable[[], str | None]]] = [
        (bench_store.health, bench_store.repair), (zoo_health, repair_zoo)]
    folder = nar_home() / "predictor"
    for db in sorted(folder.glob("*.db")) if folder.is_dir() else []:
        checks.append((_predictor_health(db), lambda db=db: repair_zoo(db)))
    return checks + [(devices_health, repair_devices), (features_health, repair_features),
                     (indexes_health, repair_indexes)]


def _predictor_health(db: Path) -> Callable[[], dict[str, Any]]:
    from narcli.zoo.health import zoo_health

    def health() -> dict[str, Any]:
        return zoo_health(db) | {"name": f"predictor/{db.name}", "what": "NAS-Bench-201 graphs (nar train predictor)"}

    return health


def cache_info() -> dict[str, Any]:
    """The scan cache's figures (as `Cache.info`), with `stores`: every store's name, path, size and
    health, and `damaged`: the paths of those that are not "ok"."""
    from narcli.scan.cache import Cache

    info = Cache().info()
    scan = {"name": "nar.db", "what": "scanned models (nar scan, nar similar FILE)", "path": info["path"],
            "exists": info["exists"], "bytes": info["bytes"], "health": info["health"]}
    stores = [scan] + [health() for health, _ in _checks()]
    return info | {"stores": stores, "damaged": [s["path"] for s in stores if s["health"] != "ok"]}


def clear_caches() -> dict[str, Any]:
    """`nar cache clear`: empty the scan cache (deleting it when damaged) and repair every other
    store that is damaged. What was removed (`Cache.clear`'s counts) with `repaired`: one line per
    store repaired. A store that is not nar's raises, before anything is changed."""
    from narcli.errors import StoreError
    from narcli.scan import sqlite_files
    from narcli.scan.cache import Cache

    checks = _checks()
    foreign = [state for state in (health() for health, _ in checks) if sqlite_files.is_foreign(state["health"])]
    if foreign:
        first = foreign[0]
        raise StoreError(f"{first['path']} is {first['health']}; nar leaves it alone: move it away or point "
                         "NAR_HOME elsewhere")
    removed = Cache().clear()
    repaired = [done for _, repair in checks if (done := repair())]
    return removed | {"repaired": repaired}


def problem_line(info: dict[str, Any]) -> str | None:
    """The one line `cache info` fails with (None when every store is sound): each damaged store
    and its repair, or a store that is not nar's and why it is left alone."""
    from narcli.scan import sqlite_files

    bad = [s for s in info["stores"] if s["health"] != "ok"]
    foreign = [s for s in bad if sqlite_files.is_foreign(s["health"])]
    if foreign:
        return f"{foreign[0]['path']} is {foreign[0]['health']}; nar leaves it alone: move it away or point NAR_HOME " \
               "elsewhere"
    if not bad:
        return None
    first, *rest = bad
    also = "".join(f"; so is {s['path']} ({s['health'][:120]})" for s in rest)
    return f"{first['path']} is damaged ({first['health'][:200]}){also}; run `nar cache clear -y` to repair " \
           f"{'them' if rest else 'it'}"
