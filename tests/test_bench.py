"""`nar bench`, `nar calibrate` and the calibrated device in `nar predict`: the measuring protocol
(fake clock), the memory check, stored and reused measurements, bad input, an interrupted
calibration that resumes, and one measurement per device at a time. Tiny models only."""

import importlib.util
import json

import numpy as np
import pytest
from narcli.bench import calibrate as cal
from narcli.bench import transfer
from narcli.bench.allocator import allocator_regime
from narcli.bench.calibration_set import REFERENCE_COLUMN
from narcli.bench.device_rows import device_rows
from narcli.bench.measure import check_fits, time_runs
from narcli.errors import NarError, UsageError

from .conftest import mlp_source
from .test_bad_input import one_error_line

TINY = """
from torch import nn


class Tiny(nn.Module):
    def __init__(self, width={width}):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, 4))

    def forward(self, x):
        return self.body(x)
"""


class FakeClock:
    """Each run takes the next of `durations` seconds (cycled); reading the clock costs nothing."""

    def __init__(self, durations):
        self.now, self.durations, self.calls = 0.0, list(durations), 0

    def timer(self):
        return self.now

    def run(self):
        self.now += self.durations[self.calls % len(self.durations)]
        self.calls += 1


def test_the_protocol_warms_up_then_reports_median_and_iqr():
    clock = FakeClock([0.2] * 3 + [0.010, 0.012, 0.011, 0.013, 0.050])  # slow first runs: the warm-up
    result = time_runs(clock.run, 5, timer=clock.timer)
    assert result.warmup == 3  # three runs already took 0.6 s >= the warm-up's 0.5 s
    assert result.runs == 5 and result.median_ms == pytest.approx(12.0)
    assert result.iqr_ms > 0 and max(result.times_ms) == pytest.approx(50.0)


def test_a_model_too_big_is_refused_before_allocating():
    with pytest.raises(NarError, match="would need about 37.3 GiB .* refused before allocating"):
        check_fits(10_000_000_000, 1000, 1, available=8 * 2**30)
    check_fits(1000, 1000, 1, available=2**30)


def test_bench_measures_a_file_and_stores_it(cli, write):
    model = write("tiny.py", TINY.format(width=32))
    result = cli("bench", model, "-i", "1,16", "--repeat", "3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stderr may say a disturbed timing was taken again
    # three runs, or up to four times as many when a probe beside some saw a slowed core (made up for)
    assert 3 <= data["runs"] <= 12 and data["runs"] - len(data.get("left_out") or []) >= 3
    assert data["median_ms"] > 0 and data["batch"] == 1
    assert data["device"]["kind"] == "cpu" and data["device"]["threads"] >= 1


def test_a_stored_measurement_is_reused(write, monkeypatch):
    from narcli.bench import runner
    from narcli.scan.scanner import ScanOptions

    model = write("tiny.py", TINY.format(width=8))
    options = ScanOptions(input_shapes=["1,16"])
    first = runner.bench_target(str(model), repeat=2, options=options, allow_busy=True)  # stored however busy

    def must_not_run(*args, **kwargs):
        raise AssertionError("measured again")

    monkeypatch.setattr("narcli.trace.isolation.run_isolated", must_not_run)
    again = runner.bench_target(str(model), repeat=2, options=options, reuse=True)
    assert again.reused and again.median_ms == first.median_ms
    assert first.allocator == again.allocator == allocator_regime()  # the real child said its malloc regime


def test_a_stored_measurement_from_before_the_allocator_was_held_steady_is_taken_again(write, monkeypatch):
    from narcli.bench import runner
    from narcli.scan.scanner import ScanOptions

    model, options = str(write("tiny.py", TINY.format(width=8))), ScanOptions(input_shapes=["1,16"])
    fake_timings(monkeypatch, {(1, 16): 2.0}, allocator="")  # as versions before 2026-12-07 stored it
    runner.bench_target(model, repeat=3, options=options)
    fake_timings(monkeypatch, {(1, 16): 5.0})
    again = runner.bench_target(model, repeat=3, options=options, reuse=True)
    assert not again.reused and again.median_ms == 5.0 and again.allocator == allocator_regime()
    fake_timings(monkeypatch, {(1, 16): 9.0})
    third = runner.bench_target(model, repeat=3, options=options, reuse=True)
    assert third.reused and third.median_ms == 5.0


@pytest.mark.parametrize("args, message", [
    (["--repeat", "0"], "--repeat must be between 1 and 100,000"),
    (["--batch", "0"], "--batch must be between 1 and 65,536"),
    (["--device", "tpu"], "--device must be cpu or cuda"),
    (["--threads", "0"], "--threads must be between 1 and "),
    (["--threads", "1024"], "(the CPU cores of this machine), not 1024"),
])
def test_bad_options_are_usage_errors(cli, write, args, message):
    model = write("tiny.py", TINY.format(width=8))
    result = cli("bench", model, "-i", "1,16", *args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_cuda_on_a_cpu_only_machine_is_one_line(cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = cli("bench", "resnet18", "--device", "cuda")
    assert result.exit_code == 2 and "no CUDA device is available here" in result.output


def test_an_onnx_file_without_onnxruntime_says_so(cli):
    from pathlib import Path

    if importlib.util.find_spec("onnxruntime") is not None:
        pytest.skip("onnxruntime is installed")
    result = cli("bench", Path(__file__).parent / "fixtures" / "tiny.onnx")
    assert result.exit_code == 1 and "needs onnxruntime; pip install onnxruntime" in result.output


def test_the_ridge_head_recovers_a_linear_relation():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3))
    y = 0.5 + 2.0 * x[:, 0] + rng.normal(scale=0.01, size=30)
    head = transfer.ridge_fit(x, y)
    assert np.abs(transfer.ridge_apply(head, x) - y).max() < 0.4  # ridge shrinks, but not by much here
    assert 0 < head["half"] < 1


def test_an_interrupted_calibration_resumes(write, monkeypatch):
    from narcli.scan.scanner import ScanOptions

    files = [write(f"tiny{w}.py", TINY.format(width=w)) for w in (4, 64, 512, 2048)]
    fake = [cal.Candidate(str(f), 1000 * (i + 1), 100 * (i + 1), {c: 1.0 + i for c in cal.CPU_COLUMNS}, np.zeros(0),
                          parts=np.array([0.5, 0.2, 0.2, 0.1]) * (1.0 + i))
            for i, f in enumerate(files)]
    monkeypatch.setattr(cal, "candidates", lambda: fake)
    real_bench = __import__("narcli.bench.runner", fromlist=["bench_target"]).bench_target
    monkeypatch.setattr("narcli.bench.runner.bench_target",
                        lambda name, *a, **k: real_bench(name, *a[:4], ScanOptions(input_shapes=["1,16"]), **k))

    lines = []

    def interrupt_after_two(line):
        lines.append(line)
        if len(lines) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cal.calibrate("bench-test", models=4, threads=1, repeat=2, report=interrupt_after_two, allow_busy=True)
    resumed = []  # allow_busy: this test is about resuming, whatever else the machine runs
    head = cal.calibrate("bench-test", models=4, threads=1, repeat=2, report=resumed.append, allow_busy=True)
    assert [line.endswith("(stored)") for line in resumed] == [True, True, False, False]
    assert len(head["models"]) == 4 and cal.calibrated_devices()["bench-test"]["name"] == "bench-test"


def test_a_calibrated_device_answers_in_predict_rows():
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target

    head = transfer.ridge_fit(np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0], [3.0, 4.0]]),
                   np.array([0.0, 1.0, 2.0, 3.0])) | {"columns": list(cal.CPU_COLUMNS), "models": [1, 2, 3, 4]}
    cpu = [Row("reference", "r", Target(c, "latency", "ms", c, 1), 10.0, 8.0, 12.0, "ok", "", "x")
           for c in cal.CPU_COLUMNS]
    (row,) = device_rows(cpu, 10**9, {"mine": head})
    assert row.status == "ok" and row.target.device == "mine" and row.low < row.value < row.high
    off = [Row("reference", "r", r.target, None, None, None, "n/a", "its lstm operations were never measured", "x")
           for r in cpu]
    (row,) = device_rows(off, 10**9, {"mine": head})
    assert row.status == "n/a" and row.reason == "its lstm operations were never measured"


