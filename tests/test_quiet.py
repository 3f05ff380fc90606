"""Timings that know when the machine was busy: the verdict from two samples (synthetic), waiting
for a quiet machine (fake sleep), pinning, a busy `nar bench` that is reported and not stored, and a
reference run that does not keep a busy timing. A real busy loop beside a real timing is measured in
benchmarks/bench_quiet.py, not here (tests do not depend on the machine's load)."""

import json
import os
import statistics
import time

import pytest
from narcli.bench import quiet, runner
from narcli.bench.measure import time_runs
from narcli.bench.quiet import Sample, assess


class FakeClock:
    def __init__(self, durations):
        self.now, self.durations, self.calls = 0.0, list(durations), 0

    def timer(self):
        return self.now

    def run(self):
        self.now += self.durations[self.calls % len(self.durations)]
        self.calls += 1


def _samples(wall=1.0, own=1.0, switches=0, machine=None, steal=0, tick=100):
    before = Sample(0.0, 0.0, 0, 0 if machine is not None else None, 0 if machine is not None else None)
    busy_ticks = None if machine is None else int(machine * wall * tick)
    after = Sample(wall, own, switches, busy_ticks, None if machine is None else int(steal * wall * tick))
    return before, after


def test_a_quiet_machine_is_quiet():
    verdict = assess(*_samples(own=0.99, machine=1.01, switches=2), threads=1, spread=0.01, tick=100)
    assert not verdict.busy and verdict.reasons == [] and verdict.other_cpu == pytest.approx(0.02)
    assert verdict.describe().startswith("machine quiet (other processes 0.02 cores")


def test_another_process_on_the_other_core_makes_it_busy_even_when_runs_are_even():
    # the case that went unnoticed: two threads waiting on each other, runs perfectly even
    verdict = assess(*_samples(own=1.0, machine=2.0), threads=2, spread=0.005, tick=100)
    assert verdict.busy and verdict.other_cpu == pytest.approx(1.0)
    assert "other processes used 1.00 CPU cores" in verdict.describe()


def test_many_threads_beside_a_busy_process_are_told_how_many_leave_it_its_cores():
    # 16 threads beside one spinning process (resnet18 at 60x on a 16-core host): 15 leave it its core
    verdict = assess(*_samples(own=16.0, machine=17.0), threads=16, spread=0.5, tick=100).to_dict()
    assert verdict["busy"] and quiet.threads_beside_others(verdict, cores=16) == 15
    assert quiet.threads_beside_others(verdict | {"other_cpu": 2.6}, cores=16) == 13
    assert quiet.threads_beside_others(verdict, cores=64) == 15  # fewer than asked, not the whole machine
    assert quiet.threads_beside_others(verdict | {"threads": 1}, cores=16) is None  # one thread: nothing to leave
    assert quiet.threads_beside_others(verdict | {"other_cpu": 0.05}, cores=16) is None  # nobody else there
    assert quiet.threads_beside_others(verdict | {"threads": 2, "other_cpu": 2.0}, cores=2) is None  # none left
    from narcli.cli.render_bench import bench_verdict

    cores = quiet.usable_cores()
    line = bench_verdict(verdict | {"threads": cores}, stored=False)
    assert "close what runs beside it and measure again" in line
    assert ("--threads" in line) == (cores > 1)


def test_steal_waiting_preemption_and_spread_are_each_a_reason():
    verdict = assess(*_samples(own=0.6, machine=0.6, steal=0.3, switches=500), threads=1, spread=0.2, tick=100)
    text = " ".join(verdict.reasons)
    for reason in ("steal time", "ran only 60 %", "preempted 500 times", "spread 20 %"):
        assert reason in text


def test_jitter_on_a_quiet_machine_is_unstable_not_busy():
    # several threads on few cores preempt one another with nobody else there: keep it, say so
    verdict = assess(*_samples(own=2.0, machine=2.0, switches=300), threads=2, spread=0.18, tick=100)
    assert not verdict.busy and verdict.reasons == []
    assert verdict.unstable == ["preempted 300 times a second", "runs spread 18 % (IQR over median)"]
    assert "unstable" in verdict.describe() and "--repeat" in verdict.describe()


