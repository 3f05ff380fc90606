"""`nar check` for pre-commit: a renamed zoo model is refused, an unrelated model passes; files named
by their path, `[tool.nar] check-paths` that are wrong or leave the project, and the README's hook."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import mlp_source
from tests.test_bad_input import one_error_line

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


def hooked_repo(tmp_path, nar_home):
    """A git repository with the shipped hook installed (run from this environment, `language:
    system`, instead of a fresh one), and `git` to run in it; skips without git or pre-commit."""
    pre_commit = Path(sys.executable).with_name("pre-commit")
    if shutil.which("git") is None or not pre_commit.exists():
        pytest.skip("needs git and pre-commit")
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
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
    assert subprocess.run([str(pre_commit), "install"], cwd=repo, env=env, capture_output=True).returncode == 0
    return repo, git


def test_pre_commit_refuses_a_renamed_resnet_and_accepts_a_small_mlp(tmp_path, nar_home):
    repo, git = hooked_repo(tmp_path, nar_home)
    (repo / "mlp.py").write_text(SMALL_MLP)
    git("add", ".")
    passed = git("commit", "-m", "a small MLP")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    (repo / "my_new_net.py").write_text(RESNET_COPY)
    git("add", "my_new_net.py")
    refused = git("commit", "-m", "a 'new' network")
    assert refused.returncode != 0
    assert "KNOWN" in refused.stdout + refused.stderr and "resnet" in refused.stdout + refused.stderr


FIXTURES = ROOT / "tests" / "fixtures"


def test_the_same_architecture_at_another_input_size_is_known(cli, write):
    """Issue 43 item 8: a copied ResNet-50 checked at 64 px embeds below the 0.99 cosine, but its
    canonical graph is the zoo's: the hook must say KNOWN, and say why."""
    resnet = write("net.py", RESNET_COPY)
    code, report = check(cli, resnet, "--input-shape", "1,3,64,64")
    [result] = report["results"]
    assert code == 1 and result["flagged"] and result["known"]["rule"] == "same-graph"
    assert "resnet50" in result["nearest"]
    assert "same canonical graph" in cli("check", resnet, "-i", "1,3,64,64").output


def test_a_stem_and_head_adapted_copy_is_known_and_a_deeper_network_is_not(cli, write):
    """A CIFAR ResNet-18 (3x3 stem, no max-pool, 10 classes) is ResNet-18 adapted at its ends; the
    layers that differ are named. A ResNet-50 is not a ResNet-18 "adapted"."""
    from narcli.graph.arch_graph import ArchGraph, Node
    from narcli.search.known import adapted_changes
    from narcli.zoo.store import Zoo

    code, report = check(cli, write("cifar.py", (FIXTURES / "resnet18_cifar.py").read_text()))
    [result] = report["results"]
    assert code == 1 and result["known"]["rule"] == "adapted" and result["family"] == "resnet"
    assert "-max_pool2d(3x3, /2)" in result["known"]["changed"]
    zoo = Zoo()
    r18, r50 = (zoo.graph(zoo.resolve(name)) for name in ("timm/resnet18", "timm/resnet50"))
    assert adapted_changes(r18, r18) == []
    assert adapted_changes(r50, r18) is None
    # a change in the middle of the network is a redesign, however small
    middle = len(r18.nodes) // 2
    nodes = [Node(n.op, n.shape, dict(n.attrs), n.params) for n in r18.nodes]
    nodes[middle] = Node("gelu") if nodes[middle].op == "relu" else Node("relu")
    assert adapted_changes(ArchGraph(nodes, r18.edges), r18) is None


def test_pre_commit_flags_copies_at_their_natural_input_with_no_hook_arguments(tmp_path, nar_home):
    """Issue 43's must-reach: a project holding a CIFAR ResNet-18, a hand-written VGG-16 and a GPT-2
    block stack, each at its natural input, is refused by the hook with no arguments: nar finds the
    32-px input itself, and all three are KNOWN."""
    repo, git = hooked_repo(tmp_path, nar_home)
    (repo / "models").mkdir()
    for name in ("resnet18_cifar.py", "vgg16.py", "gpt2_blocks.py"):
        shutil.copy(FIXTURES / name, repo / "models" / name)
    git("add", ".")
    refused = git("commit", "-m", "three 'new' networks")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out
    for name in ("resnet18_cifar.py", "vgg16.py", "gpt2_blocks.py"):
        assert f"KNOWN models/{name}" in out, out
    assert "3 checked, 3 known" in out


def test_a_model_without_a_working_first_guess_finds_its_input(cli, write):
    """Item 9: a CIFAR network's head fits only 32 px; the scan tries the size the failed head
    names and says which input it used."""
    result = cli("scan", write("cifar.py", (FIXTURES / "resnet18_cifar.py").read_text()), "--json")
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.stdout)["models"] if "models" in json.loads(result.stdout) else json.loads(result.stdout)
    assert record["inputs"] == [{"shape": [1, 3, 32, 32], "dtype": "float32"}]
    assert "float32[1,3,224,224] failed, float32[1,3,32,32] ran" in record["assumed"]


