"""The Ray engine (`--engine ray`) on a local Ray with two CPUs: the same zoo as the local pool,
timeouts that kill a task's whole process tree, resuming after an interruption, embedding on
encoder actors; and a clear message where Ray is missing."""

import contextlib
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from narcli.errors import NarError, UsageError
from narcli.zoo import plugins
from narcli.zoo.build import BuildOptions, build_zoo
from tests import fake_source


@pytest.fixture(autouse=True)
def fake_plugin():
    plugins.register(fake_source, name="fake-tests")
    yield
    plugins.unregister("fake-tests")


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module (the engine joins a session that is already open)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


def graph_hashes(db):
    # closed here, not left to the collector: an open reader keeps the next build's compaction
    # (leaving WAL mode needs the only connection) from running
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return dict(conn.execute("select id, coalesce(graph_hash, reason) from models"))


@pytest.mark.slow  # ~21 s of Ray start-up; the default run keeps the Ray tests that share a session
def test_the_fake_zoo_built_on_ray_equals_the_local_pools(tmp_path, local_ray):
    local, on_ray = tmp_path / "local.db", tmp_path / "ray.db"
    build_zoo(BuildOptions(db=local, sources=["fake"], jobs=2, timeout=8))
    [report] = build_zoo(BuildOptions(db=on_ray, sources=["fake"], jobs=2, timeout=8, engine="ray"))
    assert graph_hashes(on_ray) == graph_hashes(local)
    assert (report.ok, report.failed, report.new_architectures) == (6, 4, 5)
    # the hanging model was stopped at its 8 s, not left to sleep its 600 s
    assert graph_hashes(on_ray)["fk/hangs"] == "timeout"
    assert graph_hashes(on_ray)["fk/crashes"] == "crash (SIGSEGV)"
    with sqlite3.connect(on_ray) as conn:
        assert '"engine": "ray"' in conn.execute("select options from builds").fetchone()[0]


