"""Where a calibration's times come from: stored timings reused (with when they were taken and the
core's speed then), `--fresh` timing every model again and replacing what is stored, and the line
that says when reused timings may not be this machine's speed now."""

import time

import numpy as np
import pytest
from typer.testing import CliRunner

from narcli.bench import calibrate as cal
from narcli.bench import store, timing_records
from narcli.bench.allocator import allocator_regime
from narcli.bench.device import device_info
from narcli.cli.app import app


def candidates(count: int = 3) -> list:
    return [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {}, np.zeros(0), graph_hash=f"timing-hash{i}", source="fake")
            for i in range(count)]


def timed_by_pool(monkeypatch, ms: float, probe: float, allocator: str | None = None) -> list[str]:
    """The measuring pool faked: every model it is given takes `ms`, beside a matrix product of `probe`
    ms, in the worker's malloc regime (`allocator`: this version's unless named; "" for a timing taken
    before the regime was held steady); returns the names it was asked to time, in order."""
    from narcli.trace.pool import TaskResult

    asked = []
    regime = allocator_regime() if allocator is None else allocator

    def one_worker(fn, tasks, on_result, **options):
        for key, _ in tasks:
            asked.append(key)
            on_result(TaskResult(key, True, {"median_ms": ms, "iqr_ms": 0.1, "runs": 2, "allocator": regime,
                                             "quiet": {"busy": False, "reasons": [], "compute_probe_median": probe}}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", one_worker)
    return asked


@pytest.fixture(autouse=True)
def checked_speed(monkeypatch):
    # the core-speed check against the machine's best is store-backed and tested elsewhere
    monkeypatch.setattr("narcli.bench.runner.core_speed_checked", lambda verdict: verdict)
    monkeypatch.setattr("narcli.bench.runner.unchecked_first", lambda verdict: False)


def test_stored_timings_are_reused_and_say_when_they_were_taken_and_how_fast_the_core_was(monkeypatch):
    chosen = candidates()
    timed_by_pool(monkeypatch, 2.0, 1.20)
    first: dict = {}
    cal.measure_models(chosen, 1, 2, None, lambda line: None, timings=first)
    assert all(not t["reused"] and t["compute_probe_ms"] == 1.20 and abs(t["measured_at"] - time.time()) < 60
               for t in first.values()) and len(first) == 3

    asked = timed_by_pool(monkeypatch, 3.0, 1.50)  # a slower day: nothing is timed, the stored times come back
    lines, again = [], {}
    measured = cal.measure_models(chosen, 1, 2, None, lines.append, timings=again)
    assert asked == [] and [ms for _, ms in measured] == [2.0] * 3
    assert all(t["reused"] and t["compute_probe_ms"] == 1.20 for t in again.values())
    assert all(line.endswith("(stored)") for line in lines)


def test_a_timing_stored_before_the_allocator_was_held_steady_is_taken_again_not_reused(monkeypatch):
    # such a timing came from a worker whose malloc regime depended on what it had run before
    chosen = candidates()
    timed_by_pool(monkeypatch, 2.0, 1.20, allocator="")
    cal.measure_models(chosen, 1, 2, None, lambda line: None)
    asked = timed_by_pool(monkeypatch, 3.0, 1.50)
    timings: dict = {}
    measured = cal.measure_models(chosen, 1, 2, None, lambda line: None, timings=timings)
    assert asked == [c.name for c in chosen] and [ms for _, ms in measured] == [3.0] * 3
    assert not any(t["reused"] for t in timings.values())
    asked = timed_by_pool(monkeypatch, 4.0, 1.50)  # now stored in this regime: reused
    assert [ms for _, ms in cal.measure_models(chosen, 1, 2, None, lambda line: None)] == [3.0] * 3 and asked == []


def test_fresh_times_every_model_again_and_replaces_the_stored_timing(monkeypatch):
    chosen = candidates()
    timed_by_pool(monkeypatch, 2.0, 1.20)
    cal.measure_models(chosen, 1, 2, None, lambda line: None)
    asked = timed_by_pool(monkeypatch, 3.0, 1.50)
    timings: dict = {}
    measured = cal.measure_models(chosen, 1, 2, None, lambda line: None, fresh=True, timings=timings)
    assert asked == [c.name for c in chosen] and [ms for _, ms in measured] == [3.0] * 3
    assert not any(t["reused"] for t in timings.values())
    key = device_info("cpu", 1).key
    assert store.load("timing-hash0", 1, key)["median_ms"] == 3.0  # the new timing is the one stored


def test_a_summary_of_mixed_timings_gives_their_dates_and_how_far_the_core_speed_moved():
    day = 86_400.0
    now = time.time()
    timings = {"a": {"reused": True, "measured_at": now - 2 * day, "compute_probe_ms": 1.0},
               "b": {"reused": True, "measured_at": now - day, "compute_probe_ms": 1.2},
               "c": {"reused": False, "measured_at": now, "compute_probe_ms": 1.32},
               "d": {"reused": False, "measured_at": now, "compute_probe_ms": None}}
    summary = timing_records.timings_summary(timings)
    assert summary["taken_now"] == 2 and summary["reused"] == 2
    assert summary["core_speed_moved"] == pytest.approx(0.2)  # 1.32 against the median 1.1 of the reused
    assert 47.9 < summary["oldest_hours"] < 48.1
    assert summary["reused_from"] < summary["reused_to"]
    assert timing_records.stale_timings(summary) == "this run's core ran 20 % slower than in the reused timings"
    faster = timing_records.timings_summary(timings | {"c": timings["c"] | {"compute_probe_ms": 0.88}})
    assert timing_records.stale_timings(faster) == "this run's core ran 20 % faster than in the reused timings"
    # no probe to compare: the age alone speaks; recent ones at the same speed say nothing
    old = timing_records.timings_summary({"a": timings["a"]})
    assert "core_speed_moved" not in old and timing_records.stale_timings(old) == "the oldest reused timing is 48 hours old"
    recent = {"a": {"reused": True, "measured_at": now - 600, "compute_probe_ms": 1.0},
              "c": {"reused": False, "measured_at": now, "compute_probe_ms": 1.05}}
    assert timing_records.stale_timings(timing_records.timings_summary(recent)) is None
    assert timing_records.stale_timings(timing_records.timings_summary({"c": timings["c"]})) is None  # nothing reused


def test_calibrate_says_which_timings_it_reused_and_how_to_time_them_again(capsys):
    from narcli.cli.render_bench import print_timings

    print_timings({"taken_now": 5, "reused": 15, "reused_from": "2026-12-05 10:00", "reused_to": "2026-12-06 23:00",
                   "oldest_hours": 40.0, "core_speed_moved": 0.18})
    assert capsys.readouterr().out.strip() == (
        "15 of 20 timings reused from the store (taken 2026-12-05 10:00 to 2026-12-06 23:00); this run's core ran "
        "18 % slower than in the reused timings: --fresh times them all again")
    print_timings({"taken_now": 0, "reused": 20, "reused_from": "2026-12-07 04:00", "reused_to": "2026-12-07 04:00",
                   "oldest_hours": 1.0})
    assert capsys.readouterr().out.strip() == "20 of 20 timings reused from the store (taken 2026-12-07 04:00)"
    print_timings({"taken_now": 20, "reused": 0})
    assert capsys.readouterr().out == ""


def test_the_fresh_option_reaches_both_thread_counts_and_the_head_keeps_the_summary(monkeypatch, tmp_path):
    from .test_bench import calibrating_offline

    asked = []

    def timed(models, threads, repeat, budget, report, allow_busy, busy, fresh=False, timings=None):
        asked.append((threads, fresh))
        for c in models:
            timings[c.name] = {"reused": not fresh, "measured_at": time.time(), "compute_probe_ms": 1.0}
        return [(c, float(c.parts[:3].sum()) * (0.7 if threads == 2 else 1.2)) for c in models]

    calibrating_offline(monkeypatch, tmp_path, timed)
    head = cal.calibrate("two", models=5, threads=2, fresh=True)
    assert asked == [(2, True), (1, True)]
    assert head["timings"] == {"taken_now": 5, "reused": 0} == head["one_thread_timings"]
    asked.clear()
    head = cal.calibrate("two", models=5, threads=2)
    assert asked == [(2, False), (1, False)] and head["timings"]["reused"] == 5


def test_nar_calibrate_fresh_is_passed_to_the_library(monkeypatch):
    seen = {}

    def fake(name, models, budget, threads, repeat, report, allow_busy=False, fresh=False):
        seen.update(name=name, fresh=fresh)
        return {"device": {"threads": 1}, "models": [{}] * 3, "asked": 3, "path": "/x/dev.json",
                "half_width_pct": 20.0, "timings": {"taken_now": 3, "reused": 0}}

    monkeypatch.setattr(cal, "calibrate", fake)
    result = CliRunner().invoke(app, ["calibrate", "--device", "dev", "--models", "3", "--fresh"])
    assert result.exit_code == 0, result.output
    assert seen == {"name": "dev", "fresh": True}
    CliRunner().invoke(app, ["calibrate", "--device", "dev", "--models", "3"])
    assert seen["fresh"] is False