def test_a_device_calibrated_on_the_old_timm_columns_still_answers():
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target

    old_columns = ["fp32-nchw-pt240-cpu-i9_10940x-dynamo", "fp32-nchw-pt240-cpu-i7_12700h-dynamo"]
    head = transfer.ridge_fit(np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 2.0], [2.0, 2.0, 3.0], [3.0, 3.0, 4.0]]),
                   np.array([0.0, 1.0, 2.0, 3.0])) | {"columns": old_columns, "models": [1, 2, 3, 4]}
    rows = [Row("timm", "t", Target(c, "latency", "ms", c, 1), 10.0, 8.0, 12.0, "ok", "", "x") for c in old_columns]
    (row,) = device_rows(rows, 10**9, {"old": head})
    assert row.status == "ok" and row.low < row.value < row.high


def test_device_names_are_checked():
    with pytest.raises(UsageError, match="device name '../x'"):
        cal.check_name("../x")


def test_calibrating_without_a_source_plugin_names_the_pip_command(monkeypatch):
    monkeypatch.setattr("narcli.zoo.plugins.zoo_sources", dict)
    with pytest.raises(NarError) as caught:
        cal.candidates()
    message = str(caught.value)
    assert "no zoo source plugin is installed" in message and "pip install " in message and "nar-timm" in message
    assert "torch==" in message  # keeps the installed torch (the install line's pin)


def test_the_readme_says_what_to_install_before_bench_and_calibrate():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("## `nar bench` and `nar calibrate`"):]
    install, first_use = section.find("pip install ./plugins/nar-timm"), section.find("$ nar bench resnet50")
    assert 0 <= install < first_use


