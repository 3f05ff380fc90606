"""The C allocator held in one regime in every process that times a model, so a model's time does not
depend on what that process ran before it.

PyTorch's CPU tensors come straight from malloc. glibc serves blocks above its mmap threshold
(128 KiB at first) with a fresh mmap each time, and every page of a fresh mapping faults on first
touch; the threshold rises only as such blocks are freed, so a process's speed depends on its
history. On the 2-vCPU VM of 2026-12-07 (1 thread, `benchmarks/bench_allocator.py`) torchvision's
mobilenet_v2 took ~23 ms in a fresh process and ~16 ms in one that had run resnet18 first. `nar bench
FILE` times in a fresh child while `nar calibrate` times zoo models one after another in a long-lived
worker, so a user's model was timed in the slow regime and the calibration models in the fast one: the
calibrated head came out 10-20 % under what users measured for small, memory-bound nets.

Holding the threshold fixed (32 MiB, as high as glibc's own would ever rise) and never trimming the
heap puts every measuring process, fresh or not, in the regime a long-running program reaches:
mobilenet_v2 then takes ~16 ms either way. Setting only one of the two is worse than neither (a fixed
trim threshold also freezes the mmap threshold at 128 KiB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: bigger blocks keep their own mapping
TRIM_THRESHOLD = 1 << 30

STEADY = "steady"  # glibc, both thresholds fixed
SYSTEM = "system"  # another C library: left as it is


def allocator_regime() -> str:
    """The regime this platform's measuring processes run in (without changing anything)."""
    return STEADY if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc" else SYSTEM


def hold_allocator_steady() -> str:
    """Fix glibc's mmap and trim thresholds in this process (see above); the regime it now runs in."""
    if allocator_regime() != STEADY:
        return SYSTEM
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        # the mmap threshold first: fixing the trim threshold alone freezes mmap's at 128 KiB
        done = (libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
                and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1)
    except (OSError, AttributeError):
        return SYSTEM
    return STEADY if done else SYSTEM


def same_regime(stored: dict) -> bool:
    """Whether a stored timing was taken in the regime this version measures in: older timings (no
    `allocator` field) were taken before the regime was fixed; `store.load` does not return them, so
    they are timed again rather than reused."""
    return stored.get("allocator") == allocator_regime()
