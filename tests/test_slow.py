"""Long-running checks, opt-in: `pytest -m slow`."""

import json

import pytest

from .conftest import FIXTURES

pytestmark = pytest.mark.slow


def test_llama_7b_traces_on_meta_with_the_published_parameter_count(cli):
    result = cli("scan", FIXTURES / "llama7b.py", "--model", "llama_7b", "--input-shape", "1,128",
                 "--input-dtype", "long", "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["params"] == 6_738_415_616
    ops = dict(model["top_ops"])
    assert ops["linear"] == 32 * 7 + 1


def test_resnet50_fixture_matches_torchvision_figures(cli):
    result = cli("scan", FIXTURES / "resnet50.py", "--json")
    assert result.exit_code == 0, result.output
    [model] = json.loads(result.stdout)["models"]
    assert model["params"] == 25_557_032
    assert abs(model["macs"] - 4.09e9) < 0.01e9
    assert dict(model["top_ops"])["conv2d"] == 53