def start_a_process_then_hang(pid_file: str) -> None:
    """A task that leaves a child process behind and never returns."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    with open(pid_file, "w") as handle:
        handle.write(str(child.pid))
    time.sleep(600)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_hanging_task_is_killed_at_its_timeout_with_everything_it_started(tmp_path, local_ray):
    from narcli.trace.ray_engine import run_ray

    pid_file = tmp_path / "child.pid"
    results = []
    run_ray(start_a_process_then_hang, [("hang", (str(pid_file),))], results.append, jobs=1, timeout=4)
    assert [(r.key, r.ok, r.reason) for r in results] == [("hang", False, "timeout")]
    pid = int(pid_file.read_text())
    for _ in range(50):  # the kill is sent before the result; the kernel may take a moment
        if not alive(pid):
            break
        time.sleep(0.1)
    assert not alive(pid), "the task's own child outlived its timeout"


class Interrupt(Exception):
    pass


def test_an_interrupted_ray_build_resumes_where_it_stopped(tmp_path, local_ray):
    db = tmp_path / "zoo.db"

    class StopAfterTwo:
        seen = 0

        def start(self, source, total):
            pass

        def advance(self, source, result):
            self.seen += 1
            if self.seen == 2:
                raise KeyboardInterrupt

    names = ["mlp_small", "mlp_wide", "cnn_tiny", "cnn_base", "resnet50"]
    with pytest.raises(KeyboardInterrupt):
        build_zoo(BuildOptions(db=db, sources=["fake"], patterns=names, jobs=2, engine="ray"), StopAfterTwo())
    assert len(graph_hashes(db)) == 2  # what had finished was committed
    [report] = build_zoo(BuildOptions(db=db, sources=["fake"], patterns=names, jobs=2, engine="ray"))
    assert (report.already, report.ok, report.failed) == (2, 3, 0)
    assert sorted(graph_hashes(db)) == sorted(f"fk/{n}" for n in names)
    # the interrupted run's actors were let go: both CPUs are free again
    for _ in range(100):
        if local_ray.available_resources().get("CPU", 0) == 2:
            break
        time.sleep(0.1)
    assert local_ray.available_resources().get("CPU", 0) == 2


def test_embedding_on_ray_actors_stores_what_the_local_embedding_stores(tmp_path, local_ray):
    from narcli.encode.zoo_embed import embed_zoo

    db = tmp_path / "zoo.db"
    build_zoo(BuildOptions(db=db, sources=["fake"], patterns=["mlp_*", "cnn_*"], jobs=2))
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    local = embed_zoo(db)
    on_ray = embed_zoo(copy, engine="ray", actors=1)
    assert on_ray["embedded"] == local["embedded"] == 4 and on_ray["encoder"] == local["encoder"]
    assert on_ray["devices"] == ["cpu"]

    def stored(path):
        with sqlite3.connect(path) as conn:
            vectors = dict(conn.execute("select hash, vector from embeddings"))
            notes = dict(conn.execute("select hash, motifs from annotations"))
        return {h: np.frombuffer(v, np.float32) for h, v in vectors.items()}, notes

    (vectors, notes), (ray_vectors, ray_notes) = stored(db), stored(copy)
    assert vectors.keys() == ray_vectors.keys() and notes == ray_notes
    for graph_hash, vector in vectors.items():
        assert np.allclose(vector, ray_vectors[graph_hash], atol=1e-5)
    assert embed_zoo(copy, engine="ray")["embedded"] == 0  # current: nothing to do, no actor started


def test_without_ray_the_engine_says_how_to_get_it(tmp_path, monkeypatch, cli):
    from narcli.trace.ray_engine import RAY_HINT, import_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(NarError, match=r"pip install 'nar\[ray\]'"):
        import_ray()
    db = tmp_path / "zoo.db"
    with pytest.raises(UsageError, match="nar\\[ray\\]"):
        build_zoo(BuildOptions(db=db, sources=["fake"], engine="ray"))
    assert not db.exists()  # refused before anything was written
    result = cli("zoo", "build", "--source", "fake", "--engine", "ray", "--db", str(db))
    assert result.exit_code == 2 and RAY_HINT in result.output and "Traceback" not in result.output


def test_engine_options_are_checked_before_anything_is_written(tmp_path, cli):
    db = tmp_path / "zoo.db"
    result = cli("zoo", "build", "--source", "fake", "--address", "auto", "--db", str(db))
    assert result.exit_code == 2 and "--address names a Ray cluster; use it with --engine ray" in result.output
    result = cli("zoo", "build", "--source", "fake", "--engine", "spark", "--db", str(db))
    assert result.exit_code == 2 and "unknown engine 'spark'; choose local or ray" in result.output
    assert not db.exists()


def test_the_similar_path_never_imports_ray():
    code = ("import sys; from typer.testing import CliRunner; from narcli.cli.app import app; "
            "r = CliRunner().invoke(app, ['similar', 'resnet50', '-k', '3']); "
            "assert r.exit_code == 0, r.output; print('ray' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def _closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_address_is_one_line_at_once_and_nothing_is_written(tmp_path, cli):
    pytest.importorskip("ray")
    db = tmp_path / "zoo.db"
    for address in ("localhost:1", f"127.0.0.1:{_closed_port()}", f"ray://127.0.0.1:{_closed_port()}"):
        result = cli("zoo", "build", "--source", "fake", "--engine", "ray", "--address", address, "--db", db)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert f"cannot reach the Ray cluster at {address}" in result.stderr
        assert not db.exists()


def test_a_ray_session_checks_the_address_before_ray_retries_it(monkeypatch):
    from narcli.trace import ray_engine

    def must_not_run(**options):
        raise AssertionError("ray.init was called on an unreachable address")

    fake = type("FakeRay", (), {"is_initialized": staticmethod(lambda: False), "init": staticmethod(must_not_run)})
    monkeypatch.setattr(ray_engine, "import_ray", lambda: fake)
    with pytest.raises(NarError, match="cannot reach the Ray cluster"), \
            ray_engine.ray_session(f"127.0.0.1:{_closed_port()}"):
        pass


def test_sigterm_keeps_the_callers_handler_through_ray_init(monkeypatch):
    """ray.init installs a SIGTERM handler that exits through Ray's shut-down; the build's own (stop
    as Ctrl-C does, at once) must stay in place."""
    import signal

    from narcli.trace import ray_engine

    def init_like_ray(**options):
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))

    fake = type("FakeRay", (), {"is_initialized": staticmethod(lambda: False), "init": staticmethod(init_like_ray),
                                "shutdown": staticmethod(lambda: None)})
    monkeypatch.setattr(ray_engine, "import_ray", lambda: fake)

    def callers(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, callers)
    try:
        with ray_engine.ray_session(None, 1):
            assert signal.getsignal(signal.SIGTERM) is callers
    finally:
        signal.signal(signal.SIGTERM, previous)
