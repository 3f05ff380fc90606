"""The calibrated devices' latency rows in `nar predict` and `nar similar`: each saved device head
(`calibrate.calibrated_devices`) applied to a model's reference-CPU prediction."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from narcli.bench.calibrate import CPU_COLUMNS, calibrated_devices
from narcli.bench.transfer import ridge_apply


def device_rows(rows: list, macs: int, devices: dict[str, dict[str, Any]] | None = None,
                parts: Callable[[], np.ndarray | None] | None = None) -> list:
    """Rows for the calibrated devices. A head fitted on the parts of the reference prediction needs
    them (`parts()`, asked for once, only when such a head exists); one fitted before (on the whole
    reference prediction and MACs, or the timm CPU columns) needs only the rows."""
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target

    devices = calibrated_devices() if devices is None else devices
    out = []
    cpu = {r.target.column: r for r in rows if r.target.kind == "latency"}
    split: list[np.ndarray | None] = []
    for name, head in devices.items():
        device = head.get("device") or {}
        threads = device.get("threads")
        counted = isinstance(threads, int) and threads > 0
        threads_text = f"{threads} thread{'s' * (threads != 1)}" if counted else "? threads"
        label = f"{name} ({device.get('name', 'this CPU')}, {threads_text})" if counted else name
        target = Target(name, "latency", "ms", label, 1, log=True)
        over_one = " (timed at 1 thread too)" if head.get("thread_factors") else ""
        trained = (f"calibrated on this machine ({device.get('name', '?')}, {threads_text}) with "
                   f"{len(head.get('models', []))} zoo models{over_one} ({head.get('created', '?')}"
                   + (f"; fitted again {head['refitted']} for this install's reference head)" if head.get("refitted")
                      else ")"))
        usable = [cpu.get(c) for c in head.get("columns", CPU_COLUMNS)]
        if not usable or any(r is None or r.status != "ok" for r in usable) or macs <= 0:
            why = next((r for r in usable if r is not None and r.status != "ok"), None)
            reason = why.reason if why else "the reference CPU latency does not apply"
            out.append(Row("device", f"device {name}", target, None, None, None, "n/a", reason, trained))
            continue
        if head.get("kind") == "parts":
            from narcli.bench.transfer import predict_log

            if not split:
                split.append(parts() if parts is not None else None)
            if split[0] is None:
                out.append(Row("device", f"device {name}", target, None, None, None, "n/a",
                               "the reference prediction cannot be split for this model", trained))
                continue
            try:
                centre = float(predict_log(head, split[0])[0])
            except ValueError:  # fitted on the split before 2026-12-05, and its models are gone from the zoo
                out.append(Row("device", f"device {name}", target, None, None, None, "n/a",
                               "calibrated on an older split of the reference prediction: run "
                               f"`nar calibrate --device {name}` again", trained))
                continue
        else:
            x = np.array([math.log(r.value) for r in usable if r is not None and r.value] + [math.log(macs)])
            centre = float(ridge_apply(head, x)[0])
        out.append(Row("device", f"device {name}", target, math.exp(centre), math.exp(centre - head["half"]),
                       math.exp(centre + head["half"]), "ok", "", trained))
    return out