def test_jittery_watched_runs_go_on_until_they_steady():
    clock = FakeClock([0.001, 0.003] * 2 + [0.002] * 400)  # jitter, then steady
    result = time_runs(clock.run, 5, timer=clock.timer, watch_threads=1, warmup_runs=0, warmup_seconds=0.0)
    assert 5 < result.runs <= 20 and result.median_ms == pytest.approx(2.0)


def test_without_proc_only_what_the_process_sees_is_used():
    verdict = assess(*_samples(own=1.0), threads=1, spread=0.01)
    assert not verdict.busy and verdict.seen == "rusage" and verdict.other_cpu is None


def test_a_moving_cpu_clock_is_reported():
    before = Sample(0.0, 0.0, 0, mhz=(3000.0, 3000.0))
    after = Sample(1.0, 1.0, 0, mhz=(2000.0, 3000.0))
    assert "clock moved 33 %" in " ".join(assess(before, after, 1, 0.0).reasons)


def test_a_core_whose_speed_changes_during_the_runs_makes_it_busy():
    # nothing in /proc moves when another VM takes the other half of the physical core: only the
    # probe loop's time does
    verdict = assess(*_samples(own=1.0, machine=1.0), threads=1, spread=0.01, tick=100, probes=[0.70, 1.28, 1.30])
    assert verdict.busy and verdict.probe_ms == [0.7, 1.3]
    assert "core's speed changed during the runs (a fixed loop took 0.70 to 1.30 ms; 2 of 3 probes slow)" \
        in verdict.describe()
    steady = assess(*_samples(own=1.0, machine=1.0), threads=1, spread=0.01, tick=100, probes=[0.70, 0.75, 0.71])
    assert not steady.busy and steady.probe_ms == [0.7, 0.75]


def test_runs_are_judged_by_the_probes_on_either_side():
    # probes before runs 0, 3 and 6, and after the last (run 8): the slow one before run 3 marks
    # the runs on both of its sides
    assert quiet.slowed_runs([0.7, 1.4, 0.7, 0.7], [0, 3, 6, 9], 9) == [0, 1, 2, 3, 4, 5]
    assert quiet.slowed_runs([0.7, 0.7, 0.8], [0, 3, 6], 6) == []  # within SPEED_DRIFT of full speed
    assert quiet.slowed_runs([0.7], [0], 5) == []  # one probe: nothing to compare


def test_a_few_runs_beside_a_slowed_core_are_left_out_and_the_machine_stays_quiet():
    verdict = assess(*_samples(own=1.0, machine=1.0), threads=1, spread=0.01, tick=100,
                     probes=[0.70, 1.30, 0.71], slowed=(4, 20))
    assert not verdict.busy and verdict.slowed_runs == 4 and verdict.runs == 20
    assert "4 of 20 runs beside a slowed core left out" in verdict.describe()
    crowded = assess(*_samples(own=1.0, machine=1.0), threads=1, spread=0.01, tick=100,
                     probes=[0.70, 1.30, 0.71], slowed=(11, 20), compute_probes=[1.12, 1.36])
    assert crowded.busy and "6 of 20" not in crowded.describe() and crowded.compute_probe_ms == [1.12, 1.36]
    assert "a matrix product 1.12 to 1.36 ms; 11 of 20 runs beside a slowed core" in crowded.describe()


def _probing(monkeypatch, speeds):
    """Fake probe times; the machine's samples show nothing else (the fake runs take no real time)."""
    taken = []
    speeds = iter(speeds)
    monkeypatch.setattr(quiet, "sample", lambda: Sample(0.0, 0.0, 0))

    def fake_probe(timer):
        taken.append(next(speeds))
        return taken[-1]

    monkeypatch.setattr(quiet, "probe", fake_probe)
    return taken


