"""`nar bench --zoo`, the reference latency dataset: which models (every source and coarse class
early), measuring real zoo models in the long-lived worker, resuming, recording what could not be
measured, the shipped CSV + card; and the measurement shown as measured in `nar predict`."""

import json

import pytest
from narcli.bench import reference, store
from narcli.bench.device import device_info
from narcli.bench.measure import time_runs
from narcli.predict.latency import read_reference


def test_the_order_covers_every_source_and_coarse_class_before_going_deep():
    picks = reference.candidates()
    groups = {(p.source, p.coarse) for p in picks}
    first = {(p.source, p.coarse) for p in picks[: len(groups)]}
    assert first == groups
    assert len({p.graph_hash for p in picks}) == len(picks), "one model per distinct architecture"
    assert all(p.macs <= reference.MAX_GMACS * 1e9 for p in picks)


def test_fewer_gmacs_means_fewer_and_smaller_candidates():
    small = reference.candidates(max_gmacs=0.01)
    assert small and all(p.macs <= 1e7 for p in small)
    assert len(small) < len(reference.candidates())


def test_slow_models_stop_early_but_never_below_the_minimum():
    clock = {"now": 0.0}

    def run():
        clock["now"] += 0.6

    measured = time_runs(run, 10, timer=lambda: clock["now"], warmup_runs=1, warmup_seconds=0.0, max_seconds=1.0,
                         min_repeat=3)
    assert measured.runs == 3 and measured.median_ms == pytest.approx(600)


def test_fill_weights_gives_a_meta_model_real_values():
    import torch
    from torch import nn

    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Embedding(4, 8))
    from narcli.bench.child import fill_weights

    model = fill_weights(model)
    weight = model[0].weight
    assert weight.device.type == "cpu" and weight.std() > 0.005 and torch.isfinite(weight).all()
    assert (model[0].bias == 0).all() and (model[1].weight == 1).all() and (model[1].running_var == 1).all()
    assert (model[1].num_batches_tracked == 0).all()


def test_a_small_reference_run_measures_resumes_and_exports(tmp_path, monkeypatch):
    tiny = [p for p in reference.candidates(max_gmacs=0.001, sources=["classics"])][:3]
    assert len(tiny) == 3
    monkeypatch.setattr(reference, "candidates", lambda *a, **k: tiny)
    lines = []  # allow_busy: this test is about resuming, whatever else the machine runs (busy: test_quiet.py)
    first = reference.collect(limit=2, report=lines.append, allow_busy=True)
    assert first["measured"] == 2 and first["failed"] == 0
    second = reference.collect(report=lines.append, allow_busy=True)
    assert second["measured"] == 1, "the two stored ones are not measured again"
    assert second["stored"] == 3
    card = reference.export(tmp_path)
    rows, read_card = read_reference(tmp_path)
    assert len(rows) == 3 and {r["model"] for r in rows} == {p.id for p in tiny}
    assert all(r["median_ms"] > 0 and r["runs"] >= 3 and r["source"] == "classics" for r in rows)
    assert read_card["device"]["key"] == device_info("cpu", 1).key and read_card["device"]["threads"] == 1
    assert read_card["protocol"]["threads"] == 1 and card["rows"] == 3
    assert read_card["fingerprint"]["cores"] >= 1 and read_card["quietness"]["watched"] == 3


def test_a_model_that_cannot_be_measured_is_recorded_and_not_retried(monkeypatch):
    tiny = reference.candidates(max_gmacs=0.001, sources=["classics"])[:1]
    broken = [reference.Pick("classics/no_such_model", "classics", "0" * 32, "x", "mlp", 10, 10)]
    monkeypatch.setattr(reference, "candidates", lambda *a, **k: broken + tiny)
    summary = reference.collect(allow_busy=True)  # whatever else the machine runs
    assert summary["failed"] == 1 and summary["measured"] == 1
    assert store.failures(device_info("cpu", 1).key, 1) == {"0" * 32: "zoo"}
    again = reference.collect(allow_busy=True)
    assert again["failed"] == 0 and again["measured"] == 0


def _store_reference_rows(picks, key: str, times: list[float]) -> None:
    for pick, ms in zip(picks, times):
        store.save(pick.graph_hash, 1, key, pick.id, {"median_ms": ms, "iqr_ms": 0.1, "runs": 10, "protocol": "reference", "name": pick.id,
                                                       "quiet": {"other_cpu": 0.0}, "fingerprint": {"cores": 2}})


