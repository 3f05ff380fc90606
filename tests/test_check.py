"""`nar check` for pre-commit: a renamed zoo model is refused, an unrelated model passes."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import mlp_source

ROOT = Path(__file__).resolve().parent.parent
# a hand-written ResNet-50 (no torchvision needed), the same graph as the zoo's resnet50
RESNET_COPY = (ROOT / "tests" / "fixtures" / "resnet50.py").read_text()
SMALL_MLP = mlp_source(32, 64, 3)


def check(cli, *args):
    result = cli("check", *args, "--json")
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip().startswith("{") else result.output


def test_a_copy_of_a_zoo_resnet_fails_and_a_small_mlp_passes(cli, write):
    resnet, mlp = write("models/net.py", RESNET_COPY), write("models/mlp.py", SMALL_MLP)
    code, report = check(cli, resnet, mlp)
    assert code == 1
    by_name = {Path(r["path"]).name: r for r in report["results"]}
    assert by_name["net.py"]["flagged"] and by_name["net.py"]["cosine"] > 0.999
    assert not by_name["mlp.py"]["flagged"] and by_name["mlp.py"]["cosine"] < report["threshold"]
    code, _ = check(cli, mlp)
    assert code == 0


def test_threshold_from_the_option_and_from_pyproject(cli, write, tmp_path, monkeypatch):
    resnet = write("net.py", RESNET_COPY)
    code, report = check(cli, resnet, "--threshold", "1.01")
    assert code != 0 and "between -1 and 1" in report
    write("pyproject.toml", "[tool.nar]\ncheck-threshold = 0.5\ncheck-paths = ['*.py']\n")
    write("mlp.py", SMALL_MLP)
    monkeypatch.chdir(tmp_path)
    code, report = check(cli)  # no paths: the configured globs
    assert code == 1 and report["threshold"] == 0.5 and report["threshold_from"].endswith("pyproject.toml")
    assert {Path(r["path"]).name for r in report["results"]} == {"net.py", "mlp.py"}


def test_without_paths_or_config_it_explains_the_config(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("check")
    assert result.exit_code == 2 and "check-paths" in result.output and "Traceback" not in result.output


def test_a_file_that_fails_to_scan_fails_the_check_unless_told_to_warn(cli, write, tmp_path, monkeypatch):
    """Issue 31: the hook failed open (`skip model.py: …`, exit 0). A file it cannot check now fails
    it by default; --on-error warn (or [tool.nar] check-on-error = "warn") lets it through, and the
    summary line says which happened."""
    broken = write("broken.py", "import torch\nraise ValueError('boom')\n")
    plain = write("util.py", "def helper():\n    return 1\n")
    code, report = check(cli, broken, plain)
    assert code == 1 and report["on_error"] == "fail"
    by_name = {Path(r["path"]).name: r for r in report["results"]}
    assert "boom" in by_name["broken.py"]["error"] and by_name["util.py"]["skipped"]
    text = cli("check", broken, plain).output
    assert "FAIL" in text and "1 could not be checked (failing the check; --on-error warn" in text
    assert "1 skipped: FAILED" in text
    code, _ = check(cli, broken, "--on-error", "warn")
    assert code == 0
    assert "let through (--on-error warn)" in cli("check", broken, "--on-error", "warn").output
    (tmp_path / "pyproject.toml").write_text('[tool.nar]\ncheck-on-error = "warn"\n')
    monkeypatch.chdir(tmp_path)
    assert check(cli, broken)[0] == 0
    (tmp_path / "pyproject.toml").write_text('[tool.nar]\ncheck-on-error = "maybe"\n')
    assert cli("check", broken).exit_code == 2


def test_the_shipped_hook_definition():
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "nar-check" and hook["entry"] == "nar check"
    assert hook["pass_filenames"] is True and hook["require_serial"] is True
    assert "python" in hook["types_or"] and "onnx" in hook["files"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_refuses_a_renamed_resnet_and_accepts_a_small_mlp(tmp_path, nar_home):
    pre_commit = Path(sys.executable).with_name("pre-commit")
    if not pre_commit.exists():
        pytest.skip("pre-commit is not installed")
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    # the shipped hook, run from this environment (language: system) instead of a fresh one
    local = {**hook, "language": "system", "entry": f"{Path(sys.executable).with_name('nar')} check"}
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}))
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
           "NAR_HOME": str(nar_home), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

    def git(*args):
        return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)

    git("init", "-q")
    git("add", ".pre-commit-config.yaml")
    assert git("commit", "-qm", "config").returncode == 0
    assert subprocess.run([str(pre_commit), "install"], cwd=repo, env=env, capture_output=True).returncode == 0
    (repo / "mlp.py").write_text(SMALL_MLP)
    git("add", "mlp.py")
    passed = git("commit", "-m", "a small MLP")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    (repo / "my_new_net.py").write_text(RESNET_COPY)
    git("add", "my_new_net.py")
    refused = git("commit", "-m", "a 'new' network")
    assert refused.returncode != 0
    assert "KNOWN" in refused.stdout + refused.stderr and "resnet" in refused.stdout + refused.stderr
