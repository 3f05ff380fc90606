"""`nar compare A B`."""

import json


def test_compare_two_zoo_resnets(cli):
    result = cli("compare", "resnet18", "resnet34", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["a"]["name"] == "timm/resnet18" and data["b"]["params"] > data["a"]["params"]
    assert 0.9 < data["cosine"] < 1.0 and not data["same_architecture"]
    assert data["motifs_shared"] and any(d["b"] > d["a"] for d in data["op_difference"])


def test_compare_a_model_with_itself(cli):
    result = cli("compare", "resnet50", "torchvision/resnet50", "--json")
    data = json.loads(result.stdout)
    assert data["same_architecture"] and data["cosine"] > 0.9999 and data["op_difference"] == []
    text = cli("compare", "resnet50", "vit_base_patch16_224")
    assert text.exit_code == 0 and "only in" in text.stdout and "cosine" in text.stdout


def test_compare_with_an_unknown_name_fails_cleanly(cli):
    result = cli("compare", "resnet50", "resnt50")
    assert result.exit_code != 0 and "did you mean" in result.output and "Traceback" not in result.output