def test_a_short_slowing_leaves_its_runs_out_of_the_median(monkeypatch):
    # every run takes longer than PROBE_EVERY, so a probe comes before each run (and one after the
    # last): the slow probe before run 6 marks runs 5 and 6, the two a neighbour's burst slowed
    taken = _probing(monkeypatch, [0.7] * 6 + [1.4] + [0.7] * 200)
    clock = FakeClock([0.058, 0.062] * 2 + [0.058, 0.5, 0.5] + [0.062, 0.058] * 200)
    result = time_runs(clock.run, 20, timer=clock.timer, watch_threads=1, warmup_runs=0, warmup_seconds=0.0)
    assert len(taken) == result.runs + 1  # before every run, and once after
    assert not result.quiet["busy"] and result.quiet["probe_ms"] == [0.7, 1.4]
    assert result.left_out == [5, 6] and result.quiet["slowed_runs"] == 2
    assert result.runs == 22  # went on until 20 ran at full speed
    assert result.median_ms == pytest.approx(60.0)  # the median of all 22 runs would be 62 ms
    assert statistics.median(result.times_ms) == pytest.approx(62.0)


def test_a_core_slowed_for_most_runs_is_busy_and_nothing_is_left_out(monkeypatch):
    taken = _probing(monkeypatch, [0.7] + [1.4] * 200)  # full speed once, then slowed
    clock = FakeClock([0.02])
    result = time_runs(clock.run, 20, timer=clock.timer, watch_threads=1, warmup_runs=0, warmup_seconds=0.0)
    assert result.quiet["busy"] and result.left_out == [] and result.runs == 80  # went on, up to 4x
    assert time_runs(clock.run, 3, timer=clock.timer, warmup_seconds=0.0).quiet is None  # unwatched: no probes
    assert len(taken) <= 40


def test_the_probe_times_a_real_loop():
    assert 0 < quiet.probe() < 1000


def test_a_real_sample_reads_this_process():
    first = quiet.sample()
    sum(i * i for i in range(200_000))
    second = quiet.sample()
    assert second.own_cpu >= first.own_cpu and second.wall > first.wall


def test_waiting_for_quiet_returns_once_the_machine_is_quiet(monkeypatch):
    readings = iter([1.0, 0.9, 0.05])
    monkeypatch.setattr(quiet, "other_cpu_now", lambda window, sleep: next(readings))
    lines = []
    assert quiet.wait_for_quiet(limit=60, report=lines.append) is True
    assert len(lines) == 1 and "waiting for the machine to be quiet" in lines[0]


def test_waiting_for_quiet_gives_up_at_its_limit(monkeypatch):
    monkeypatch.setattr(quiet, "other_cpu_now", lambda window, sleep: 1.0)
    assert quiet.wait_for_quiet(limit=0, report=lambda line: None) is False


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_pinning_keeps_the_asked_number_of_cpus():
    allowed = sorted(os.sched_getaffinity(0))
    try:
        kept = quiet.pin(1)
        assert len(kept) == 1 and kept[0] == allowed[-1]
        if len(allowed) > 1:
            assert sorted(os.sched_getaffinity(0)) == kept
        assert quiet.pin(len(allowed) + 5) == sorted(os.sched_getaffinity(0))
    finally:
        os.sched_setaffinity(0, allowed)


BUSY = {"busy": True, "reasons": ["other processes used 1.00 CPU cores while timing"], "other_cpu": 1.0,
        "steal": 0.0, "own_cpu_share": 0.5, "switches_per_s": 200.0, "spread": 0.01, "mhz": [], "seen": "proc"}


TINY_MODEL = ("from torch import nn\n\nclass Tiny(nn.Module):\n    def __init__(self):\n"
              "        super().__init__()\n        self.fc = nn.Linear(8, 2)\n\n    def forward(self, x):\n"
              "        return self.fc(x)\n")


def _fake_child(*verdicts, medians=(950.0,)):
    """`run_isolated` that measures nothing: the child's answer with the given verdicts in turn, the
    last one from then on (the scan before it runs as usual)."""
    from narcli.trace.isolation import run_isolated

    measured = []

    def isolated(fn, args, timeout, what):
        if fn.__name__ != "measure_in_child":
            return run_isolated(fn, args, timeout, what)
        turn = min(len(measured), len(verdicts) - 1)
        median = medians[min(len(measured), len(medians) - 1)]
        measured.append(1)
        return {"median_ms": median, "iqr_ms": 1.0, "runs": args[0].repeat, "warmup": 3, "times_ms": [median] * 3,
                "warmup_ms": 1.0, "quiet": verdicts[turn], "pinned": []}
    isolated.measured = measured
    return isolated


