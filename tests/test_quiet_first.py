"""The first timing at a thread count on a machine has no earlier core speed to be held against:
`nar bench` measures it twice and holds each against the other; `nar bench --zoo` and `nar
calibrate` measure that model again later in the run. A core slowed evenly all through a quiet
timing, by less than makes it busy, is said. The child is faked (`_fake_child`), so the verdicts
are the test's; the machine's bests are kept in the test's own bench.db."""

import json

import pytest

from narcli.bench import quiet, runner

from tests.test_quiet import BUSY, TINY_MODEL, _fake_child

QUIET = {"busy": False, "reasons": [], "other_cpu": 0.01, "steal": 0.0, "own_cpu_share": 1.0,
         "switches_per_s": 1.0, "spread": 0.01, "mhz": [], "seen": "proc", "threads": 2}


def _at(product, loop=0.55):
    """A quiet verdict whose matrix product took `product` ms in the median at 2 threads."""
    return QUIET | {"probe_ms": [loop, loop * 1.05], "compute_probe_median": product}


def test_the_first_timing_is_measured_twice_and_the_second_kept_when_both_are_quiet(cli, write, monkeypatch):
    child = _fake_child(_at(0.70), _at(0.69), medians=(33.0, 32.5))
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
    model = write("tiny_twice.py", TINY_MODEL)
    result = cli("bench", model, "-i", "1,8", "--repeat", "3", "--json")
    data = json.loads(result.stdout)
    assert len(child.measured) == 2 and data["attempts"] == 2 and data["disturbed"] == []
    assert data["median_ms"] == 32.5 and data["busy"] is False and data["stored"] is True
    assert data["quiet"]["checked_against_ms"] == 33.0 and not data["quiet"].get("first_on_machine")
    assert "the first timing at 2 threads on this machine: measuring once more" in " ".join(result.stderr.split())
    # the next timing has a best to be held against: measured once
    again = _fake_child(_at(0.70), medians=(32.8,))
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", again)
    text = " ".join(cli("bench", model, "-i", "1,8", "--repeat", "3").output.split())
    assert len(again.measured) == 1 and "median 32.8 ms" in text and "first timing" not in text


def test_a_first_timing_on_a_slowed_core_is_caught_by_the_second(cli, write, monkeypatch):
    # 2026-12-04 on this project's VM: the first of three resnet18 timings (product 1.13 ms, 46.7 ms)
    # was called quiet, the next two ran with products of 0.73 and 0.68 ms at 33.0 and 32.0 ms
    child = _fake_child(_at(1.13), _at(0.73), medians=(46.7, 33.0))
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
    model = write("tiny_slow_first.py", TINY_MODEL)
    data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)
    assert data["median_ms"] == 33.0 and data["busy"] is False and data["stored"] is True
    assert data["attempts"] == 2 and data["disturbed"][0]["median_ms"] == 46.7
    assert "arithmetic ran 55 % slower than it has on this machine" in data["disturbed"][0]["reasons"][0]
    child = _fake_child(_at(1.13), _at(0.73), medians=(46.7, 33.0))
    monkeypatch.setattr("narcli.bench.store.best_probe", _fresh_bests())
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
    text = " ".join(cli("bench", model, "-i", "1,8", "--repeat", "3").output.split())
    assert "median 33 ms" in text and "measured again: the first measurement was disturbed (median 46.7 ms" in text
    assert "the other median 46.7 ms" in text  # the kept one says what it was held against


def test_a_first_timing_stands_when_the_second_is_disturbed_from_outside(cli, write, monkeypatch):
    child = _fake_child(_at(0.70), BUSY | {"threads": 2, "compute_probe_median": 0.71}, medians=(33.0, 60.0))
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
    model = write("tiny_first_stands.py", TINY_MODEL)
    data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)
    assert len(child.measured) == 2 and data["median_ms"] == 33.0 and data["attempts"] == 2
    assert data["busy"] is False and data["stored"] is True and data["disturbed"] == []
    assert data["quiet"]["checked_against_ms"] == 60.0 and not data["quiet"].get("first_on_machine")


def test_a_first_timing_is_not_checked_when_busy_kept_or_measured_once(cli, write, monkeypatch):
    model = write("tiny_not_checked.py", TINY_MODEL)
    for options in (["--attempts", "1"], ["--allow-busy"]):
        monkeypatch.setattr("narcli.bench.store.best_probe", _fresh_bests())
        child = _fake_child(_at(0.70))
        monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
        data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json", *options).stdout)
        assert len(child.measured) == 1 and data["quiet"]["first_on_machine"] is True, options
    assert runner.unchecked_first(_at(0.7) | {"first_on_machine": True})
    assert not runner.unchecked_first(BUSY | {"first_on_machine": True})  # busy is taken again anyway
    assert not runner.unchecked_first(_at(0.7)) and not runner.unchecked_first(None)


def test_a_reference_runs_first_timing_is_measured_again_after_the_next(monkeypatch):
    from narcli.bench import reference, store
    from narcli.bench.device import device_info

    picks = reference.candidates(max_gmacs=0.001, sources=["classics"])[:2]
    monkeypatch.setattr(reference, "candidates", lambda *a, **k: picks)
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: True)
    # the first slowed; the second sets the best; the first again
    order = _one_thread_pool(monkeypatch, [1.13, 0.70, 0.71])
    lines = []
    summary = reference.collect(report=lines.append)
    assert order == [picks[0].id, picks[1].id, picks[0].id] and summary["measured"] == 2
    assert any("the first timing at 1 thread on this machine, not stored" in line for line in lines)
    stored = store.measurements(device_info("cpu", 1).key, 1)
    assert len(stored) == 2 and all(not row["quiet"]["busy"] for row in stored.values())