def test_a_second_session_of_the_same_machine_adds_to_the_exported_set(tmp_path, monkeypatch):
    picks = reference.candidates(max_gmacs=0.001, sources=["classics"])[:4]
    key = device_info("cpu", 1).key
    _store_reference_rows(picks[:2], key, [2.0, 4.0])
    store.save_failure(picks[3].graph_hash, 1, key, picks[3].id, "KeyError", "not listed")
    reference.export(tmp_path)
    reference.export(tmp_path)  # the same store again (a resumed run): one session, nothing counted twice
    rows, first = read_reference(tmp_path)
    assert len(rows) == 2 and len(first["sessions"]) == 1 and first["quietness"]["watched"] == 2
    assert first["unmeasured"] == {"KeyError": 1}
    # the next lease: a fresh store (another NAR_HOME) times the second model again and a third one,
    # and measures the graph the first could not
    monkeypatch.setenv("NAR_HOME", str(tmp_path / "second-home"))
    _store_reference_rows(picks[1:], key, [16.0, 8.0, 1.0])
    for _ in range(2):
        card = reference.export(tmp_path)
    rows, read_card = read_reference(tmp_path)
    by_model = {r["model"]: r["median_ms"] for r in rows}
    assert by_model == {picks[0].id: 2.0, picks[1].id: 16.0, picks[2].id: 8.0, picks[3].id: 1.0}, \
        "the first session's row kept, the graph timed twice at the newer timing"
    assert card["rows"] == read_card["rows"] == 4 and [s["rows"] for s in read_card["sessions"]] == [2, 3]
    assert read_card["quietness"]["watched"] == 5 and read_card["unmeasured"] == {}, "measured by the second"


def test_an_export_adds_to_a_set_written_before_sessions_were_kept(tmp_path):
    picks = reference.candidates(max_gmacs=0.001, sources=["classics"])[:2]
    key = device_info("cpu", 1).key
    _store_reference_rows(picks[:1], key, [2.0])
    reference.export(tmp_path)
    card_path = tmp_path / "reference-latency.json"
    card = json.loads(card_path.read_text())
    card.pop("sessions")
    card["unmeasured"], card["quietness"] = {"KeyError": 3}, {"watched": 7, "other_cpu_median": 0.2}
    card_path.write_text(json.dumps(card))
    _store_reference_rows(picks[1:], key, [3.0])
    merged = reference.export(tmp_path)
    assert merged["rows"] == 2 and [s["store"] for s in merged["sessions"]][0] is None
    assert merged["unmeasured"] == {"KeyError": 3} and merged["quietness"]["watched"] == 7 + 2
    assert merged["quietness"]["other_cpu_median"] == 0.2


def test_an_export_never_overwrites_another_machines_set(tmp_path):
    from narcli.errors import NarError

    picks = reference.candidates(max_gmacs=0.001, sources=["classics"])[:1]
    _store_reference_rows(picks, device_info("cpu", 1).key, [2.0])
    reference.export(tmp_path)
    card_path = tmp_path / "reference-latency.json"
    card = json.loads(card_path.read_text())
    card["device"]["key"] = "another-machine"
    card_path.write_text(json.dumps(card))
    before = (tmp_path / "reference-latency.csv").read_text()
    with pytest.raises(NarError, match="another device key"):
        reference.export(tmp_path)
    assert (tmp_path / "reference-latency.csv").read_text() == before
    assert json.loads(card_path.read_text())["device"]["key"] == "another-machine"


def test_export_refuses_an_empty_store(tmp_path):
    from narcli.errors import NarError

    with pytest.raises(NarError, match="nar bench --zoo"):
        reference.export(tmp_path)


def test_a_stored_measurement_beats_the_prediction(cli):
    from narcli.search.predictions import measured_rows, predictions_for, summary_line
    from narcli.zoo.store import Zoo

    with Zoo() as zoo:
        model = zoo.resolve("resnet18")
    info = device_info("cpu", 2)
    store.save(model.graph_hash, 1, info.key, model.id,
               {"median_ms": 13.4, "iqr_ms": 0.5, "runs": 4, "times_ms": [13.0, 13.3, 13.5, 13.9],
                "device": info.to_dict(), "batch": 1})
    (row,) = measured_rows(model.graph_hash)
    assert row.head == "measured" and row.value == 13.4 and row.low < 13.4 < row.high
    (result,) = predictions_for("resnet18")
    assert result.rows[0].head == "measured"
    assert "13.4 ms measured" in summary_line(result.rows)
    out = cli("predict", "resnet18")
    assert out.exit_code == 0 and "13.4 ms measured" in out.output
    as_json = json.loads(cli("predict", "resnet18", "--json").output)
    assert any(r["head"] == "measured" for r in as_json["results"][0]["predictions"])