@pytest.fixture
def quiet_at_once(monkeypatch):
    """Other processes are quiet whenever `nar bench` waits for them (what waiting saw: the limits)."""
    waits = []
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda limit, report=None, **k: waits.append(limit) or True)
    return waits


def test_a_busy_bench_says_so_and_is_not_stored(cli, write, monkeypatch, quiet_at_once):
    from narcli.bench import store

    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(BUSY))
    model = write("tiny_busy.py", TINY_MODEL)
    result = cli("bench", model, "-i", "1,8", "--repeat", "3")
    assert result.exit_code == 0, result.output
    assert "machine busy: other processes used 1.00 CPU cores" in result.output
    assert "not stored" in result.output
    assert "busy in all 3 measurements" in " ".join(result.output.split())
    data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)
    assert data["busy"] is True and data["stored"] is False and data["quiet"]["other_cpu"] == 1.0
    assert data["attempts"] == 3 and len(data["disturbed"]) == 2
    assert not store.for_graph(data["graph_hash"])
    kept = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json", "--allow-busy").stdout)
    assert kept["stored"] is True and store.for_graph(data["graph_hash"])[0]["quiet"]["busy"] is True


def test_a_disturbed_timing_is_taken_again_and_the_quiet_one_kept(cli, write, monkeypatch, quiet_at_once):
    from narcli.bench import store

    calm = BUSY | {"busy": False, "reasons": [], "other_cpu": 0.01}
    child = _fake_child(BUSY, calm, medians=(30.1, 25.2))
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
    model = write("tiny_retried.py", TINY_MODEL)
    data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)
    assert data["busy"] is False and data["stored"] is True and data["median_ms"] == 25.2
    assert data["attempts"] == 2 and data["disturbed"][0]["median_ms"] == 30.1
    assert data["disturbed"][0]["reasons"] == BUSY["reasons"]
    assert len(child.measured) == 2 and quiet_at_once == [runner.QUIET_WAIT]
    assert [row["median_ms"] for row in store.for_graph(data["graph_hash"])] == [25.2]  # only the quiet one
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(BUSY, calm, medians=(30.1, 25.2)))
    text = " ".join(cli("bench", model, "-i", "1,8", "--repeat", "3").output.split())
    assert "median 25.2 ms" in text and "stored under graph" in text
    assert "measured again: the first measurement was disturbed (median 30.1 ms; other processes used 1.00" in text
    assert "disturbed while timing tiny_retried.py:Tiny; measuring again once other processes are quiet " \
        "(attempt 2 of 3)" in text  # said before it waits


def test_when_every_measurement_is_busy_the_fastest_is_returned(cli, write, monkeypatch, quiet_at_once):
    from narcli.bench import store

    medians = (34.6, 32.0, 36.1)  # a neighbour slowed all three by different amounts
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(BUSY, medians=medians))
    model = write("tiny_all_busy.py", TINY_MODEL)
    data = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)
    assert data["median_ms"] == 32.0 and data["busy"] is True and data["stored"] is False
    assert data["attempts"] == 3 and [d["median_ms"] for d in data["disturbed"]] == [34.6, 36.1]
    assert not store.for_graph(data["graph_hash"])
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(BUSY, medians=medians))
    text = " ".join(cli("bench", model, "-i", "1,8", "--repeat", "3").output.split())
    assert "median 32 ms" in text
    assert "busy in all 3 measurements; the fastest is shown (the other medians 34.6, 36.1 ms)" in text


def test_allow_busy_keeps_the_first_timing_without_measuring_again(cli, write, monkeypatch, quiet_at_once):
    child = _fake_child(BUSY)
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
    model = write("tiny_kept_busy.py", TINY_MODEL)
    data = json.loads(cli("bench", model, "-i", "1,8", "--json", "--allow-busy").stdout)
    assert data["busy"] is True and data["stored"] is True and data["attempts"] == 1
    assert len(child.measured) == 1 and quiet_at_once == []


