"""Concurrency and `kill -9`: concurrent scans lose no rows and hit no lock errors; killing nar at any
moment of a scan or an index build leaves a cache that passes `PRAGMA integrity_check` and answers."""

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from narcli.scan.cache import Cache, default_db_path

from .conftest import mlp_source, run_nar


def _nar(*args):
    return subprocess.Popen([sys.executable, "-m", "narcli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _scans_stored() -> int:
    path = default_db_path()
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("select count(*) from scans").fetchone()[0]
    except sqlite3.Error:  # the schema is being made
        return 0
    finally:
        conn.close()


def _children(pid: int) -> bool:
    from narcli.trace.isolation import descendants

    return bool(descendants(pid))


def _wait_for(proc, event, within: float = 120.0) -> None:
    """Poll until `event()` holds or `proc` ended (then there is nothing left to interrupt);
    `within` only guards against a hang."""
    deadline = time.monotonic() + within
    while proc.poll() is None and not event():
        assert time.monotonic() < deadline, "the awaited moment never came"
        time.sleep(0.02)


def _sound() -> None:
    path = default_db_path()
    if path.exists():
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        finally:
            conn.close()
    info = run_nar("cache", "info", "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["health"] == "ok"


def test_four_concurrent_scans_three_rounds(write):
    for round_ in range(3):
        paths = [write(f"r{round_}/m{i}.py", mlp_source(3 + i, 5 + round_, 2)) for i in range(4)]
        procs = [_nar("scan", p) for p in paths]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and "locked" not in err, err
        assert Cache().info()["scans"] == 4 * (round_ + 1)  # no row lost
    _sound()


@pytest.mark.slow  # ~23 s; concurrent scans stay in the default run
def test_concurrent_similar_on_new_files_two_rounds(write, nar_home):
    """Each `nar similar` of a new file rebuilds the user's index; none may pull the annoy file from
    under another (issue 30: 4 of 8 failed with `…/index/user-….ann: No such file or directory`)."""
    from narcli.search.index import VectorIndex

    for round_ in range(2):
        paths = [write(f"s{round_}/m{i}.py", mlp_source(3 + i, 6 + round_, 2)) for i in range(6)]
        procs = [_nar("similar", p, "-k", "2") for p in paths]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
    _sound()
    index = VectorIndex(nar_home / "index" / "user.json")
    index.verify()
    assert len(index) == 12 and len(list((nar_home / "index").glob("user-*.ann"))) == 1


@pytest.mark.slow  # ~20 s of kills at random moments: the opt-in job (`pytest -m slow`)
def test_kill_9_at_random_moments_of_a_directory_scan(write, tmp_path):
    for i in range(6):
        write(f"proj/m{i}.py", mlp_source(2 + i, 4, 3))
    rng = random.Random(18)
    for _ in range(4):
        stored = _scans_stored()
        proc = _nar("scan", tmp_path / "proj", "--no-cache" if rng.random() < 0.3 else "--json")
        # the moment: as a scan child starts, or just after the n-th new file is stored
        wanted = rng.randint(0, 3)
        _wait_for(proc, lambda: _children(proc.pid) if wanted == 0 else _scans_stored() >= stored + wanted)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        _sound()
    done = run_nar("scan", tmp_path / "proj", "--json")
    assert done.returncode == 0, done.stderr
    _sound()


@pytest.mark.slow  # ~25 s likewise; the index's atomic swap is also tested by test_storage.py
def test_kill_9_at_random_moments_of_an_index_build(write, nar_home):
    assert run_nar("scan", write("mine.py", mlp_source(3, 7, 2))).returncode == 0
    rng = random.Random(18)
    for _ in range(3):
        proc = _nar("index", "build")
        # the moment: the build has started, or it is writing a temporary index beside the live one
        writing = rng.random() < 0.5
        _wait_for(proc, lambda: any((nar_home / "index").glob("*.tmp")) if writing else True)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        _sound()
        answer = run_nar("similar", "resnet50", "-k", "3", "--json")
        assert answer.returncode == 0, answer.stderr
    rebuilt = run_nar("index", "build")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert not list((nar_home / "index").glob("*.tmp"))  # the killed builds' leftovers are gone
    _sound()
