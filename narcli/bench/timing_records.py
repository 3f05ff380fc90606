"""Where a calibration's timings came from: each model's time reused from bench.db or taken now,
when, and how fast the core ran then (its matrix-product probe), summed up for `nar calibrate` and
`nar eval calibration`, and the reason, if any, to time them again with `--fresh`."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

# the core's speed (its matrix-product probe) in the reused timings against those taken now, moved by
# more than this: said, with `--fresh` (a laptop on battery, a VM with new neighbours; on this
# project's VM one model's quiet timings moved by up to 25 % between runs hours apart)
SPEED_MOVED = 0.10
STALE_HOURS = 12  # reused timings older than this: said, with `--fresh`, even where no probe tells


def timing_record(value: dict[str, Any], reused: bool) -> dict[str, Any]:
    """Where one calibration time came from: reused from the store or taken now, when, and the core's
    speed then (the measuring child's matrix-product probe at those threads, ms; None when unknown)."""
    quiet = value.get("quiet") if isinstance(value.get("quiet"), dict) else {}
    at = value.get("measured_at")
    probe = quiet.get("compute_probe_median")
    return {"reused": reused, "measured_at": at if isinstance(at, (int, float)) else None if reused else time.time(),
            "compute_probe_ms": probe if isinstance(probe, (int, float)) and probe > 0 else None}


def timings_summary(timings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """How many times were taken now and how many reused, when the reused ones were stored, and how
    much slower (+) or faster (-) the core ran now than in them (`core_speed_moved`, a share, when
    both have probes): a calibration that mixes days mixes machine speeds."""
    reused = [t for t in timings.values() if t["reused"]]
    now = [t for t in timings.values() if not t["reused"]]
    out: dict[str, Any] = {"taken_now": len(now), "reused": len(reused)}
    stamps = [t["measured_at"] for t in reused if t["measured_at"]]
    if stamps:
        out["reused_from"], out["reused_to"] = (time.strftime("%Y-%m-%d %H:%M", time.localtime(t))
                                                for t in (min(stamps), max(stamps)))
        out["oldest_hours"] = round((time.time() - min(stamps)) / 3600, 1)
    then = [t["compute_probe_ms"] for t in reused if t["compute_probe_ms"]]
    probed_now = [t["compute_probe_ms"] for t in now if t["compute_probe_ms"]]
    if then and probed_now:
        out["core_speed_moved"] = round(float(np.median(probed_now) / np.median(then) - 1), 3)
    return out


def stale_timings(summary: dict[str, Any]) -> str | None:
    """Why the reused timings of `timings_summary` may not be this machine's speed now, or None: the
    core ran faster or slower now than in them, or they are older than `STALE_HOURS`."""
    moved = summary.get("core_speed_moved")
    if moved is not None and abs(moved) > SPEED_MOVED:
        return (f"this run's core ran {abs(moved) * 100:.0f} % {'slower' if moved > 0 else 'faster'} than in the "
                "reused timings")
    if summary.get("reused") and (summary.get("oldest_hours") or 0) > STALE_HOURS:
        return f"the oldest reused timing is {summary['oldest_hours']:.0f} hours old"
    return None