def test_a_machine_that_stays_busy_is_not_measured_again(cli, write, monkeypatch):
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: False)  # a compiler still runs beside it
    child = _fake_child(BUSY)
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", child)
    model = write("tiny_stays_busy.py", TINY_MODEL)
    result = cli("bench", model, "-i", "1,8", "--repeat", "3", "--json")
    data = json.loads(result.stdout)
    assert data["busy"] is True and data["attempts"] == 1 and len(child.measured) == 1
    assert "other processes stayed busy for 10 s; not measured again" in " ".join(result.output.split())
    once = _fake_child(BUSY)
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", once)
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: True)
    assert json.loads(cli("bench", model, "-i", "1,8", "--json", "--attempts", "1").stdout)["attempts"] == 1
    assert len(once.measured) == 1


@pytest.mark.parametrize("attempts", ["0", "11", "two"])
def test_a_bad_number_of_attempts_is_one_clear_line(cli, attempts):
    result = cli("bench", "resnet18", "--attempts", attempts)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "attempts" in result.output


def test_a_quiet_bench_is_stored_and_says_it_was_quiet(cli, write, monkeypatch):
    calm = BUSY | {"busy": False, "reasons": [], "other_cpu": 0.01}
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(calm))
    model = write("tiny_calm.py", TINY_MODEL)
    result = cli("bench", model, "-i", "1,8", "--repeat", "3")
    assert result.exit_code == 0 and "machine quiet (other processes 0.01 cores" in result.output
    assert "stored under graph" in result.output


def test_a_core_slowed_for_the_whole_measurement_is_caught_against_the_machines_best(cli, write, monkeypatch,
                                                                                   quiet_at_once):
    # a slow phase that lasts the whole measurement looks steady from inside it: the fastest probe
    # this machine has shown (kept in bench.db) tells
    calm = BUSY | {"busy": False, "reasons": [], "other_cpu": 0.01}
    model = write("tiny_slowed.py", TINY_MODEL)
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(calm | {"probe_ms": [0.55, 0.6]}))
    fast = json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)
    assert fast["busy"] is False and fast["stored"] is True
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(calm | {"probe_ms": [1.1, 1.2]}))
    slowed = cli("bench", model, "-i", "1,8", "--repeat", "3")
    assert slowed.exit_code == 0
    text = " ".join(slowed.output.split())
    assert "the core ran at 50 % of the speed it has shown on this machine" in text
    assert "not stored; measure again later" in text  # nothing on this machine to close
    assert json.loads(cli("bench", model, "-i", "1,8", "--repeat", "3", "--json").stdout)["busy"] is True


def test_the_first_measurement_on_a_machine_says_its_speed_could_not_be_checked(cli, write, monkeypatch):
    # a core slowed for a whole hour looks quiet to a machine with no earlier measurement to compare
    calm = BUSY | {"busy": False, "reasons": [], "other_cpu": 0.01, "probe_ms": [0.6, 0.62],
                   "compute_probe_median": 0.7, "threads": 2}
    monkeypatch.setattr("narcli.trace.isolation.run_isolated", _fake_child(calm))
    model = write("tiny_first.py", TINY_MODEL)
    # measured once, as asked: nothing to check it against (by default it is measured twice,
    # tests/test_quiet_first.py)
    first = " ".join(cli("bench", model, "-i", "1,8", "--repeat", "3", "--attempts", "1").output.split())
    assert "machine quiet" in first and "the first measurement at 2 threads on this machine" in first
    again = " ".join(cli("bench", model, "-i", "1,8", "--repeat", "3").output.split())
    assert "machine quiet" in again and "first measurement" not in again
    assert not json.loads(cli("bench", model, "-i", "1,8", "--json").stdout)["quiet"].get("first_on_machine")


def test_against_best_leaves_a_measurement_at_full_speed_alone():
    verdict = {"busy": False, "reasons": [], "probe_ms": [0.6, 0.62]}
    assert quiet.against_best(verdict, 0.55) == verdict  # within SLOWER_THAN_BEST of the best
    assert quiet.against_best(verdict, 0.45) == verdict  # a laptop's sustained clock, not a busy machine
    assert quiet.against_best(verdict, None) == verdict  # the first measurement on this machine
    assert quiet.against_best({"busy": False, "reasons": []}, 0.55)["busy"] is False  # no probes (GPU, old rows)
    assert quiet.against_best(verdict, 0.35)["busy"] is True  # a shared core at half speed


