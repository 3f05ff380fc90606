"""The malloc regime every measuring process holds (`narcli.bench.allocator`): glibc's mmap threshold
fixed before its trim threshold, nothing changed elsewhere, and the regime a process really runs in."""

import subprocess
import sys

import pytest

from narcli.bench import allocator


class FakeLibc:
    def __init__(self, answer: int = 1):
        self.calls, self.answer = [], answer

    def mallopt(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return self.answer


def test_glibc_gets_a_fixed_mmap_threshold_first_and_then_a_trim_threshold(monkeypatch):
    libc = FakeLibc()
    monkeypatch.setattr(allocator, "allocator_regime", lambda: allocator.STEADY)
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: libc)
    assert allocator.hold_allocator_steady() == allocator.STEADY
    # the other order would leave the mmap threshold frozen at 128 KiB: slower than doing nothing
    assert libc.calls == [(allocator.M_MMAP_THRESHOLD, 32 << 20), (allocator.M_TRIM_THRESHOLD, 1 << 30)]


def test_a_refused_setting_says_the_process_runs_in_the_system_regime(monkeypatch):
    monkeypatch.setattr(allocator, "allocator_regime", lambda: allocator.STEADY)
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: FakeLibc(answer=0))
    assert allocator.hold_allocator_steady() == allocator.SYSTEM


def test_another_c_library_is_left_alone(monkeypatch):
    def no_libc(name):
        raise AssertionError("mallopt called outside glibc")

    monkeypatch.setattr(allocator, "allocator_regime", lambda: allocator.SYSTEM)
    monkeypatch.setattr(allocator.ctypes, "CDLL", no_libc)
    assert allocator.hold_allocator_steady() == allocator.SYSTEM


def test_only_timings_taken_in_this_regime_are_the_same_regime():
    assert allocator.same_regime({"allocator": allocator.allocator_regime()})
    assert not allocator.same_regime({"median_ms": 2.0})  # stored before the regime was held
    other = allocator.SYSTEM if allocator.allocator_regime() == allocator.STEADY else allocator.STEADY
    assert not allocator.same_regime({"allocator": other})


@pytest.mark.skipif(allocator.allocator_regime() != allocator.STEADY, reason="glibc only")
def test_a_real_process_holds_the_regime():
    # in a fresh interpreter, so this test process's allocator is left as it was
    code = "from narcli.bench.allocator import hold_allocator_steady as h; print(h())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == allocator.STEADY


def test_the_calibration_worker_times_in_the_regime_and_says_so():
    # `nar calibrate`'s long-lived worker; in a child, as the pool runs it (it pins its process)
    from narcli.bench.reference import measure_zoo_model
    from narcli.trace.isolation import run_isolated
    from narcli.zoo.plugins import zoo_sources

    if "classics" not in zoo_sources():
        pytest.skip("the nar-classics plugin is not installed")
    protocol = {"repeat": 3, "warmup_runs": 1, "warmup_seconds": 0.0, "max_seconds": None, "min_repeat": 3}
    measured = run_isolated(measure_zoo_model, ("classics", "classics/gru_forecaster_small", 1, protocol), 120,
                            "timing a classic")
    assert measured["allocator"] == allocator.allocator_regime() and measured["median_ms"] > 0
