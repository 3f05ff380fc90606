"""Defects a new user met (issue 31), each pinned by a test that failed before its fix."""

import subprocess
import sys

from .conftest import mlp_source


# 6: a "no" on a pipe is not consent
def test_cache_clear_without_a_terminal_needs_yes(write, nar_home):
    env = {**__import__("os").environ, "NAR_HOME": str(nar_home)}
    model = write("tiny.py", mlp_source(4, 8, 2))
    subprocess.run([sys.executable, "-m", "narcli", "scan", str(model)], env=env, check=True, capture_output=True)
    refused = subprocess.run([sys.executable, "-m", "narcli", "cache", "clear"], input="n\n", env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "pass -y" in refused.stderr, refused.stderr
    info = subprocess.run([sys.executable, "-m", "narcli", "cache", "info", "--json"], env=env, capture_output=True,
                          text=True, check=True)
    assert '"scans": 1' in info.stdout  # nothing was deleted


# 7: two model.py files in different folders are told apart in check's text output
def test_check_names_files_by_their_path(cli, write, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write("a/model.py", mlp_source(4, 8, 2))
    write("b/model.py", mlp_source(5, 9, 2))
    output = cli("check", "a/model.py", "b/model.py").output
    assert "ok a/model.py" in output and "ok b/model.py" in output, output


# 8: DOT labels are readable text
def test_dot_export_labels_are_plain_utf8():
    from narcli.graph.synthetic import residual_stack
    from narcli.tui.data import graph_dot

    dot = graph_dot(residual_stack(2), 'my "net" \\ v2')
    assert 'label="input\\n1×3×224×224"' in dot and "u00d7" not in dot
    assert dot.startswith('digraph "my \\"net\\" \\\\ v2" {')
