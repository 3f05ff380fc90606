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


def test_one_block_cut_at_another_point_is_shared(cli, write):
    """A GPT's block starts at its layer norm in one graph and at its attention in GPT-2's: same block."""
    from tests.test_similar import TINY_GPT

    path = write("tiny_gpt.py", TINY_GPT)
    data = json.loads(cli("compare", str(path), "gpt2", "--json").stdout)
    [pair] = [p for p in data["motifs_paired"] if p["same_block"]]
    assert pair["b"]["count"] == 12 and pair["a"]["layers"] != pair["b"]["layers"]
    assert sorted(pair["a"]["layers"]) == sorted(pair["b"]["layers"])
    text = " ".join(cli("compare", str(path), "gpt2").stdout.split())
    assert "shared motifs: none" not in text and "†" in text and "the same block, cut at another point" in text


def test_alike_motifs_say_what_differs(cli):
    data = json.loads(cli("compare", "bert", "gpt2", "--json").stdout)  # post-norm against pre-norm
    [pair] = data["motifs_paired"]
    assert not pair["same_block"] and "connected differently" in pair["difference"]
    text = " ".join(cli("compare", "resnet18", "resnet34").stdout.split())
    assert "alike motifs, and what differs:" in text and "timm/resnet34 has conv2d 3×3 more" in text


def test_motif_pairs_name_the_layers_one_side_lacks():
    from narcli.search.compare import pair_motifs

    a = {"type": "a1", "ops": {}, "count": 2, "layers": ["conv2d 3×3", "batch_norm", "relu"]}
    b = {"type": "b1", "ops": {}, "count": 3, "layers": ["conv2d 3×3", "batch_norm", "relu", "conv2d 1×1"]}
    far = {"type": "b2", "ops": {}, "count": 2, "layers": ["attention", "linear"]}
    [pair] = pair_motifs([a], [far, b], "x", "y")
    assert pair["b"]["type"] == "b1" and pair["difference"] == "y has conv2d 1×1 more"
    chain = {**a, "_edges": {(i, i + 1) for i in range(5)}}  # two instances of the block, one after the other
    shifted = {**a, "type": "b3", "layers": ["relu", "conv2d 3×3", "batch_norm"], "_edges": {(0, 1), (1, 2)}}
    assert pair_motifs([chain], [shifted])[0]["same_block"]
    skipped = {**shifted, "_edges": {(0, 1), (1, 2), (0, 2)}}
    [pair] = pair_motifs([chain], [skipped])
    assert not pair["same_block"] and "connected differently" in pair["difference"] and "_edges" not in pair["b"]


# motifs that list the same operations on both sides are paired, with what differs (issue 43:
# compared by their layers in order, not marked as a look-alike)
def test_compare_explains_motifs_that_look_alike():
    import io
    from types import SimpleNamespace

    from narcli.cli.common import console
    from narcli.cli.render_search import print_comparison

    side = SimpleNamespace(name="a", params=1, macs=1, depth=1, nodes=1)
    from narcli.search.compare import pair_motifs

    only_a = [{"type": "1", "ops": {"conv2d": 2, "relu": 2}, "count": 3, "layers": ["conv2d", "conv2d", "relu", "relu"]}]
    only_b = [{"type": "2", "ops": {"conv2d": 2, "relu": 2}, "count": 4, "layers": ["conv2d", "relu", "conv2d", "relu"]},
              {"type": "3", "ops": {"add": 1}, "count": 1, "layers": ["add"]}]
    paired = pair_motifs(only_a, only_b, "a", "b")
    c = SimpleNamespace(a=side, b=SimpleNamespace(**{**side.__dict__, "name": "b"}), op_difference=[], cosine=0.9,
                        same_architecture=False, motifs_shared=[], motifs_paired=paired, motifs_only_a=[],
                        motifs_only_b=[only_b[1]])
    out = io.StringIO()
    print_comparison(console(file=out, width=200), c)
    text = out.getvalue()
    assert "conv2d×2 relu×2 ×3 ~ conv2d×2 relu×2 ×4: the same layers in another order" in text
    assert "only in b: add ×1" in text