def test_a_measurement_from_another_machine_is_not_shown_as_this_ones():
    from narcli.search.predictions import measured_rows

    other = {"kind": "cpu", "name": "Some Other CPU", "torch": "2.0", "threads": 4, "key": "feedfacecafe"}
    store.save("ab" * 16, 1, "feedfacecafe", "x", {"median_ms": 3.0, "iqr_ms": 0.1, "runs": 5, "device": other,
                                                    "batch": 1})
    assert measured_rows("ab" * 16) == []


def test_the_tui_predictions_tab_marks_a_measurement():
    from rich.console import Console

    from narcli.search.predictions import measured_rows
    from narcli.tui.data import predictions_view

    info = device_info("cpu", 2)
    store.save("cd" * 16, 1, info.key, "x", {"median_ms": 7.5, "iqr_ms": 0.2, "runs": 3, "times_ms": [7.4, 7.5, 7.7],
                                              "device": info.to_dict(), "batch": 1})
    console = Console(width=120, record=True)
    console.print(predictions_view(measured_rows("cd" * 16), None))
    text = console.export_text()
    assert "7.5 ms measured" in text and "(IQR)" in text and "this CPU, 2 threads" in text


def test_bad_reference_input_gets_one_line_and_an_exit_code(cli, tmp_path):
    assert cli("bench").exit_code == 2
    result = cli("bench", "--zoo", "--max-gmacs", "0")
    assert result.exit_code == 2 and "--max-gmacs must be positive" in result.output
    result = cli("eval", "latency", "--reference", tmp_path / "absent")
    assert result.exit_code == 1 and "has no reference-latency.csv" in result.output
    (tmp_path / "reference-latency.csv").write_text("a,b\n1,2\n")
    (tmp_path / "reference-latency.json").write_text("{}")
    result = cli("train", "latency", "--reference", tmp_path, "--out", tmp_path / "out")
    assert result.exit_code == 1 and "missing column 'graph_hash'" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_the_cuda_reference_run_is_tested_by_its_logic_on_a_cpu_only_machine(monkeypatch, tmp_path):
    """No GPU here: the device's name and memory are faked, the pool records what it was given and
    answers as a GPU worker would; the store, the lock, the busy rule and the export are the real ones."""
    from narcli.bench import device as device_module
    from narcli.bench import store
    from narcli.bench.device import DeviceInfo
    from narcli.trace.pool import TaskResult

    gpu = DeviceInfo("cuda", "Test GPU 80GB", "2.13.0", 0)
    monkeypatch.setattr(device_module, "device_info", lambda kind, threads: gpu if kind == "cuda" else
                        DeviceInfo("cpu", "x", "2.13.0", 1))
    monkeypatch.setattr(device_module, "check_device", lambda kind: None)
    monkeypatch.setattr(device_module, "available_bytes", lambda kind: 80 << 30)
    picks = reference.candidates(max_gmacs=0.001, sources=["classics"])[:2]
    monkeypatch.setattr(reference, "candidates", lambda *a, **k: picks)
    given = []

    def pool(fn, tasks, on_result, **options):
        for key, args in tasks:
            given.append(args)
            on_result(TaskResult(key, True, {"median_ms": 0.2, "iqr_ms": 0.01, "runs": 10,
                                             "quiet": {"busy": False, "reasons": [], "other_cpu": 0.0}}))

    monkeypatch.setattr("narcli.trace.pool.run_pool", pool)
    summary = reference.collect(device="cuda")
    assert summary["measured"] == 2 and all(args[-1] == "cuda" for args in given)
    assert summary["device"]["kind"] == "cuda" and len(store.measurements(gpu.key, 1)) == 2
    card = reference.export(tmp_path, device="cuda")  # where the store was copied, no GPU needed
    assert card["rows"] == 2 and card["device"]["name"] == "Test GPU 80GB" and card["protocol"]["threads"] == 0
    rows, _ = read_reference(tmp_path)
    assert {r["model"] for r in rows} == {p.id for p in picks}


def test_exporting_a_cuda_set_without_one_says_how_to_make_it(tmp_path):
    from narcli.errors import NarError

    with pytest.raises(NarError, match="nar bench --zoo --device cuda"):
        reference.export(tmp_path, device="cuda")