def test_calibration_reports_each_zoo_model_as_it_is_measured(monkeypatch):
    from narcli.trace.pool import TaskResult

    chosen = [cal.Candidate(f"zoo/m{i}", 10**8 * (i + 1), 10**6, {c: 1.0 + i for c in cal.CPU_COLUMNS}, np.zeros(0),
                            graph_hash=f"hash{i}", source="fake") for i in range(3)]
    lines, reported_before = [], []

    def one_worker(fn, tasks, on_result, **options):  # the pool, measuring one model after another
        for key, _ in tasks:
            reported_before.append(len(lines))
            on_result(TaskResult(key, True, {"median_ms": 2.0, "iqr_ms": 0.1, "runs": 2}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", one_worker)
    measured = cal.measure_models(chosen, None, 2, None, lines.append)
    assert reported_before == [0, 1, 2]  # each model was reported before the next one was measured
    assert [c.name for c, _ in measured] == ["zoo/m0", "zoo/m1", "zoo/m2"]
    assert lines == [f"{i}/3 zoo/m{i - 1}: 2.00 ms" for i in (1, 2, 3)]


def test_the_transfer_recovers_per_part_scales():
    from narcli.bench.transfer import fit_head, predict_log, work_columns

    rng = np.random.default_rng(1)
    parts = rng.uniform(0.1, 10, size=(30, 3)) * rng.uniform(0.1, 10, size=(30, 1))
    truth = np.array([2.0, 1.2, 1.0])  # this CPU: convolutions at twice the reference's time, the rest near it
    y = np.log(parts @ truth) + rng.normal(scale=0.01, size=30)
    head = fit_head(work_columns(parts), y)  # rows without thread parts or an operation count: those columns are 0
    assert np.abs(predict_log(head, parts) - y).max() < 0.08
    assert np.exp(head["scales"][0]) > np.exp(head["scales"][2])  # the parts are told apart
    assert 0 < head["half"] < 0.1 and head["kind"] == "parts"


def test_a_per_call_cost_of_this_machine_is_fitted_on_the_operation_count():
    from narcli.bench.transfer import FIT_COLUMNS, fit_head, predict_log, work_columns

    rng = np.random.default_rng(5)
    work = rng.dirichlet([1.0] * 3, size=30) * np.exp(rng.uniform(np.log(0.5), np.log(500), size=(30, 1)))
    shares = rng.dirichlet([1.0] * 5, size=30)
    operations = rng.integers(10, 800, size=30).astype(float)
    parts = np.column_stack([with_thread_parts(work, shares), operations * 0.01])
    # this CPU: every part 1.5x the reference's time, plus 40 microseconds a call the reference head never saw
    y = np.log(work.sum(1) * 1.5 + operations * 0.04)
    head = fit_head(work_columns(parts), y)
    scales = np.exp(head["scales"])
    assert len(scales) == len(FIT_COLUMNS) and np.allclose(scales, [1.5, 1.5, 1.5, 1.5, 4.0], rtol=0.1)
    assert np.abs(predict_log(head, parts) - y).max() < 0.03
    # the reference prediction alone: models with most of their time in calls come out far too fast
    plain = fit_head(work_columns(parts[:, :3]), y)
    calls = operations * 0.04 / np.exp(y) > 0.7
    assert calls.sum() >= 3 and (predict_log(plain, parts[:, :3])[calls] - y[calls] < -0.4).all()


def test_with_few_models_the_transfer_stays_one_scale():
    from narcli.bench.transfer import fit_head

    parts = np.array([[1.0, 0.1, 0.1, 0.1], [0.1, 1.0, 0.1, 0.1], [0.1, 0.1, 1.0, 0.1], [0.2, 0.2, 0.2, 0.2]])
    y = np.log(parts.sum(1) * 3.0)  # this machine is 3x slower, the same for every part
    head = fit_head(parts, y)
    assert np.allclose(np.exp(head["scales"]), 3.0, rtol=0.05)


def test_a_few_models_that_happen_to_fit_well_do_not_make_a_narrow_interval():
    from narcli.bench.transfer import INTERVAL, PRIOR_MODELS, fit_head, pooled_half

    rng = np.random.default_rng(4)
    parts = rng.uniform(0.1, 10, size=(3, 4))
    y = np.log(parts.sum(1) * 2.0) + rng.normal(scale=0.005, size=3)  # three models, all fitted within 1 %
    prior = 0.25  # the reference head's own 90 % half-width (log)
    head = fit_head(parts, y, prior_half=prior)
    assert head["loo_half"] < 0.05 and head["interval"] == INTERVAL
    assert head["half"] == pytest.approx(pooled_half(head["loo_half"], 3, prior))
    assert 0.75 * prior < head["half"] < prior  # mostly the prior's: three models say little
    # many models keep most of their own spread, and wild ones are pulled in
    assert pooled_half(0.1, 40, prior) < 0.13 and pooled_half(1.5, 3, prior) < 1.0
    assert pooled_half(0.3, 7, 0.3, PRIOR_MODELS) == pytest.approx(0.3)
    assert fit_head(parts, y)["half"] == head["loo_half"]  # no prior: the calibration's own


def test_a_device_head_whose_interval_was_set_by_the_old_rule_is_fitted_again(monkeypatch, tmp_path):
    from narcli.bench import transfer
    from narcli.predict.bundle import load_bundle

    monkeypatch.setattr(cal, "devices_dir", lambda: tmp_path)
    reference = load_bundle().latency
    models = [{"name": name, "ms": ms} for name, ms in (("timm/resnet18", 60.0), ("timm/resnet50", 170.0),
                                                         ("timm/mobilenetv2_100", 25.0))]
    narrow = {"kind": "parts", "scales": [0.7] * 4, "half": 0.054, "prior": 3.0, "models": models,
              "columns": list(cal.CPU_COLUMNS), "device": {"name": "AMD EPYC", "threads": 1},
              "reference": reference.fingerprint, "fitted_on": cal.FITTED_ON}  # no "interval": before pooling
    (tmp_path / "few.json").write_text(json.dumps(narrow))
    head = cal.calibrated_devices()["few"]
    assert head["interval"] == transfer.INTERVAL and head["prior_half"] == pytest.approx(reference.half)
    assert head["half"] > 0.75 * reference.half  # three models: the interval is mostly the reference head's
    assert json.loads((tmp_path / "few.json").read_text())["interval"] == transfer.INTERVAL


def test_one_model_the_reference_head_gets_badly_wrong_barely_moves_the_transfer():
    from narcli.bench.transfer import fit_scales

    rng = np.random.default_rng(3)
    parts = rng.uniform(0.1, 10, size=(20, 4))
    y = np.log(parts.sum(1) * 2.0) + rng.normal(scale=0.03, size=20)  # this machine: 2x the reference
    y[0] += np.log(3.4)  # one model takes 3.4x what the reference head says (SEW-D did)
    huber = np.exp(fit_scales(parts, y, prior=3.0))
    squared = np.exp(fit_scales(parts, y, prior=3.0, delta=np.inf))
    assert np.allclose(huber, 2.0, rtol=0.04)
    assert np.abs(squared - 2.0).min() > 2 * np.abs(huber - 2.0).max()  # squared error is pulled towards it


def test_a_parts_head_answers_from_the_split_prediction_and_says_its_threads():
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target

    head = {"kind": "parts", "scales": [np.log(0.5)] * len(transfer.FIT_COLUMNS), "half": 0.2, "columns": list(cal.CPU_COLUMNS),
            "models": [1, 2, 3], "device": {"name": "AMD EPYC", "threads": 2}}
    cpu = [Row("reference", "r", Target(c, "latency", "ms", c, 1), 10.0, 8.0, 12.0, "ok", "", "x")
           for c in cal.CPU_COLUMNS]
    asked = []
    (row,) = device_rows(cpu, 10**9, {"mine": head}, lambda: asked.append(1) or np.array([4.0, 2.0, 4.0]))
    assert row.status == "ok" and row.value == pytest.approx(5.0) and asked == [1]
    assert row.target.column == "mine" and "2 threads" in row.target.device and "2 threads" in row.trained_on
    (row,) = device_rows(cpu, 10**9, {"mine": head}, lambda: None)
    assert row.status == "n/a" and "cannot be split" in row.reason
    one = head | {"device": {"name": "AMD EPYC", "threads": 1}}
    (row,) = device_rows(cpu, 10**9, {"mine": one}, lambda: np.array([4.0, 2.0, 4.0]))
    assert "(AMD EPYC, 1 thread)" in row.target.device and "(AMD EPYC, 1 thread)" in row.trained_on
    assert "timed at 1 thread too" not in row.trained_on
    (row,) = device_rows(cpu, 10**9, {"mine": head | {"thread_factors": [0.5, 0.6, 0.7, 0.8]}},
                         lambda: np.array([4.0, 2.0, 4.0]))
    assert "with 3 zoo models (timed at 1 thread too)" in row.trained_on  # fitted over one thread


def test_a_head_fitted_on_the_old_split_that_cannot_be_fitted_again_says_to_calibrate_again(monkeypatch, tmp_path):
    from narcli.bench.device_rows import device_rows
    from narcli.bench.transfer import LEGACY_PARTS
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target

    monkeypatch.setattr(cal, "devices_dir", lambda: tmp_path)
    old = {"kind": "parts", "scales": [0.0] * len(LEGACY_PARTS), "half": 0.2, "columns": list(cal.CPU_COLUMNS),
           "models": [{"name": "zoo/gone", "ms": 3.0}], "device": {"name": "AMD EPYC", "threads": 1}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    heads = cal.calibrated_devices()  # read, not called damaged; too few of its models left to fit it again
    assert heads["old"]["scales"] == old["scales"]
    cpu = [Row("reference", "r", Target(c, "latency", "ms", c, 1), 10.0, 8.0, 12.0, "ok", "", "x")
           for c in cal.CPU_COLUMNS]
    (row,) = device_rows(cpu, 10**9, heads, lambda: np.array([4.0, 2.0, 4.0, 8.0, 1.0, 1.0]))
    assert row.status == "n/a" and "nar calibrate --device old" in row.reason


def test_a_saved_parts_head_is_read_back_and_a_bad_one_is_named(monkeypatch, tmp_path):
    from narcli.errors import StoreError

    monkeypatch.setattr(cal, "devices_dir", lambda: tmp_path)
    good = {"kind": "parts", "scales": [0.0, 0.1, 0.2, 0.3], "half": 0.2}
    (tmp_path / "ok.json").write_text(json.dumps(good))
    assert cal.calibrated_devices()["ok"]["scales"] == good["scales"]
    (tmp_path / "bad.json").write_text(json.dumps(good | {"scales": [0.0, 0.1]}))
    with pytest.raises(StoreError, match="bad.json"):
        cal.calibrated_devices()


def test_a_device_fitted_against_another_reference_head_is_fitted_again_from_its_measurements(monkeypatch, tmp_path):
    from narcli.bench import transfer
    from narcli.predict.bundle import load_bundle

    monkeypatch.setattr(cal, "devices_dir", lambda: tmp_path)
    reference = load_bundle().latency
    models = [{"name": name, "ms": ms} for name, ms in
              (("timm/resnet18", 60.0), ("timm/resnet50", 170.0), ("timm/mobilenetv2_100", 25.0),
               ("timm/vit_small_patch16_224", 90.0), ("no/such-model", 5.0))]
    stale = {"kind": "parts", "scales": [0.0] * 4, "half": 0.9, "prior": 3.0, "models": models,
             "columns": list(cal.CPU_COLUMNS), "device": {"name": "AMD EPYC", "threads": 1}, "reference": "old-head"}
    (tmp_path / "mine.json").write_text(json.dumps(stale))
    fits, original = [], transfer.fit_head
    monkeypatch.setattr(transfer, "fit_head", lambda *a, **k: fits.append(1) or original(*a, **k))
    head = cal.calibrated_devices()["mine"]
    assert head["reference"] == reference.fingerprint and head["scales"] != stale["scales"]
    assert [m["name"] for m in head["models"]] == [m["name"] for m in models[:4]]  # the one gone from the zoo left out
    assert json.loads((tmp_path / "mine.json").read_text())["reference"] == reference.fingerprint  # saved
    cal.calibrated_devices()
    assert len(fits) == 1  # current now: not fitted again


def test_each_calibrated_device_gets_its_own_line_under_the_predictions():
    from rich.console import Console

    from narcli.cli.render_predict import print_predictions
    from narcli.predict.bundle import Row
    from narcli.predict.datasets import Target
    from narcli.search.predictions import Predictions

    cpu = [Row("reference", "reference CPU", Target(c, "latency", "ms", c, 1), 10.0, 8.0, 12.0, "ok", "", "x")
           for c in cal.CPU_COLUMNS]
    heads = {f"own-{t}t": {"kind": "parts", "scales": [0.0] * len(transfer.FIT_COLUMNS), "half": 0.2, "columns": list(cal.CPU_COLUMNS),
                           "models": [1, 2, 3], "device": {"name": "AMD EPYC", "threads": t}} for t in (1, 2)}
    rows = device_rows(cpu, 10**9, heads, lambda: np.array([4.0, 2.0, 4.0]))
    console = Console(record=True, width=200)
    print_predictions(console, [Predictions("m", rows, [])])
    text = console.export_text()
    assert "own-1t = calibrated on this machine (AMD EPYC, 1 thread)" in text
    assert "own-2t = calibrated on this machine (AMD EPYC, 2 threads)" in text


# one measurement at a time per device on a machine
def _hold_measurement_lock(ready, release):
    from narcli.bench.lock import measuring

    with measuring("cpu"):
        ready.set()
        release.wait(60)


def test_a_second_measurement_on_the_same_device_is_refused(cli, write):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_measurement_lock, args=(ready, release))
    holder.start()
    try:
        assert ready.wait(60)
        model = write("tiny.py", mlp_source(4, 8, 2))
        result = cli("bench", model, "--repeat", "2")
        assert result.exit_code == 1
        one_error_line(result, "another nar is measuring on this machine's cpu", f"pid {holder.pid}")
        result = cli("calibrate", "--models", "3", "--device", "second")
        assert result.exit_code == 1
        one_error_line(result, "another nar is measuring")
    finally:
        release.set()
        holder.join(30)
    assert cli("bench", model, "--repeat", "2").exit_code == 0  # free again once the first is done


def test_the_measurement_lock_is_reentrant_in_one_process():
    from narcli.bench.lock import _held, measuring

    with measuring("cpu"), measuring("cpu"):
        assert _held["cpu"][1] == 2
    assert "cpu" not in _held


def test_calibration_models_are_fitted_on_what_the_reference_machine_measured():
    # the reference head costs three models at a third of their time; the reference machine measured
    # them. This machine runs everything 2x the reference machine: fitted on the head's own parts the
    # scales are bent by the head's errors, fitted on the measured reference they are 2 exactly
    from narcli.bench.transfer import fit_head

    rng = np.random.default_rng(5)
    parts = rng.uniform(0.5, 10, size=(12, 3))
    measured = parts.sum(1).copy()
    measured[:3] *= 3.0  # the reference head is badly wrong on three of them
    chosen = [cal.Candidate(f"m{i}", 0, 0, {}, np.zeros(0), graph_hash=f"g{i}", parts=p) for i, p in enumerate(parts)]
    reference = {f"g{i}": float(ms) for i, ms in enumerate(measured)} | {"elsewhere": 1.0}
    y = np.log(2.0 * measured)
    fitted = cal.fitting_parts(chosen, reference)
    assert np.allclose(fitted.sum(1), measured) and np.allclose(fitted[0] / fitted[0].sum(), parts[0] / parts[0].sum())
    assert np.allclose(np.exp(fit_head(fitted, y)["scales"]), 2.0, rtol=1e-3)
    assert np.abs(np.exp(fit_head(parts, y)["scales"]) - 2.0).max() > 0.05  # the head's errors bend the scales
    # a model the reference set lacks keeps the head's parts
    assert np.allclose(cal.fitting_parts(chosen[:1], {}), parts[:1])


def test_the_reference_times_come_from_the_set_the_reference_head_was_trained_on(monkeypatch):
    from narcli.predict import bundle

    times = cal.measured_on_reference()
    assert len(times) > 1000 and all(ms > 0 for ms in times.values())
    head = bundle.load_bundle().latency
    monkeypatch.setattr(head, "device", dict(head.device) | {"key": "another-machine"})
    assert cal.measured_on_reference() == {}


def test_a_device_fitted_on_the_reference_head_own_parts_is_fitted_again(monkeypatch, tmp_path):
    from narcli.bench import transfer
    from narcli.predict.bundle import load_bundle

    monkeypatch.setattr(cal, "devices_dir", lambda: tmp_path)
    models = [{"name": name, "ms": ms} for name, ms in (("timm/resnet18", 60.0), ("timm/resnet50", 170.0),
                                                         ("timm/mobilenetv2_100", 25.0))]
    current = {"kind": "parts", "scales": [0.0] * 4, "half": 0.9, "prior": 3.0, "models": models,
               "columns": list(cal.CPU_COLUMNS), "device": {"name": "AMD EPYC", "threads": 1},
               "reference": load_bundle().latency.fingerprint}  # current head, but no `fitted_on`
    (tmp_path / "mine.json").write_text(json.dumps(current))
    fits, original = [], transfer.fit_head
    monkeypatch.setattr(transfer, "fit_head", lambda *a, **k: fits.append(1) or original(*a, **k))
    head = cal.calibrated_devices()["mine"]
    # fitted on the reference set's times of these three: one common scale, the measured / reference ratio
    times = cal.measured_on_reference()
    zoo_hashes = {c.name: c.graph_hash for c in cal.with_parts([cal.Candidate(m["name"], 0, 0, {}, np.zeros(0))
                                                                  for m in models])}
    ratios = [m["ms"] / times[zoo_hashes[m["name"]]] for m in models]
    assert head["fitted_on"] == cal.FITTED_ON and len(fits) == 1
    # three scales from three models can part (how far depends on the head's split: here a ResNet's
    # convolutions against a MobileNet's pointwise products), but stay near the ratios, and each
    # model's measured time comes back from its reference-measured parts
    assert np.exp(head["scales"]).min() >= min(ratios) * 0.5 and np.exp(head["scales"]).max() <= max(ratios) * 2
    rows = transfer.fitting_parts(cal.with_parts([cal.Candidate(m["name"], 0, 0, {}, np.zeros(0)) for m in models]), times)
    back = np.exp(transfer.predict_log(head, rows))
    assert back == pytest.approx([m["ms"] for m in models], rel=0.15)
    cal.calibrated_devices()
    assert len(fits) == 1  # current now: read again, not fitted again


def test_a_calibration_without_reference_times_says_so_and_is_not_fitted_again(monkeypatch):
    chosen = [cal.Candidate("m", 0, 0, {}, np.zeros(0), graph_hash="g", parts=np.ones(4))]
    assert cal.fitted_on(chosen, {}) == cal.HEAD_PARTS and cal.fitted_on(chosen, {"g": 2.0}) == cal.FITTED_ON
    head = {"kind": "parts", "reference": "r", "fitted_on": cal.HEAD_PARTS}
    monkeypatch.setattr(cal, "_reference_fingerprint", lambda: "r")
    assert cal.refitted("mine", head) is head


def test_a_model_busy_every_time_is_tried_three_times_then_left_out_and_the_rest_are_kept(monkeypatch):
    from narcli.bench import quiet
    from narcli.trace.pool import TaskResult

    chosen = [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {}, np.zeros(0), graph_hash=f"busy-hash{i}", source="fake")
              for i in range(3)]
    tried = []
    busy = {"busy": True, "reasons": ["the core's speed changed during the runs"]}

    def one_worker(fn, tasks, on_result, **options):
        for key, _ in tasks:
            tried.append(key)
            verdict = busy if key == "zoo/m1" else {"busy": False, "reasons": []}
            on_result(TaskResult(key, True, {"median_ms": 2.0, "iqr_ms": 0.1, "runs": 2, "quiet": verdict}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", one_worker)
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: True)
    lines, left_out = [], []
    measured = cal.measure_models(chosen, None, 2, None, lines.append, busy=left_out)
    assert [c.name for c, _ in measured] == ["zoo/m0", "zoo/m2"] and left_out == ["zoo/m1"]
    assert tried.count("zoo/m1") == cal.BUSY_TRIES == 3 and tried[:3] == ["zoo/m0", "zoo/m1", "zoo/m2"]
    assert lines[-1].endswith("; left out") and sum("measured again once quiet" in line for line in lines) == 2


def test_a_calibration_a_busy_machine_left_short_says_so_not_raise_the_budget(monkeypatch):
    from narcli.errors import NarError

    monkeypatch.setattr(cal, "candidates", lambda: [cal.Candidate(f"zoo/{n}", 10**8, 10**6, {}, np.zeros(0))
                                                    for n in "ab"])
    monkeypatch.setattr(cal, "with_parts", lambda chosen, head=None: chosen)

    def all_busy(chosen, threads, repeat, budget, report, allow_busy, busy, **_):
        busy.extend(c.name for c in chosen)
        return []

    monkeypatch.setattr(cal, "measure_models", all_busy)
    with pytest.raises(NarError, match=r"only 0 models measured.*\(2 left out: the machine stayed busy while timing "
                                       r"them; run again when it is quiet, or --allow-busy to keep them\)"):
        cal.calibrate("dev")
    monkeypatch.setattr(cal, "measure_models", lambda *args, **_: [])
    with pytest.raises(NarError, match=r"\(raise --budget\)"):
        cal.calibrate("dev", budget=5)
    with pytest.raises(NarError, match=r"\(the others could not be measured: see above\)"):
        cal.calibrate("dev")
    monkeypatch.setattr(cal, "measure_models", lambda chosen, *args, **_: [(chosen[0], 2.0)] if chosen else [])
    monkeypatch.setattr(cal, "candidates", lambda: [cal.Candidate("zoo/one", 10**8, 10**6, {}, np.zeros(0))])
    with pytest.raises(NarError, match=r"^only 1 model measured; calibration needs at least 3"):
        cal.calibrate("dev")


def test_a_machine_that_stays_busy_stops_the_calibration_and_counts_what_is_left(monkeypatch):
    from narcli.bench import quiet
    from narcli.trace.pool import TaskResult

    chosen = [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {}, np.zeros(0), graph_hash=f"stays-busy{i}", source="fake")
              for i in range(4)]

    def one_worker(fn, tasks, on_result, **options):
        for key, _ in tasks:
            on_result(TaskResult(key, True, {"median_ms": 2.0, "iqr_ms": 0.1, "runs": 2,
                                             "quiet": {"busy": True, "reasons": ["busy"]}}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", one_worker)
    monkeypatch.setattr(quiet, "wait_for_quiet", lambda *a, **k: False)  # never quiet again
    lines, left_out = [], []
    assert cal.measure_models(chosen, None, 2, None, lines.append, busy=left_out) == []
    assert sorted(left_out) == [c.name for c in chosen] and "stopping" in lines[-1]


def test_calibrating_on_fewer_models_than_asked_says_how_to_add_them(capsys):
    from narcli.cli.render_bench import print_calibrated

    head = {"device": {"threads": 2}, "models": [{}] * 7, "asked": 20, "path": "/x/dev.json", "half_width_pct": 96.0}
    print_calibrated("dev", head)
    out = capsys.readouterr().out
    assert "on 7 zoo models" in out and "13 of the 20 models asked for were not measured" in out
    print_calibrated("dev", head | {"models": [{}] * 20})
    assert "not measured" not in capsys.readouterr().out


def test_calibrate_says_what_its_interval_rests_on(capsys):
    from narcli.cli.render_bench import print_calibrated

    head = {"device": {"threads": 1}, "models": [{}] * 3, "asked": 3, "path": "/x/dev.json", "half_width_pct": 22.6,
            "own_half_width_pct": 5.6, "prior_half_width_pct": 28.9}
    print_calibrated("dev", head)
    out = " ".join(capsys.readouterr().out.split())
    assert "90 % interval ±23 %" in out
    assert "spread over 3 models (±6 %) pooled with the reference head's on designs new to it (±29 %" in out
    assert "--models 20" in out
    print_calibrated("dev", head | {"models": [{}] * 20})
    assert "--models 20" not in capsys.readouterr().out  # enough models: no advice
    print_calibrated("dev", {k: v for k, v in head.items() if k not in ("own_half_width_pct", "prior_half_width_pct")}
                     | {"prior_half_width_pct": None})
    assert "pooled" not in capsys.readouterr().out  # a head fitted without the reference head's spread


def with_thread_parts(work: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """`LatencyHead.parts` rows: the work parts, then thread parts in `shares` summing to the same."""
    return np.concatenate([work, shares / shares.sum(1, keepdims=True) * work.sum(1, keepdims=True)], axis=1)


def test_over_one_thread_the_thread_factors_come_from_the_same_models_timed_at_one_thread():
    from narcli.bench.transfer import THREADS_FIT, fit_head, fit_over_one_thread, predict_log, prediction_columns
    from narcli.predict.latency_parts import THREAD_PARTS

    rng = np.random.default_rng(7)
    work = rng.uniform(0.1, 10, size=(20, 3)) * rng.uniform(0.1, 10, size=(20, 1))
    # some models mostly parallel work, others (small nets, recurrent ones) mostly serial work and calls
    shares = rng.dirichlet([1.0] * 5, size=20)
    parts = with_thread_parts(work, shares)
    machine = 1.3  # this CPU: 1.3x the reference at one thread
    # two threads: parallel work halves, serial work does not, calls and a recurrence's steps get dearer,
    # and the pointwise convolutions that leave the matrix product for oneDNN take three times as long
    threads = np.array([0.5, 1.1, 1.6, 1.4, 3.0])
    wrong = np.exp(rng.normal(scale=0.3, size=20))  # the reference head's error on each model
    one_thread = work.sum(1) * machine * wrong
    y_one, y = np.log(one_thread), np.log(one_thread * (shares @ threads))
    head = fit_over_one_thread(parts, y_one, y)
    assert len(head["thread_factors"]) == len(THREAD_PARTS)
    assert np.allclose(head["thread_factors"], threads, rtol=0.15)  # the head's errors cancel between the two
    assert head["threads_fit"] == THREADS_FIT and head["half"] >= head["one_thread_half"]
    one = fit_head(prediction_columns(parts), y_one)  # at one thread: the work parts alone
    assert len(head["scales"]) == len(prediction_columns(parts)[0])
    assert np.allclose(predict_log(head, parts), predict_log(one, parts) + np.log(shares @ threads), atol=0.08)
    # one factor for every model misses the serial ones by far more
    common = np.exp(np.median(y - y_one))
    assert np.abs(np.log(shares @ threads / common)).max() > 3 * np.abs(np.log(shares @ head["thread_factors"] /
                                                                                (shares @ threads))).max()
    with pytest.raises(ValueError, match="no thread split"):
        predict_log(head, work)  # parts split before the thread parts existed


def test_the_thread_factors_keep_their_prior_shape_when_the_models_cannot_tell_the_parts_apart():
    from narcli.bench.transfer import THREAD_SHAPE, fit_over_one_thread

    rng = np.random.default_rng(3)
    work = rng.uniform(1, 10, size=(8, 3))
    shares = np.tile([0.8, 0.05, 0.05, 0.05, 0.05], (8, 1))  # every model alike: the parts' factors cannot be told apart
    y_one = np.log(work.sum(1))
    y = y_one + np.log(0.6) + rng.normal(scale=0.05, size=8)
    head = fit_over_one_thread(with_thread_parts(work, shares), y_one, y)
    relative = np.log(head["thread_factors"]) - np.log(head["thread_factors"][0])
    assert np.allclose(relative, THREAD_SHAPE, atol=0.1)  # the serial part and the calls stay dearer


def calibrating_offline(monkeypatch, tmp_path, timed) -> list:
    """`cal.calibrate` on five fake zoo models timed by `timed` (`measure_models`' signature), on a
    fake two-thread AMD EPYC, with no zoo or reference set read and devices written under
    `tmp_path`; returns the five models."""
    from narcli.bench import device

    chosen = [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {}, np.zeros(0), graph_hash=f"h{i}",
                            parts=np.array([4.0, 1.0, 2.0, 5.0, 1.0, 0.5, 0.0, 0.5]) * (i + 1)) for i in range(5)]
    monkeypatch.setattr(cal, "candidates", lambda: chosen)
    monkeypatch.setattr(cal, "with_parts", lambda models, head=None: models)
    monkeypatch.setattr(cal, "measure_models", timed)
    monkeypatch.setattr(cal, "measured_on_reference", lambda: {})
    monkeypatch.setattr(cal, "devices_dir", lambda: tmp_path)
    monkeypatch.setattr(device, "device_info", lambda kind, threads: device.DeviceInfo("cpu", "AMD EPYC", "2.13.0", 2))
    return chosen


def test_calibrating_at_two_threads_times_the_same_models_at_one_thread_too(monkeypatch, tmp_path):
    from narcli.bench import device, transfer

    asked = []

    def timed(models, threads, repeat, budget, report, allow_busy, busy, **_):
        asked.append((threads, [c.name for c in models]))
        times = [(c, float(c.parts[:3].sum()) * (0.7 if threads == 2 else 1.2)) for c in models]
        return times if threads == 2 else times[1:]  # one model could not be timed at one thread

    chosen = calibrating_offline(monkeypatch, tmp_path, timed)
    lines = []
    head = cal.calibrate("two", models=5, threads=2, report=lines.append)
    assert [t for t, _ in asked] == [2, 1] and asked[1][1] == [c.name for c in chosen]
    assert "pointwise_probe" not in head and not any("pointwise" in line for line in lines)  # no probe since 2026-12-07
    assert [m["name"] for m in head["models"]] == [m["name"] for m in head["one_thread_models"]] == \
        [c.name for c in chosen[1:]]  # only the models timed at both
    assert head["threads_fit"] == transfer.THREADS_FIT
    assert np.allclose(transfer.predict_log(head, chosen[0].parts), np.log(chosen[0].parts[:3].sum() * 0.7), atol=0.05)
    saved = json.loads((tmp_path / "two.json").read_text())
    assert saved["one_thread_models"] == head["one_thread_models"]
    monkeypatch.setattr(device, "device_info", lambda kind, threads: device.DeviceInfo("cpu", "AMD EPYC", "2.13.0", 1))
    asked.clear()
    one = cal.calibrate("one", models=5, threads=1)
    assert [t for t, _ in asked] == [1] and "one_thread_models" not in one and "thread_factors" not in one
    # one thread: the work parts, the calls and the operation count; over one thread: the work parts alone
    assert len(one["scales"]) == len(transfer.FIT_COLUMNS) and one["work_split"] == transfer.WORK_SPLIT
    assert len(head["scales"]) == 3 and head["work_split"] == transfer.THREADS_WORK_SPLIT
    budgets = []
    monkeypatch.setattr(device, "device_info", lambda kind, threads: device.DeviceInfo("cpu", "AMD EPYC", "2.13.0", 2))
    monkeypatch.setattr(cal, "measure_models", lambda models, threads, repeat, budget, *rest, **options:
                        budgets.append(budget) or timed(models, threads, repeat, budget, *rest, **options))
    cal.calibrate("two", models=5, threads=2, budget=60)
    assert 59 < budgets[0] <= 60 and 0 < budgets[1] <= budgets[0]  # one budget for both thread counts, not one each


def test_models_the_machine_left_out_are_replaced_by_the_next_in_the_calibration_order(monkeypatch, tmp_path, capsys):
    from narcli.bench import device
    from narcli.cli.render_bench import print_calibrated

    order = [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {}, np.zeros(0), graph_hash=f"h{i}",
                           parts=np.array([4.0, 1.0, 2.0, 5.0, 1.0, 0.5, 0.0, 0.5]) * (i + 1)) for i in range(12)]
    rounds = []

    def timed(models, threads, repeat, budget, report, allow_busy, busy, **_):
        rounds.append([c.name for c in models])
        left_out = {"zoo/m1", "zoo/m3", "zoo/m6"}  # busy through their attempts
        busy.extend(c.name for c in models if c.name in left_out)
        return [(c, float(c.parts[:3].sum())) for c in models if c.name not in left_out]

    calibrating_offline(monkeypatch, tmp_path, timed)
    monkeypatch.setattr(cal, "candidates", lambda: order)
    monkeypatch.setattr(device, "device_info", lambda kind, threads: device.DeviceInfo("cpu", "AMD EPYC", "2.13.0", 1))
    lines = []
    head = cal.calibrate("one", models=5, threads=1, report=lines.append)
    # m1 and m3 left out of the first five: m5 and m6 stand in; m6 is left out too, and m7 stands in for it
    assert rounds == [["zoo/m0", "zoo/m1", "zoo/m2", "zoo/m3", "zoo/m4"], ["zoo/m5", "zoo/m6"], ["zoo/m7"]]
    assert [m["name"] for m in head["models"]] == ["zoo/m0", "zoo/m2", "zoo/m4", "zoo/m5", "zoo/m7"]
    assert head["stand_ins"] == 3 == json.loads((tmp_path / "one.json").read_text())["stand_ins"]
    assert "2 of the 5 models left out; timing the next 2 in the calibration order in their place" in lines
    capsys.readouterr()
    print_calibrated("one", head)  # the summary says so, and that nothing asked for is missing
    out = capsys.readouterr().out
    assert "3 stand-ins from further down the calibration order timed in place of models the machine left out" in out
    assert "were not measured" not in out


def test_stand_ins_stop_at_as_many_again_or_when_a_round_measures_nothing(monkeypatch, tmp_path):
    from narcli.bench import device

    order = [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {}, np.zeros(0), graph_hash=f"h{i}",
                           parts=np.array([4.0, 1.0, 2.0, 5.0, 1.0, 0.5, 0.0, 0.5]) * (i + 1)) for i in range(40)]
    rounds = []

    def every_third(models, threads, repeat, budget, report, allow_busy, busy, **_):
        rounds.append(len(models))
        return [(c, float(c.parts[:3].sum())) for c in models if int(c.name[5:]) % 3 == 0]

    calibrating_offline(monkeypatch, tmp_path, every_third)
    monkeypatch.setattr(cal, "candidates", lambda: order)
    monkeypatch.setattr(device, "device_info", lambda kind, threads: device.DeviceInfo("cpu", "AMD EPYC", "2.13.0", 1))
    head = cal.calibrate("one", models=8, threads=1)
    # m0-m7 give three, m8-m12 two more, m13-m15 one: eight stand-ins, as many as asked for, and no more
    assert rounds == [8, 5, 3] and head["stand_ins"] == 8
    assert [m["name"] for m in head["models"]] == [f"zoo/m{i}" for i in (0, 3, 6, 9, 12, 15)]
    rounds.clear()
    monkeypatch.setattr(cal, "measure_models", lambda models, *a, **k: rounds.append(len(models)) or
                        ([(c, 1.0 + i) for i, c in enumerate(models[:3])] if len(rounds) == 1 else []))
    head = cal.calibrate("one", models=8, threads=1)  # three measured, then a round that measured nothing
    assert rounds == [8, 5] and len(head["models"]) == 3 and head["stand_ins"] == 5


def test_a_two_thread_device_fitted_against_another_reference_head_is_fitted_over_its_one_thread_times(
        monkeypatch, tmp_path):
    from narcli.bench import transfer
    from narcli.predict.bundle import load_bundle
    from narcli.predict.latency_parts import THREAD_PARTS

    monkeypatch.setattr(cal, "devices_dir", lambda: tmp_path)
    names = ("timm/resnet18", "timm/resnet50", "timm/mobilenetv2_100", "timm/vit_small_patch16_224")
    found = cal.with_parts([cal.Candidate(name, 0, 0, {}, np.zeros(0)) for name in names])
    # this CPU at two threads: the prior shape of the thread factors, the parallel part at 0.6
    speedup = {c.name: float(transfer.thread_share(c.parts)[0] @ (0.6 * np.exp(transfer.THREAD_SHAPE))) for c in found}
    one = [{"name": name, "ms": ms} for name, ms in zip(names, (60.0, 170.0, 25.0, 90.0))]
    two = [{"name": m["name"], "ms": m["ms"] * speedup[m["name"]]} for m in one] + [{"name": "timm/resnet34", "ms": 70.0}]
    stale = {"kind": "parts", "scales": [0.0] * 4, "half": 0.9, "prior": 3.0, "models": two, "one_thread_models": one,
             "columns": list(cal.CPU_COLUMNS), "device": {"name": "AMD EPYC", "threads": 2}, "reference": "old-head",
             "pointwise_probe": {"threads": 2, "pointwise": 1.7, "matrix": 0.6, "relative": 1.04}}
    (tmp_path / "two.json").write_text(json.dumps(stale))
    head = cal.calibrated_devices()["two"]
    assert head["reference"] == load_bundle().latency.fingerprint and head["threads_fit"] == transfer.THREADS_FIT
    assert [m["name"] for m in head["models"]] == list(names)  # resnet34 has no one-thread time: left out
    # a probe stored by 2026-12-07 stays on record but no longer places the pointwise prior: the head fits as measured
    assert head["pointwise_probe"] == stale["pointwise_probe"]
    one_thread = {**head, "thread_scales": [0.0] * len(THREAD_PARTS)}  # the same head with no thread factors
    ratios = [transfer.predict_log(head, c.parts) - transfer.predict_log(one_thread, c.parts) for c in found]
    # each model's two-thread time against its one-thread time, as measured
    assert np.allclose(np.exp(np.ravel(ratios)), [speedup[name] for name in names], rtol=0.05)
    # a head saved before the thread parts is fitted again too
    (tmp_path / "old.json").write_text(json.dumps(stale | {"reference": head["reference"], "fitted_on": head["fitted_on"],
                                                           "interval": transfer.INTERVAL, "threads_fit": "over-one-thread"}))
    assert "thread_scales" in cal.calibrated_devices()["old"]
    # and one fitted on the three thread parts before the pointwise convolutions had their own
    (tmp_path / "three.json").write_text(json.dumps(stale | {
        "reference": head["reference"], "fitted_on": head["fitted_on"], "interval": transfer.INTERVAL,
        "work_split": transfer.WORK_SPLIT, "threads_fit": "thread-parts", "thread_scales": [-0.6, 0.18, 0.44]}))
    refitted = cal.calibrated_devices()["three"]
    assert len(refitted["thread_scales"]) == len(THREAD_PARTS) and refitted["threads_fit"] == transfer.THREADS_FIT
    # and one fitted on the four before a recurrence's steps had their own (until 2026-12-07)
    (tmp_path / "four.json").write_text(json.dumps(stale | {
        "reference": head["reference"], "fitted_on": head["fitted_on"], "interval": transfer.INTERVAL,
        "work_split": transfer.WORK_SPLIT, "threads_fit": "thread-parts-pointwise",
        "thread_scales": [-0.6, 0.12, 0.51, -0.65]}))
    refitted = cal.calibrated_devices()["four"]
    assert len(refitted["thread_scales"]) == len(THREAD_PARTS) and refitted["threads_fit"] == transfer.THREADS_FIT


def test_calibrate_at_two_threads_says_what_the_thread_factors_are(capsys):
    from narcli.cli.render_bench import print_calibrated

    head = {"device": {"threads": 2}, "models": [{}] * 20, "asked": 20, "path": "/x/dev.json", "half_width_pct": 33.0,
            "own_half_width_pct": 30.4, "prior_half_width_pct": 28.9, "thread_factors": [0.55, 1.2, 1.56, 1.7, 2.5],
            "thread_scales": [-0.6, 0.18, 0.44, 0.53, 0.92],
            "one_thread_half": 0.2852}
    print_calibrated("dev", head)
    out = " ".join(capsys.readouterr().out.split())
    assert "at 2 threads against 1 (the same models timed at both): parallel ×0.55, serial ×1.20" in out
    print_calibrated("dev", head | {"scales": [0.69, 0.1, 0.2]})
    out = " ".join(capsys.readouterr().out.split())
    assert "at 1 thread against the reference machine's times: convolution ×1.99, matrix products ×1.11" in out
    assert "µs per operation call" not in out  # over one thread: the work parts alone at one thread
    assert "calls ×1.56, recurrent steps ×1.70, pointwise to oneDNN ×2.50" in out and "thread factors' (±30 %) and the 1-thread head's (±33 %)" in out
    assert "pooled" not in out
    print_calibrated("dev", head | {"factors_half": 0.2776})  # the factors' interval pooled (since 2026-12-07)
    out = " ".join(capsys.readouterr().out.split())
    assert "thread factors' (±32 %, their own ±30 % pooled with their spread over many days)" in out
    print_calibrated("dev", {k: v for k, v in head.items() if not k.startswith(("thread", "one_thread"))}
                     | {"device": {"threads": 1}, "scales": [0.69, 0.1, 0.2, 0.3, 1.0]})
    out = " ".join(capsys.readouterr().out.split())
    assert "convolution ×1.99, matrix products ×1.11, other work ×1.22, calls ×1.35; plus 27 µs per operation call on a large output (half that on 4,096 numbers" in out


def test_the_thread_factors_interval_is_pooled_with_their_spread_on_many_days():
    from narcli.bench.transfer import THREAD_RATIO_HALF, fit_over_one_thread, pooled_half

    rng = np.random.default_rng(11)
    work = rng.uniform(0.1, 10, size=(12, 3))
    shares = rng.dirichlet([1.0] * 5, size=12)
    parts = with_thread_parts(work, shares)
    y_one = np.log(work.sum(1) * 1.3)
    # a noisy day: the two-thread times stray far more than the many days' spread says
    y = y_one + np.log(shares @ np.array([0.5, 1.1, 1.6, 1.4, 0.5])) + rng.normal(scale=0.6, size=12)
    alone = fit_over_one_thread(parts, y_one, y, ratio_half=None)
    pooled = fit_over_one_thread(parts, y_one, y)
    assert alone["factors_half"] == alone["loo_half"] > THREAD_RATIO_HALF
    assert pooled["factors_half"] == pytest.approx(pooled_half(pooled["loo_half"], 12, THREAD_RATIO_HALF))
    assert THREAD_RATIO_HALF < pooled["factors_half"] < alone["factors_half"]
    assert pooled["half"] == max(pooled["factors_half"], pooled["one_thread_half"])
    assert pooled["thread_factors"] == alone["thread_factors"]  # only the interval moves


def test_evaluating_a_calibration_at_two_threads_fits_over_the_one_thread_times(monkeypatch):
    from types import SimpleNamespace

    from narcli.bench import calibration_eval as ev
    from narcli.bench import device

    rng = np.random.default_rng(5)
    models = [cal.Candidate(f"zoo/m{i}", int(10**8 * (i + 1)), 10**6, {REFERENCE_COLUMN: 2.0 + i}, np.zeros(0),
                            coarse="convolutional", family=f"f{i}", graph_hash=f"h{i}",
                            parts=with_thread_parts(np.array([[4.0, 1.0, 2.0]]) * rng.uniform(0.5, 5),
                                                    rng.dirichlet([2.0, 1.0, 1.0, 1.0, 1.0], size=1))[0]) for i in range(30)]
    asked = []

    def timed(chosen, threads, repeat, budget, report, allow_busy=False, busy=None, **_):
        asked.append(threads)
        return [(c, float(c.parts[3:] @ ([0.6, 1.1, 1.5, 1.4, 2.0] if threads == 2 else [1.0] * 5))) for c in chosen]

    monkeypatch.setattr(ev, "held_out_head", lambda: SimpleNamespace(half=0.2, metrics={}))
    monkeypatch.setattr(ev, "candidates", lambda head: models)
    monkeypatch.setattr(ev, "with_parts", lambda chosen, head=None: chosen)
    monkeypatch.setattr(ev, "measured_on_reference", lambda: {})
    monkeypatch.setattr(ev, "measure_models", timed)
    monkeypatch.setattr(cal, "measure_models", timed)  # the one-thread timings (`timed_at_one_thread`)
    monkeypatch.setattr(device, "device_info", lambda kind, threads: device.DeviceInfo("cpu", "AMD EPYC", "2.13.0", 2))
    result = ev.evaluate_calibration(ks=(10,), held_out=10, threads=2)
    assert asked == [2, 1, 2] and result["threads_fit"] == transfer.THREADS_FIT  # calibration models at both first
    assert "pointwise_probe" not in result
    assert all(r["one_thread_ms"] > 0 for r in result["calibration"])
    (row,) = result["results"]
    assert row["calibrated"]["mape"] < 5 and len(row["calibrated"]["thread_factors"]) == 5



def test_an_evaluation_left_with_too_few_quiet_timings_says_why_in_one_line(monkeypatch):
    from types import SimpleNamespace

    from narcli.bench import calibration_eval as ev

    models = [cal.Candidate(f"zoo/m{i}", 10**8, 10**6, {REFERENCE_COLUMN: 2.0}, np.zeros(0), coarse="mlp",
                            family=f"f{i}", graph_hash=f"h{i}", parts=np.ones(8)) for i in range(30)]

    calls = []

    def timed(chosen, threads, repeat, budget, report, allow_busy=False, busy=None, **_):
        calls.append(len(chosen))
        busy.extend(c.name for c in chosen[2:] if len(calls) == 1)  # busy after the first two, then through
        busy.extend(c.name for c in chosen if len(calls) > 1)       # their stand-ins and the held-out models
        return [(c, 5.0) for c in chosen[:2]] if len(calls) == 1 else []

    monkeypatch.setattr(ev, "held_out_head", lambda: SimpleNamespace(half=0.2, metrics={}))
    monkeypatch.setattr(ev, "candidates", lambda head: models)
    monkeypatch.setattr(ev, "with_parts", lambda chosen, head=None: chosen)
    monkeypatch.setattr(cal, "with_parts", lambda chosen, head=None: chosen)
    monkeypatch.setattr(ev, "measure_models", timed)
    monkeypatch.setattr(cal, "measure_models", timed)
    with pytest.raises(NarError, match=r"^only 2 calibration models measured; .*\(26 left out: the machine stayed busy"):
        ev.evaluate_calibration(ks=(10,), held_out=10, threads=1)
    assert calls == [10, 8, 10]  # eight stand-ins, none measured: no further round; then the held-out models
    every_calibration = lambda chosen, *args, **_: [(c, 5.0) for c in chosen] if chosen[0].name == "zoo/m0" else []
    monkeypatch.setattr(ev, "measure_models", every_calibration)
    monkeypatch.setattr(cal, "measure_models", every_calibration)
    with pytest.raises(NarError, match=r"^no held-out model measured; the evaluation needs at least one \(the others"):
        ev.evaluate_calibration(ks=(10,), held_out=10, threads=1)


CONV = """
from torch import nn


class SmallConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, padding=1))

    def forward(self, x):
        return self.body(x)
"""


def fake_timings(monkeypatch, ms_of_shape, allocator=None):
    """`nar bench`'s child replaced: the median is ms_of_shape[first input's shape], timed in this
    version's malloc regime unless `allocator` names another; tracing still runs."""
    from narcli.bench.child import measure_in_child
    from narcli.trace import isolation

    real = isolation.run_isolated

    def run(function, args, *rest, **kwargs):
        if function is not measure_in_child:
            return real(function, args, *rest, **kwargs)
        ms = ms_of_shape[tuple(args[0].inputs[0]["shape"])]
        return {"median_ms": ms, "iqr_ms": 0.1, "runs": 3, "warmup": 1, "times_ms": [ms - 0.1, ms, ms + 0.1],
                "allocator": allocator_regime() if allocator is None else allocator}

    monkeypatch.setattr(isolation, "run_isolated", run)


def test_a_file_timed_at_two_input_sizes_keeps_both_and_each_size_sees_its_own(write, monkeypatch):
    # the graph's hash is the same at every input size: before 2026-12-04 the second timing replaced
    # the first, and a scan at 128x128 showed the 224x224 timing as its own
    from narcli.bench import runner
    from narcli.scan.scanner import ScanOptions
    from narcli.search.predictions import measured_rows

    fake_timings(monkeypatch, {(1, 3, 16, 16): 2.0, (1, 3, 32, 32): 9.0})
    model = str(write("small_conv.py", CONV))
    small = runner.bench_target(model, options=ScanOptions(input_shapes=["1,3,16,16"]), repeat=3)
    large = runner.bench_target(model, options=ScanOptions(input_shapes=["1,3,32,32"]), repeat=3)
    assert small.graph_hash == large.graph_hash and large.macs == 4 * small.macs
    assert small.inputs == [{"shape": [1, 3, 16, 16], "dtype": "float32"}] and small.assumed is None
    assert [row.value for row in measured_rows(small.graph_hash, small.macs)] == [2.0]
    assert [row.value for row in measured_rows(large.graph_hash, large.macs)] == [9.0]
    again = runner.bench_target(model, options=ScanOptions(input_shapes=["1,3,16,16"]), repeat=3, reuse=True)
    assert again.reused and again.median_ms == 2.0


def test_a_timing_stored_before_under_the_plain_hash_is_shown_only_at_its_own_size():
    from narcli.bench import store
    from narcli.bench.device import device_info
    from narcli.search.predictions import measured_rows

    info = device_info("cpu", 1)
    store.save("ef" * 16, 1, info.key, "old.py:Net", {"median_ms": 133.0, "iqr_ms": 5.0, "runs": 20, "macs": 4_068_922_368,
                                                      "device": info.to_dict(), "batch": 1,
                                                      "allocator": allocator_regime()})  # its size alone is old
    assert measured_rows("ef" * 16, 1_328_627_712) == []  # the same file scanned at 128x128
    assert [row.value for row in measured_rows("ef" * 16, 4_068_922_368)] == [133.0]
    assert store.load("ef" * 16, 1, info.key, 1_328_627_712) is None
    assert store.load("ef" * 16, 1, info.key, 4_068_922_368)["median_ms"] == 133.0


def test_bench_says_the_inputs_it_timed_and_that_they_were_guessed(cli, write, monkeypatch):
    fake_timings(monkeypatch, {(1, 16): 1.5})
    model = write("tiny.py", TINY.format(width=8))
    result = cli("bench", model, "--repeat", "3")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if line.startswith("input "))
    assert line.startswith("input float32[1,16]; assumed: ") and "give --input-shape" in line
    data = json.loads(cli("bench", model, "-i", "1,16", "--repeat", "3", "--json").stdout)
    assert data["inputs"] == [{"shape": [1, 16], "dtype": "float32"}] and data["assumed"] is None
    named = cli("bench", model, "-i", "1,16", "--repeat", "3", "--batch", "4")
    assert "input float32[1,16] (batch 4 in the timing)\n" in named.stdout


def test_a_stored_row_whose_macs_are_not_a_number_is_no_timing_of_any_size():
    from narcli.bench import store
    from narcli.bench.device import device_info
    from narcli.search.predictions import measured_rows

    info = device_info("cpu", 1)
    store.save("fa" * 16, 1, info.key, "odd", {"median_ms": 5.0, "iqr_ms": 0.1, "runs": 3, "macs": "many",
                                               "device": info.to_dict(), "batch": 1})
    assert measured_rows("fa" * 16, 1000) == [] and store.load("fa" * 16, 1, info.key, 1000) is None