def test_a_reference_runs_limit_counts_new_models_not_timings_taken_again(monkeypatch):
    from narcli.bench import reference

    picks = reference.candidates(max_gmacs=0.001, sources=["classics"])[:3]
    monkeypatch.setattr(reference, "candidates", lambda *a, **k: picks)
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: True)
    order = _one_thread_pool(monkeypatch, [1.13, 0.70])
    summary = reference.collect(limit=1, report=lambda line: None)
    assert order == [picks[0].id, picks[0].id] and summary["measured"] == 1
    # with --allow-busy a timing is kept as it comes: the first is not measured again
    order = _one_thread_pool(monkeypatch, [0.9])
    monkeypatch.setattr("narcli.bench.store.best_probe", _fresh_bests())
    assert reference.collect(limit=1, allow_busy=True, report=lambda line: None)["measured"] == 1
    assert order == [picks[1].id]


def test_a_calibrations_first_timing_is_measured_again_after_the_rest(monkeypatch):
    import numpy as np
    from narcli.bench import calibrate as cal
    from narcli.trace.pool import TaskResult

    chosen = [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {}, np.zeros(0), graph_hash=f"first-hash{i}", source="fake")
              for i in range(3)]
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: True)
    timings = iter([(46.7, 1.13), (3.0, 0.70), (4.0, 0.71), (33.0, 0.72)])  # the first on a slowed core
    tried = []

    def one_worker(fn, tasks, on_result, **options):
        for key, _ in tasks:
            tried.append(key)
            median, product = next(timings)
            on_result(TaskResult(key, True, {"median_ms": median, "iqr_ms": 0.1, "runs": 2, "quiet": _at(product)}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", one_worker)
    lines = []
    measured = cal.measure_models(chosen, 2, 2, None, lines.append)
    assert tried == ["zoo/m0", "zoo/m1", "zoo/m2", "zoo/m0"]
    assert {c.name: ms for c, ms in measured} == {"zoo/m0": 33.0, "zoo/m1": 3.0, "zoo/m2": 4.0}
    assert any("zoo/m0: the first timing at these threads on this machine, not stored" in line for line in lines)


def _one_thread_pool(monkeypatch, products: list[float]) -> list[str]:
    """A reference run's worker pool, faked: each model quiet at one thread with the next of
    `products` as its matrix product's median. Returns the models in the order they were measured."""
    from narcli.trace.pool import TaskResult

    order, medians = [], iter(products)

    def pool(fn, tasks, on_result, **options):
        for key, args in tasks:
            order.append(key)
            verdict = _at(next(medians)) | {"threads": 1}
            on_result(TaskResult(key, True, {"median_ms": 3.0, "iqr_ms": 0.1, "runs": 5, "quiet": verdict}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", pool)
    return order


def _fresh_bests():
    """`store.best_probe` for a machine with no earlier measurement (the test's bench.db forgotten)."""
    bests = {}

    def best_probe(machine, fastest_ms):
        before = bests.get(machine)
        if before is None or fastest_ms < before:
            bests[machine] = fastest_ms
        return before

    return best_probe


def test_a_core_slowed_evenly_but_not_enough_to_be_busy_is_said(cli, write, monkeypatch, tmp_path):
    # on a machine whose clock can move (a laptop), an even slowing reads like a lowered clock and
    # is not busy; from SLOW_CORE_NOTE on it is said
    monkeypatch.setattr(quiet, "CPUFREQ", tmp_path)
    assert quiet.note_slow_core(_at(0.7, loop=0.66), 0.55) == _at(0.7, loop=0.66)  # 20 % slower: nothing
    noted = quiet.note_slow_core(_at(0.7, loop=0.76), 0.55)
    assert noted["slower_than_best"] == pytest.approx(0.382, abs=1e-3) and noted["busy"] is False
    assert quiet.note_slow_core(BUSY | {"probe_ms": [0.9, 1.0]}, 0.55) == BUSY | {"probe_ms": [0.9, 1.0]}
    assert quiet.note_slow_core(_at(0.7, loop=0.76), None) == _at(0.7, loop=0.76)  # no best yet
    model = write("tiny_slow_clock.py", TINY_MODEL)
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(_at(0.70), medians=(20.0,)))
    cli("bench", model, "-i", "1,8", "--repeat", "3", "--attempts", "1")  # sets this machine's bests
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(_at(0.84, loop=0.76), medians=(27.6,)))
    result = cli("bench", model, "-i", "1,8", "--repeat", "3")
    text = " ".join(result.output.split())
    assert result.exit_code == 0 and "machine quiet" in text and "stored under graph" in text
    assert "the core ran 38 % slower than the fastest this machine has shown, all through" in text
    data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)
    assert data["quiet"]["slower_than_best"] == pytest.approx(0.382, abs=1e-3)
    # where the clock cannot move (a VM without frequency scaling), the same timing is busy
    monkeypatch.setattr(quiet, "CPUFREQ", tmp_path / "absent")
    data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--attempts", "1", "--json").stdout)
    assert data["quiet"]["busy"] and any("arithmetic ran" in r for r in data["quiet"]["reasons"])
    assert not data["stored"]