def test_the_protocol_watches_the_machine_when_asked():
    from narcli.bench.measure import time_runs

    watched = time_runs(lambda: sum(range(1000)), 5, watch_threads=1, warmup_seconds=0.0)
    assert watched.quiet is not None and set(watched.quiet) >= {"busy", "reasons", "other_cpu", "spread"}
    assert time_runs(lambda: None, 3, warmup_seconds=0.0).quiet is None


def test_a_reference_run_does_not_keep_a_busy_timing_and_tries_it_again_when_quiet(monkeypatch):
    from narcli.bench import reference, store
    from narcli.bench.device import device_info
    from narcli.trace.pool import TaskResult

    picks = reference.candidates(max_gmacs=0.001, sources=["classics"])[:2]
    monkeypatch.setattr(reference, "candidates", lambda *a, **k: picks)
    verdicts = iter([BUSY, BUSY | {"busy": False, "reasons": []}, BUSY | {"busy": False, "reasons": []}])
    waited = []
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: waited.append(1) or True)

    def pool(fn, tasks, on_result, **options):  # one worker: the next task is taken after each result
        for key, args in tasks:
            on_result(TaskResult(key, True, {"median_ms": 3.0, "iqr_ms": 0.1, "runs": 5, "quiet": next(verdicts)}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", pool)
    lines = []
    summary = reference.collect(report=lines.append)
    assert summary["busy"] == 1 and summary["measured"] == 2 and waited == [1]
    assert any(line.startswith(f"busy: {picks[0].id} not stored") for line in lines)
    stored = store.measurements(device_info("cpu", 1).key, 1)
    assert all(not row["quiet"]["busy"] for row in stored.values()) and len(stored) == 2


def test_a_slowing_only_the_matrix_product_probe_sees_leaves_its_runs_out(monkeypatch):
    # a neighbour's burst that slows two-thread arithmetic while the one-thread loop runs at speed
    _probing(monkeypatch, [0.7] * 400)
    products = iter([1.12, 1.13] * 3 + [1.36] + [1.13] * 400)
    clock = FakeClock([0.058, 0.062] * 2 + [0.058, 0.5, 0.5] + [0.062, 0.058] * 200)
    result = time_runs(clock.run, 20, timer=clock.timer, watch_threads=2, warmup_runs=0, warmup_seconds=0.0,
                       compute_probe=lambda: next(products))
    assert not result.quiet["busy"] and result.quiet["compute_probe_ms"] == [1.12, 1.36]
    assert result.left_out == [5, 6] and result.median_ms == pytest.approx(60.0)
    # within COMPUTE_DRIFT of the fastest is not slowed
    assert quiet.slowed_runs([1.12, 1.20, 1.13], [0, 3, 6], 6, quiet.COMPUTE_DRIFT) == []


def test_a_slowing_that_leaves_too_few_runs_for_a_median_is_busy(monkeypatch):
    # the reference protocol stops after `max_seconds`: two of its three runs slowed leave one
    _probing(monkeypatch, [0.7, 1.4, 0.7, 0.7])
    clock = FakeClock([0.3])
    result = time_runs(clock.run, 10, timer=clock.timer, watch_threads=1, warmup_runs=0, warmup_seconds=0.0,
                       max_seconds=0.8, min_repeat=3)
    assert result.runs == 3 and result.left_out == [] and result.quiet["busy"]
    assert quiet.too_slowed(1, 5, needed=3) is False and quiet.too_slowed(3, 5) is True
    assert quiet.too_slowed(2, 5, needed=4) is True  # few enough by share, but three runs are too few
    assert quiet.too_slowed(0, 3, needed=5) is False


def test_one_fast_probe_does_not_make_a_quiet_measurement_look_slowed():
    # two threads on 2026-11-28: one product in ten ran faster than the rest; against that one,
    # 60 % of a quiet measurement's runs looked slowed and it was called busy
    products = [0.56] + [0.60, 0.61, 0.62, 0.60, 0.64, 0.61, 0.63, 0.60, 0.62] * 3
    at = list(range(len(products)))
    assert quiet.typical_fast(products, quiet.COMPUTE_DRIFT) == pytest.approx(0.60)
    assert quiet.slowed_runs(products, at, len(products) - 1, quiet.COMPUTE_DRIFT) == []
    drifted = products[:22] + [p * 1.15 for p in products[22:]]  # a real slowing (the last six) still counts
    assert quiet.slowed_runs(drifted, at, len(products) - 1, quiet.COMPUTE_DRIFT) == list(range(21, 27))
    # full speed once, then a core slowed for the rest: the fastest shows full speed
    slowed = [0.56] + [0.70] * 12
    assert quiet.typical_fast(slowed, quiet.COMPUTE_DRIFT) == pytest.approx(0.56)
    assert quiet.slowed_runs(slowed, list(range(13)), 12, quiet.COMPUTE_DRIFT) == list(range(12))
    assert quiet.typical_fast([0.55] + [0.72] * 30) == pytest.approx(0.55)  # the loop probe alike


def test_a_matrix_product_slower_than_the_machines_best_makes_it_busy():
    verdict = {"busy": False, "reasons": [], "compute_probe_median": 0.63, "threads": 2}
    busy = quiet.compute_against_best(verdict, 0.57)
    assert busy["busy"] and "arithmetic ran 11 % slower than it has on this machine" in busy["reasons"][0]
    assert "0.630 ms in the median; at best 0.570 ms at 2 threads" in busy["reasons"][0]
    assert quiet.compute_against_best(verdict, 0.61) == verdict  # within COMPUTE_SLOWER_THAN_BEST
    assert quiet.compute_against_best(verdict, None) == verdict  # the first measurement at 2 threads
    # a laptop's clock 12 % lower slows the loop as much: not a busy machine
    assert quiet.compute_against_best(verdict, 0.57, clock=1.12) == verdict
    assert quiet.compute_against_best({"busy": False, "reasons": []}, 0.57)["busy"] is False  # no product (GPU)


def test_the_products_best_is_kept_per_thread_count(monkeypatch, tmp_path):
    from narcli.bench.runner import core_speed_checked

    def verdict(product, threads, loop=0.55):
        return {"busy": False, "reasons": [], "probe_ms": [loop, loop * 1.05], "compute_probe_median": product,
                "threads": threads}

    assert core_speed_checked(verdict(0.57, 2))["busy"] is False  # the first at 2 threads sets the best
    assert core_speed_checked(verdict(1.12, 1))["busy"] is False  # 1 thread has its own
    assert core_speed_checked(verdict(0.59, 2))["busy"] is False
    slowed = core_speed_checked(verdict(0.64, 2))
    assert slowed["busy"] and quiet.slowed_from_outside(slowed)
    assert core_speed_checked(verdict(1.30, 1))["busy"] is True
    monkeypatch.setattr(quiet, "CPUFREQ", tmp_path)  # a machine whose clock can move (a laptop)
    assert core_speed_checked(verdict(0.66, 2, loop=0.66))["busy"] is False  # the clock explains it (0.66/0.55)
    monkeypatch.setattr(quiet, "CPUFREQ", tmp_path / "absent")  # a VM: no frequency scaling to read
    fixed = core_speed_checked(verdict(0.66, 2, loop=0.66))
    assert fixed["busy"] and "allowing for the clock" not in fixed["reasons"][-1]


def test_a_slow_model_asked_for_many_runs_keeps_a_median_of_its_clean_ones(monkeypatch):
    # `nar calibrate` asks for 20 runs and 20 at least; a 0.5 s model cannot make up the runs it
    # loses within 3 s, and 18 clean runs are a median (it was called busy three times over)
    _probing(monkeypatch, [0.7] * 6 + [1.4] + [0.7] * 100)
    clock = FakeClock([0.5])
    result = time_runs(clock.run, 20, timer=clock.timer, watch_threads=2, warmup_runs=0, warmup_seconds=0.0,
                       min_repeat=20)
    assert result.runs == 20 and result.left_out == [5, 6] and not result.quiet["busy"]
    assert result.quiet["slowed_runs"] == 2


def test_a_tiny_model_is_probed_often_enough_that_one_slow_product_does_not_condemn_every_run(monkeypatch):
    # 20 runs of a 1 ms model fit between two probes PROBE_EVERY apart: with only a probe before and
    # after them, the slower of two matrix products (10-20 % apart on a quiet core) marked all 20
    # runs and the measurement was busy every time; at least MEDIAN_RUNS probes tell it from the rest
    taken = _probing(monkeypatch, [0.7] * 400)
    products = iter([1.13, 1.36] + [1.14, 1.13, 1.15] * 100)
    clock = FakeClock([0.001])
    result = time_runs(clock.run, 20, timer=clock.timer, watch_threads=1, warmup_runs=0, warmup_seconds=0.0,
                       compute_probe=lambda: next(products))
    assert len(taken) >= quiet.MEDIAN_RUNS
    assert not result.quiet["busy"]
    assert result.left_out == list(range(10)) and result.runs == 30  # went on until 20 ran at full speed


def test_the_speed_a_machine_reaches_is_its_fastest_tenth_once_ten_were_seen(monkeypatch):
    from narcli.bench import store

    seen = [store.usual_fast_probe("m:product:1t", 1.20 + 0.01 * i) for i in range(store.SPEED_HISTORY_NEEDED)]
    assert seen == [None] * store.SPEED_HISTORY_NEEDED  # too few yet: the caller holds against the lowest
    usual, count = store.usual_fast_probe("m:product:1t", 1.50)
    assert count == 10 and usual == pytest.approx(1.209)  # 1.20..1.29, linear between the two fastest
    assert store.usual_fast_probe("other:product:1t", 1.0) is None  # per key
    monkeypatch.setattr(store, "SPEED_HISTORY", 12)  # only the most recent are kept
    for _ in range(12):
        store.usual_fast_probe("m:product:1t", 2.0)
    assert store.usual_fast_probe("m:product:1t", 2.0) == (pytest.approx(2.0), 12)
    later = time.time() + (store.SPEED_HISTORY_DAYS + 1) * 86_400  # and none older than the window
    monkeypatch.setattr(store.time, "time", lambda: later)
    assert store.usual_fast_probe("m:product:1t", 2.0) is None


def test_one_lucky_fast_measurement_does_not_make_the_usual_speed_busy_ever_after():
    """The lowest median ever shown only falls with use: held against it, every later timing at this
    machine's usual speed was busy. Against the fastest tenth of its recent measurements (never more
    than 5 % over that lowest), one outlier moves nothing, and a stretch slower than the machine
    reaches is still caught, saying what it was held against."""
    from narcli.bench.runner import core_speed_checked

    def verdict(product):
        return {"busy": False, "reasons": [], "probe_ms": [0.55, 0.58], "compute_probe_median": product, "threads": 1}

    usual = [1.27 + 0.002 * (i % 5) for i in range(29)]
    assert core_speed_checked(verdict(1.20))["busy"] is False  # a lucky first, 6 % faster than usual
    early = [core_speed_checked(verdict(product)) for product in usual[:9]]
    assert all(v["busy"] for v in early)  # until ten were seen, held against that lowest, as before
    later = [core_speed_checked(verdict(product)) for product in usual[9:]]
    assert not any(v["busy"] for v in later)  # against 1.26 (5 % over 1.20): the tenth, 1.27, is capped
    slowed = core_speed_checked(verdict(1.40))
    assert slowed["busy"] and quiet.slowed_from_outside(slowed)
    assert "held against 1.260 ms at 1 thread, 5 % over the fastest it has shown (1.200 ms)" in slowed["reasons"][-1]


def test_a_history_of_fast_measurements_is_held_against_its_fastest_tenth():
    from narcli.bench.runner import core_speed_checked

    def verdict(product):
        return {"busy": False, "reasons": [], "probe_ms": [0.55, 0.58], "compute_probe_median": product, "threads": 2}

    for i in range(20):
        core_speed_checked(verdict(0.60 + 0.002 * (i % 10)))
    assert core_speed_checked(verdict(0.625))["busy"] is False  # within 5 % of 0.6018
    slowed = core_speed_checked(verdict(0.66))
    assert slowed["busy"]
    assert "the fastest tenth of its last 21 measurements at 2 threads took 0.602 ms or less" in slowed["reasons"][-1]
