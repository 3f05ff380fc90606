"""No process outlives `nar`: not the child running the user's code, not what that code started,
whether the scan times out or nar itself is killed."""

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# a model file whose import starts a long-lived subprocess, records both pids, then hangs
SPAWNS_AND_HANGS = """
import os, subprocess, sys, time
helper = subprocess.Popen(["sleep", "300"])
with open({pids!r} + ".tmp", "w") as f:
    f.write(f"{{os.getpid()}} {{helper.pid}}")
os.replace({pids!r} + ".tmp", {pids!r})
while True:
    time.sleep(0.1)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has already died
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _model(tmp_path):
    pids = tmp_path / "pids"
    path = tmp_path / "spawner.py"
    path.write_text(SPAWNS_AND_HANGS.format(pids=str(pids)))
    return path, pids


def _wait_for(path, within: float = 60.0) -> list[int]:
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline, "the model file never ran"
        time.sleep(0.05)
    return [int(p) for p in path.read_text().split()]


def _start_nar(*args):
    return subprocess.Popen([sys.executable, "-m", "narcli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_timeout_kills_the_child_and_what_it_started(tmp_path):
    path, pids = _model(tmp_path)
    nar = _start_nar("scan", path, "--timeout", "3")
    _, err = nar.communicate(timeout=120)
    assert nar.returncode == 1 and "timed out after 3 s" in err
    children = _wait_for(pids, 1)
    assert _gone(children, 5), [p for p in children if _alive(p)]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_killing_nar_kills_the_child_and_what_it_started(tmp_path, how):
    path, pids = _model(tmp_path)
    nar = _start_nar("scan", path, "--timeout", "600")
    try:
        children = _wait_for(pids)
        assert all(_alive(p) for p in children)
        os.kill(nar.pid, how)
        nar.wait(30)
        assert _gone(children, 5), [p for p in children if _alive(p)]
    finally:
        if nar.poll() is None:
            nar.kill()
        nar.communicate()


def test_a_worker_pool_leaves_nothing_behind(tmp_path):
    from narcli.trace.pool import run_pool

    pid_file = tmp_path / "pool-pids"
    results = []
    run_pool(_spawn_and_hang, [("a", (str(pid_file),))], results.append, jobs=1, timeout=3)
    assert [r.reason for r in results] == ["timeout"]
    assert _gone(_wait_for(pid_file, 1), 5)


def _spawn_and_hang(pid_file: str) -> None:
    helper = subprocess.Popen(["sleep", "300"])
    with open(pid_file + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {helper.pid}")
    os.replace(pid_file + ".tmp", pid_file)
    while True:
        time.sleep(0.1)