def test_per_path_settings_in_pyproject(cli, write, tmp_path, monkeypatch):
    """Item 9: `[tool.nar.files."GLOB"]` sets the scan options of the files it matches, so one hook
    run checks a 28-px and a 224-px model; a bad table is one usage line."""
    write("models/mnist/net.py", mlp_source(784, 64, 10).replace("nn.Linear(784", "nn.Flatten(), nn.Linear(784"))
    write("models/big/resnet.py", RESNET_COPY)
    write("pyproject.toml", '[tool.nar]\ncheck-paths = ["models/**/*.py"]\n'
          '[tool.nar.files."models/mnist/*.py"]\ninput-shape = "1,1,28,28"\n')
    monkeypatch.chdir(tmp_path)
    code, report = check(cli)
    by_name = {Path(r["path"]).name: r for r in report["results"]}
    assert by_name["net.py"]["settings"] == ["models/mnist/*.py"] and not by_name["net.py"]["error"]
    assert by_name["resnet.py"]["settings"] == [] and by_name["resnet.py"]["flagged"]
    for bad in ('[tool.nar.files."m/*.py"]\ninput-shape = 5\n', '[tool.nar.files."m/*.py"]\nspeed = 1\n',
                '[tool.nar]\nfiles = 3\n', '[tool.nar.files."../*.py"]\nmodel = "X()"\n'):
        write("pyproject.toml", '[tool.nar]\ncheck-paths = ["models/**/*.py"]\n' + bad
              if not bad.startswith("[tool.nar]\n") else bad + 'check-paths = ["models/**/*.py"]\n')
        result = cli("check")
        assert result.exit_code == 2 and "Traceback" not in result.output and "pyproject.toml" in result.output


@pytest.mark.parametrize("text", ["[tool]\nnar = 5\n", 'tool = "x"\n', "[tool.nar]\ncheck-paths = " + "[" * 5000 + "]" * 5000 + "\n"])
def test_a_hostile_pyproject_is_one_usage_line(cli, write, tmp_path, monkeypatch, text):
    """Item 6: `[tool] nar = 5`, `tool = "x"` and a 5,000-deep array were internal errors."""
    write("pyproject.toml", text)
    write("net.py", SMALL_MLP)
    monkeypatch.chdir(tmp_path)
    result = cli("check")
    assert result.exit_code == 2 and "Traceback" not in result.output and "internal error" not in result.output
    assert "pyproject.toml" in result.output and len(result.output.strip().splitlines()) <= 3


def test_globs_never_leave_the_project_and_survive_symlink_loops(cli, write, tmp_path, monkeypatch):
    """Items 2: a symlinked folder that points outside the project is refused (its code never runs);
    two symlink loops neither hang the walk nor check a file twice."""
    outside = tmp_path / "outside"
    marker = tmp_path / "imported-from-outside"
    write("outside/evil.py", f"import torch\nopen({str(marker)!r}, 'w').write('ran')\n")
    project = tmp_path / "project"
    write("project/models/mlp.py", SMALL_MLP)
    write("project/pyproject.toml", '[tool.nar]\ncheck-paths = ["models/**/*.py"]\n')
    (project / "models" / "vendor").symlink_to(outside, target_is_directory=True)
    (project / "models" / "loop").symlink_to(project / "models", target_is_directory=True)
    (project / "models" / "sub").mkdir()
    (project / "models" / "sub" / "back").symlink_to(project / "models", target_is_directory=True)
    (project / "models" / "same.py").symlink_to(project / "models" / "mlp.py")
    monkeypatch.chdir(project)
    code, report = check(cli)
    assert not marker.exists()
    checked = [r for r in report["results"] if not r["skipped"]]
    assert [Path(r["path"]).name for r in checked] == ["mlp.py"]  # once, though reachable five ways
    refused = [r for r in report["results"] if r["skipped"]]
    assert any("vendor" in r["path"] and "outside the project" in r["skipped"] for r in refused)
    text = cli("check").output
    assert "vendor" in text and "outside the project" in text


def test_glob_matching_follows_glob_rules():
    from narcli.search.project_paths import glob_regex

    cases = [("models/**/*.py", "models/a.py", True), ("models/**/*.py", "models/x/y/a.py", True),
             ("models/**/*.py", "models/.hidden/a.py", False), ("*.py", "x/a.py", False),
             ("m/[ab].py", "m/a.py", True), ("m/[!ab].py", "m/a.py", False), ("m/[!ab].py", "m/c.py", True),
             ("models/*.py", "models/.a.py", False), ("**", "x/y.py", True), ("m/?.py", "m/ab.py", False)]
    for pattern, path, expected in cases:
        assert bool(glob_regex(pattern).match(path)) is expected, (pattern, path)


def test_a_known_design_kept_on_purpose_is_allowed_per_path(cli, write, tmp_path, monkeypatch):
    """`allow-known = true` under [tool.nar.files."GLOB"] reports the match but lets the file through;
    other files are still refused."""
    write("models/kept/resnet.py", RESNET_COPY)
    write("models/new/resnet.py", RESNET_COPY)
    write("pyproject.toml", '[tool.nar]\ncheck-paths = ["models/**/*.py"]\n'
          '[tool.nar.files."models/kept/*.py"]\nallow-known = true\n')
    monkeypatch.chdir(tmp_path)
    code, report = check(cli)
    by_folder = {Path(r["path"]).parent.name: r for r in report["results"]}
    assert by_folder["kept"]["allowed"] and not by_folder["kept"]["flagged"] and by_folder["kept"]["known"]
    assert by_folder["new"]["flagged"] and code == 1
    text = cli("check").output
    assert "1 known but allowed" in text and "resnet.py: the same architecture as" in text and "allow-known" in text
    write("pyproject.toml", '[tool.nar]\ncheck-paths = ["models/kept/*.py"]\n'
          '[tool.nar.files."models/kept/*.py"]\nallow-known = true\n')
    assert check(cli)[0] == 0
    write("pyproject.toml", '[tool.nar]\ncheck-paths = ["models/kept/*.py"]\n'
          '[tool.nar.files."models/kept/*.py"]\nallow-known = "yes"\n')
    assert cli("check").exit_code == 2


@pytest.mark.parametrize("setting, message", [
    ("check-paths = 5", "must be a glob or a list of globs"),
    ("check-paths = [5]", "must be a glob or a list of globs"),
    ('check-paths = ["nothing/*.py"]', "matched no files"),
])
def test_check_paths_that_are_wrong_say_so(cli, tmp_path, monkeypatch, setting, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.nar]\n{setting}\n")
    monkeypatch.chdir(tmp_path)
    result = cli("check")
    assert result.exit_code == 2
    one_error_line(result, message)


def test_check_paths_that_leave_the_project_are_refused(cli, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.nar]\ncheck-paths = ["../../../../../**"]\n')
    monkeypatch.chdir(tmp_path)
    result = cli("check")
    assert result.exit_code == 2
    one_error_line(result, "reach outside the project")


# two model.py files in different folders are told apart in check's text output
def test_check_names_files_by_their_path(cli, write, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write("a/model.py", mlp_source(4, 8, 2))
    write("b/model.py", mlp_source(5, 9, 2))
    output = cli("check", "a/model.py", "b/model.py").output
    assert "ok a/model.py" in output and "ok b/model.py" in output, output


# the README's pre-commit snippet works as written (no tag that does not exist) and is the shipped hook
def test_the_readme_pre_commit_snippet_is_the_shipped_hook():
    import re
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if "pre-commit-config" in b]
    [repo] = yaml.safe_load(block)["repos"]
    assert repo["repo"] == "local" and "rev" not in repo
    [hook] = repo["hooks"]
    [shipped] = yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())
    for key in ("id", "entry", "files", "types_or", "require_serial"):
        assert hook[key] == shipped[key], key


def test_a_cifar_stem_is_also_compared_in_its_imagenet_spelling():
    """As `nar similar` does: a model is known by the embedding rule when its CIFAR-style stem,
    spelled as ImageNet code writes it, is within the threshold of a zoo model though its own
    spelling is not; the verdict says which spelling matched. A query without a second spelling
    is compared as it is."""
    from types import SimpleNamespace

    import numpy as np

    from narcli.search.check import _verdict
    from narcli.search.query import STEM_KEY, Query

    own, respelled = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)

    class Index:  # the zoo model "near" is at 0.95 to the query's own vector, 0.995 to the respelled one
        def query(self, vector, n):
            return [("near", 0.995 if vector[1] > 0.5 else 0.95), ("far", 0.5)][:n]

    class Zoo:
        def models_by_hash(self, hashes):
            return {h: [SimpleNamespace(id=f"timm/{h}", family="resnet", source="timm")] for h in hashes
                    if h in ("near", "far")}

    query = Query("cifar.py", "file", "mine", own, {STEM_KEY: respelled.tolist()}, [])
    checked = _verdict(Path("cifar.py"), query, Index(), Zoo(), 0.99, [])
    assert checked.flagged and checked.known.rule == "embedding" and checked.known.respelled
    assert checked.cosine == pytest.approx(0.995) and "ImageNet" in checked.known.describe()
    assert checked.to_json()["known"]["respelled"] is True
    plain = _verdict(Path("cifar.py"), Query("cifar.py", "file", "mine", own, {STEM_KEY: []}, []), Index(), Zoo(),
                     0.99, [])
    assert not plain.flagged and plain.cosine == pytest.approx(0.95) and not plain.respelled
    # below the threshold either way: not known, and the line says the nearest came by the respelling
    near = _verdict(Path("cifar.py"), query, Index(), Zoo(), 0.999, [])
    assert not near.flagged and near.respelled and near.cosine == pytest.approx(0.995)
