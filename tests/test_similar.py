"""`nar similar` on the bundled zoo and on model files; the family prediction (of cached
neighbours too, design confidence); structured performance in `--json`; bad input."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import mlp_source, run_nar


def similar_json(cli, *args):
    result = cli("similar", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["results"]


def test_similar_resnet50_puts_the_resnet_family_first(cli):
    result = cli("similar", "resnet50")
    assert result.exit_code == 0, result.output
    first_lines = result.stdout.splitlines()[:3]
    assert any("family resnet" in line for line in first_lines), result.stdout
    [found] = similar_json(cli, "resnet50")
    neighbours = found["neighbours"]
    assert len(neighbours) == 10
    cosines = [n["cosine"] for n in neighbours]
    assert cosines == sorted(cosines, reverse=True) and all(-1 <= c <= 1.0001 for c in cosines)
    assert all(n["graph_hash"] != found["query"]["graph_hash"] for n in neighbours)  # not itself
    assert "torchvision/resnet50" in found["identical"]
    families = [n["family"] for n in neighbours]
    assert sum(f in ("resnet", "resnext") for f in families) >= 8, families
    assert found["prediction"]["coarse"] == "convolutional"


def test_cosine_order_is_plain_cosine_and_family_order_brings_the_family_forward(cli):
    [plain] = similar_json(cli, "resnext50_32x4d", "--order", "cosine")
    cosines = [n["cosine"] for n in plain["neighbours"]]
    assert cosines == sorted(cosines, reverse=True)
    assert plain["order"] == "cosine" and plain["reordered"] is False
    [ranked] = similar_json(cli, "resnext50_32x4d")
    assert ranked["order"] == "family"
    own = [sum(n["family"] == "resnext" for n in r["neighbours"]) for r in (plain, ranked)]
    assert own[1] > own[0], own  # resnets a hair closer give way to the query's own family
    assert ranked["reordered"] is True
    for fam in {n["family"] for n in ranked["neighbours"]}:  # inside a family, cosine order
        same = [n["cosine"] for n in ranked["neighbours"] if n["family"] == fam]
        assert same == sorted(same, reverse=True)
    text = " ".join(cli("similar", "resnext50_32x4d").stdout.split())
    assert "nearest 2 first (a near tie by family vote) unless your model's graph renames their family, then by family vote and cosine (--order cosine: cosine alone)" in text
    assert "family vote" not in " ".join(cli("similar", "resnext50_32x4d", "--order", "cosine").stdout.split())


def test_similar_on_a_zoo_name_does_not_import_torch():
    probe = ("import sys\nfrom narcli.cli.app import app\n"
             "try:\n    app(['similar', 'resnet50', '-k', '3'])\nexcept SystemExit as exc:\n    assert not exc.code\n"
             "print('torch imported:', 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "torch imported: False" in out


def test_filters_keep_only_matching_neighbours(cli):
    [found] = similar_json(cli, "resnet50", "--family", "vit", "-k", "3")
    assert [n["family"] for n in found["neighbours"]] == ["vit"] * 3
    [found] = similar_json(cli, "resnet50", "--source", "torchvision", "-k", "5")
    assert all(n["source"] == "torchvision" for n in found["neighbours"]) and len(found["neighbours"]) == 5


def test_a_transformer_is_called_a_transformer(cli):
    [found] = similar_json(cli, "vit_base_patch16_224", "-k", "5")
    assert found["prediction"]["coarse"] == "transformer"
    assert sum(n["family"] in ("vit", "deit") for n in found["neighbours"]) >= 3


def test_a_file_copy_of_a_zoo_model_is_found_at_cosine_one_and_cached(cli, write):
    fixture = Path(__file__).parent / "fixtures" / "resnet50.py"  # hand-written, no torchvision needed
    path = write("copy.py", fixture.read_text())
    [found] = similar_json(cli, str(path), "-k", "3")
    top = found["neighbours"][0]
    assert top["cosine"] > 0.999 and top["family"] == "resnet"
    assert not found["prediction"]["novel"] and found["prediction"]["family"] is not None
    # the second time the embedding comes from the cache, and torch is not imported
    probe = ("import sys\nfrom narcli.cli.app import app\n"
             f"try:\n    app(['similar', {str(path)!r}, '-k', '3'])\nexcept SystemExit as exc:\n    assert not exc.code\n"
             "print('torch imported:', 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "torch imported: False" in out


def test_a_files_guessed_input_is_shown_beside_its_figures_and_in_json(cli, write):
    from tests.test_inputs import CIFAR_ADAPTIVE

    path = write("cifar_net.py", CIFAR_ADAPTIVE)
    [found] = similar_json(cli, str(path), "-k", "2")
    assert found["query"]["inputs"] == [{"shape": [1, 3, 32, 32], "dtype": "float32"}]
    assert "CIFAR-sized" in found["query"]["assumed"]
    result = cli("similar", str(path), "-k", "2")
    assert result.exit_code == 0, result.output
    assert "input float32[1,3,32,32], assumed: image" in " ".join(result.stdout.split())
    # an input given is not an assumption: no line
    given = cli("similar", str(path), "-k", "2", "--input-shape", "1,3,64,64")
    assert given.exit_code == 0 and "assumed" not in given.stdout
    [found] = similar_json(cli, str(path), "-k", "2", "--input-shape", "1,3,64,64")
    assert found["query"]["assumed"] is None and found["query"]["inputs"][0]["shape"] == [1, 3, 64, 64]


def test_a_new_file_is_embedded_where_it_is_traced(write):
    """The tracing process embeds the graph (it has torch loaded); the caller never imports torch,
    and the embedding is the one the encoder gives the cached graph."""
    fixture = Path(__file__).parent / "fixtures" / "resnet50.py"
    path = write("fresh_copy.py", fixture.read_text())
    probe = ("import sys\nfrom narcli.search.query import file_queries\n"
             f"[q] = file_queries(__import__('pathlib').Path({str(path)!r}))\n"
             "print('torch imported:', 'torch' in sys.modules)\nprint('key:', q.graph_key)\n"
             "print('vector:', ','.join(map(repr, q.vector.tolist())))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "torch imported: False" in out
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    from_child = np.array([float(v) for v in fields["vector"].split(",")], dtype=np.float32)
    from narcli.encode.embedder import Embedder
    from narcli.scan.cache import Cache

    [direct] = Embedder().embed([Cache().graph(fields["key"])])
    assert np.allclose(from_child, direct.vector, atol=1e-5)


def test_a_scanned_model_is_found_among_your_models(cli, write):
    mlp = mlp_source(16, 32, 4)
    first, second = write("first.py", mlp), write("second.py", mlp + "\n# a copy under another name\n")
    similar_json(cli, str(first), "-i", "1,16")
    [found] = similar_json(cli, str(second), "-i", "1,16", "--source", "cache")
    assert [n["name"] for n in found["neighbours"]] == ["first.py:Net"]
    assert found["neighbours"][0]["cosine"] > 0.999
    assert found["prediction"]["family"] == "mlp"  # the zoo's textbook MLPs (the classics source)
    [again] = similar_json(cli, "cache:first.py", "-k", "2")
    assert again["query"]["name"] == "first.py:Net"


def test_a_model_cached_by_nar_scan_is_usable_as_cache_name_and_exact_case_wins(cli, write):
    upper = write("upper.py", mlp_source(16, 32, 4).replace("class Net", "class NET").replace("Net", "NET"))
    lower = write("lower.py", mlp_source(8, 8, 2))
    assert cli("scan", upper, "-i", "1,16").exit_code == 0
    assert cli("scan", lower, "-i", "1,8").exit_code == 0
    [found] = similar_json(cli, "cache:NET", "-k", "2")  # embedded now, on first use
    assert found["query"]["name"] == "upper.py:NET" and found["query"]["params"] == 16 * 32 + 32 + 32 * 4 + 4
    [found] = similar_json(cli, "cache:Net", "-k", "2")
    assert found["query"]["name"] == "lower.py:Net"
    result = cli("similar", "cache:net")  # no exact match, and two regardless of case
    assert result.exit_code == 2 and "ambiguous" in result.output


@pytest.mark.parametrize("args, message", [
    (["resnt"], "did you mean resnet"),
    (["resnet1"], "is ambiguous"),
    (["resnet50", "-k", "0"], "-k must be between 1 and 1000"),
    (["resnet50", "-k", "100000"], "-k must be between 1 and 1000"),
    (["resnet50", "--family", "resnt"], "no zoo model has family 'resnt'; did you mean resnet"),
    (["resnet50", "--task", "juggling"], "no zoo model has task 'juggling'"),
    (["cache:nothing"], "no cached model 'nothing'"),
    (["resnet50", "--order", "size"], "unknown order 'size'; use family or cosine"),
])
def test_bad_input_gets_one_clear_line(cli, args, message):
    result = cli("similar", *args)
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) <= 2


def test_a_file_that_fails_to_scan_reports_the_scan_error(cli, write):
    path = write("broken.py", "import torch\nraise ValueError('boom at import')\n")
    result = cli("similar", str(path))
    assert result.exit_code != 0 and "boom at import" in result.output and "Traceback" not in result.output


@pytest.mark.slow  # ~100 s here (the whole zoo's index built three times); damaged index files: test_cache.py's stores
def test_a_damaged_index_is_rebuilt(cli, tmp_path, monkeypatch):
    import shutil

    from narcli.search.neighbours import zoo_index
    from narcli.zoo.store import BUNDLED

    copy = tmp_path / "zoo.db"
    shutil.copy(BUNDLED, copy)
    monkeypatch.setenv("NAR_ZOO", str(copy))
    index = zoo_index()
    assert index.path.parent.name == "index" and len(index) > 2000
    before = [key for key, _ in index.query(index.vector(0), 5)]
    ann = index.path.with_name(index.meta["ann"])
    data = bytearray(ann.read_bytes())
    data[100:200] = bytes(100)
    ann.write_bytes(bytes(data))  # same size, different bytes
    rebuilt = zoo_index()
    assert [key for key, _ in rebuilt.query(rebuilt.vector(0), 5)] == before
    index.path.write_text("{not json")
    assert [key for key, _ in zoo_index().query(rebuilt.vector(0), 5)] == before


def test_similar_runs_end_to_end_in_a_fresh_process():
    done = run_nar("similar", "resnet50", "-k", "3")
    assert done.returncode == 0, done.stderr
    assert "resnet" in done.stdout


def test_family_vote_and_novelty():
    from narcli.search.family import predict_family, vote

    shares = vote(["a", "a", "b"], [0.99, 0.98, 0.97])
    assert shares["a"] > shares["b"] and abs(sum(shares.values()) - 1) < 1e-9
    known = predict_family({"family": [["a", 0.6], ["b", 0.4]], "coarse": [["mlp", 1.0]]},
                           [("a", "mlp", 0.99), ("b", "mlp", 0.98)], threshold=0.9)
    assert known.family == "a" and not known.novel and known.coarse == "mlp"
    new = predict_family(None, [("a", "mlp", 0.5)], threshold=0.9)
    assert new.novel and new.family is None and new.nearest_cosine == 0.5


def test_novelty_calibration_keeps_95_percent_of_known_queries():
    from narcli.search.family import calibrate_novelty

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((20, 16))
    vectors = np.concatenate([c + 0.1 * rng.standard_normal((5, 16)) for c in centres])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    families = [str(i // 5) for i in range(100)]
    result = calibrate_novelty(vectors, families, list(range(100)))
    assert result["known_kept"] >= 0.95 and result["new_flagged"] > 0.9
    assert result["known_queries"] == 100 and result["method"] == "leave-one-out"


def test_novelty_calibration_leaves_each_query_out_of_its_own_candidates():
    from narcli.search.family import DEFAULT_NOVELTY_COSINE, calibrate_novelty

    # two families of two far-apart members each: were a query its own candidate, every nearest
    # cosine would be 1.0 and the threshold 1.0
    vectors = np.array([[1.0, 0, 0, 0], [0.6, 0.8, 0, 0], [0, 0, 1.0, 0], [0, 0, 0.6, 0.8]])
    result = calibrate_novelty(vectors, ["a", "a", "b", "b"], [0, 1, 2, 3])
    assert result["novelty_threshold"] == 0.6 and result["known_kept"] == 1.0
    assert result["new_flagged"] == 1.0  # with its family gone, the nearest is at cosine 0
    # a family of one is no known query: nothing else has its family
    alone = calibrate_novelty(np.vstack([vectors, [[0.6, 0, 0.8, 0]]]), ["a", "a", "b", "b", "c"], [0, 1, 2, 3, 4])
    assert alone["known_queries"] == 4
    # no family with two members: nothing to calibrate on, the default threshold
    none = calibrate_novelty(vectors[:2], ["a", "b"], [0, 1])
    assert none["novelty_threshold"] == DEFAULT_NOVELTY_COSINE and none["known_queries"] == 0


def test_novelty_calibration_edits_a_few_members_of_every_family_and_none_of_a_family_of_one():
    from types import SimpleNamespace

    from narcli.search.neighbours import _members

    items = [SimpleNamespace(family=f) for f in ["vit"] * 9 + ["tcn"] * 2 + ["kan"]]
    chosen = _members(items, list(range(12)), 4, seed=0)
    assert sum(items[i].family == "vit" for i in chosen) == 4 and {9, 10} <= set(chosen) and 11 not in chosen
    assert chosen == _members(items, list(range(12)), 4, seed=0)  # a seed draws the same members
    assert any(_members(items, list(range(12)), 4, seed=s) != chosen for s in range(1, 6))


def test_novelty_calibration_reports_the_kept_share_of_copies_the_encoder_never_saw_on_its_own():
    from narcli.search.family import calibrate_novelty

    eye = np.eye(6)
    # families a, b, c: two rows each, on their own axes
    vectors = np.array([eye[0], 0.8 * eye[0] + 0.6 * eye[1], eye[2], 0.8 * eye[2] + 0.6 * eye[3],
                        eye[4], 0.8 * eye[4] + 0.6 * eye[5]])
    near_a1 = 0.9 * vectors[1] + np.sqrt(1 - 0.81) * eye[5]  # a copy of a0 at cosine 0.9 to a1
    far = 0.2 * eye[0] + np.sqrt(0.96) * eye[5]  # a copy of a1 rewritten out of shape: 0.59 at best (to c1)
    copies = np.array([near_a1] * 99 + [far] + [0.9 * vectors[3] + np.sqrt(0.19) * eye[1]] * 2
                      + [0.9 * vectors[5] + np.sqrt(0.19) * eye[1]] * 2)
    copies /= np.linalg.norm(copies, axis=1, keepdims=True)
    made_from = [0] * 99 + [1] + [2, 2, 4, 4]
    result = calibrate_novelty(vectors, list("aabbcc"), list(range(6)), (copies, made_from), unseen={1})
    # a's one far copy weighs 1/300 of the whole: below the 1 % tail, so it alone is not kept
    assert result["rewritten_kept"] == round(103 / 104, 4)
    assert result["unseen_rewritten_kept"] == 0.0
    seen = calibrate_novelty(vectors, list("aabbcc"), list(range(6)), (copies, made_from), unseen={2})
    assert seen["unseen_rewritten_kept"] == 1.0 and seen["novelty_threshold"] == result["novelty_threshold"]


def test_family_balanced_quantile_lets_no_family_outvote_the_others():
    from narcli.search.family import family_balanced_quantile

    # one family queried 98 times at cosine 0.95, two families once each at 0.40 and 0.60
    values = [(0.95, "smp-unet")] * 98 + [(0.40, "tcn"), (0.60, "vae")]
    assert family_balanced_quantile(values, 0.01) == 0.40  # each family weighs a third
    assert float(np.quantile([v for v, _ in values], 0.01)) > 0.40  # counted by query, the big one decides
    assert family_balanced_quantile(values, 0.5) == 0.60
    assert family_balanced_quantile([(0.7, "a")] * 3, 0.01) == 0.7


def test_novelty_threshold_is_not_set_by_one_family_repeated_many_times():
    from narcli.search.family import calibrate_novelty

    rng = np.random.default_rng(2)
    # a tight family repeated 200 times (a decoder over many encoders) and 10 loose families of 5
    tight = rng.standard_normal(16) + 0.02 * rng.standard_normal((200, 16))
    loose = np.concatenate([c + 0.4 * rng.standard_normal((5, 16)) for c in rng.standard_normal((10, 16))])
    vectors = np.concatenate([tight, loose])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    families = ["tight"] * 200 + [f"loose{i // 5}" for i in range(50)]
    result = calibrate_novelty(vectors, families, list(range(250)))
    others = [np.delete(np.arange(250), q) for q in range(250)]
    loose_best = [float((vectors[others[q]] @ vectors[q]).max()) for q in range(200, 250)]
    # counted by query, the tight family's 200 would set the 1 % tail; by family, the loose
    # families' own queries are kept: the threshold sits at or below their second lowest
    assert result["novelty_threshold"] <= sorted(loose_best)[1]
    assert result["novelty_threshold"] < float(np.quantile([float((vectors[others[q]] @ vectors[q]).max())
                                                           for q in range(250)], 0.01))


def test_novelty_calibrated_on_rewritten_copies_keeps_them_known():
    from narcli.search.family import calibrate_novelty

    rng = np.random.default_rng(1)
    centres = rng.standard_normal((20, 16))
    vectors = np.concatenate([c + 0.1 * rng.standard_normal((5, 16)) for c in centres])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    families = [str(i // 5) for i in range(100)]
    made_from = list(range(0, 100, 5))
    # rewritten copies sit further from their family than the zoo's own members do
    copies = np.stack([vectors[q] + 0.35 * rng.standard_normal(16) for q in made_from])
    copies /= np.linalg.norm(copies, axis=1, keepdims=True)
    plain = calibrate_novelty(vectors, families, list(range(100)))
    rewritten = calibrate_novelty(vectors, families, list(range(100)), (copies, made_from), unseen={0, 5})
    assert rewritten["novelty_threshold"] < plain["novelty_threshold"]
    assert rewritten["rewritten_kept"] >= 0.95 and rewritten["rewritten_queries"] == len(made_from)
    assert rewritten["known_kept"] == 1.0
    # the kept share of the copies made from rows 0 and 5 alone, each searched without its own row
    reached = [float(np.delete(vectors, q, axis=0).dot(copies[j]).max()) >= rewritten["novelty_threshold"]
               for j, q in enumerate(made_from) if q in (0, 5)]
    assert rewritten["unseen_rewritten_kept"] == sum(reached) / 2
    assert "unseen_rewritten_kept" not in plain



def test_independent_nearest_searches_only_the_rows_no_source_of_the_querys_own_lists():
    from narcli.search.family import independent_nearest

    eye = np.eye(4)
    vectors = np.array([eye[0], 0.99 * eye[0] + np.sqrt(1 - 0.99 ** 2) * eye[1],  # two timm ResNets
                        0.6 * eye[0] + 0.8 * eye[2],  # MONAI's ResNet, written otherwise
                        eye[3]])  # a family only one source lists
    families = ["resnet", "resnet", "resnet", "tcn"]
    sources = [frozenset({"timm"}), frozenset({"timm", "torchvision"}), frozenset({"monai"}), frozenset({"classics"})]
    found = dict(independent_nearest(vectors, families, sources))
    assert set(found) == {0, 1, 2}  # the tcn has no other library's version
    assert found[0] == pytest.approx(0.6)  # not 0.99: timm's other ResNet shares its source
    assert found[2] == pytest.approx(max(0.6, 0.6 * 0.99))  # the best of the rows no MONAI source lists
    # one library's family has no independent version; nor has a row no other row is apart from
    assert independent_nearest(vectors[:2], families[:2], [frozenset({"timm"})] * 2) == []
    assert independent_nearest(vectors[:2], families[:2], sources[:2]) == []
    # torchvision lists only a graph timm lists too: with another family's row from another
    # library beside them, the ResNets still have no independent version (not a family-removed search)
    shared = [frozenset({"timm"}), frozenset({"timm", "torchvision"}), frozenset({"classics"})]
    assert independent_nearest(vectors[[0, 1, 3]], ["resnet", "resnet", "tcn"], shared) == []
    # a row no source lists is neither a query nor another library's version
    unlisted = [frozenset({"timm"}), frozenset(), frozenset({"monai"}), frozenset({"classics"})]
    assert 1 not in dict(independent_nearest(vectors, families, unlisted))
    assert dict(independent_nearest(vectors, families, unlisted))[2] == pytest.approx(0.6)  # row 0 only


def test_novelty_threshold_keeps_designs_another_library_wrote_for_the_families_that_have_them():
    from narcli.search.family import calibrate_novelty, independent_nearest

    rng = np.random.default_rng(3)
    centres = rng.standard_normal((20, 16))
    vectors = np.concatenate([c + 0.1 * rng.standard_normal((5, 16)) for c in centres])
    # family 0's fifth member is another library's version of it, written far from the other four
    vectors[4] = centres[0] + 0.9 * rng.standard_normal(16)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    families = [str(i // 5) for i in range(100)]
    sources = [frozenset({"monai" if i == 4 else "timm"}) for i in range(100)]
    plain = calibrate_novelty(vectors, families, list(range(100)))
    with_sources = calibrate_novelty(vectors, families, list(range(100)), sources=sources)
    cosines = vectors @ vectors.T
    other = float(cosines[4, :4].max())  # MONAI's version against timm's family 0 ...
    assert other < plain["novelty_threshold"]  # ... which the copies-only threshold calls new
    assert with_sources["independent_queries"] == 5 and with_sources["independent_families"] == 1
    assert with_sources["novelty_threshold"] <= other < plain["novelty_threshold"]
    found = [cosine for _, cosine in independent_nearest(vectors, families, sources)]
    assert with_sources["independent_kept"] == np.mean([c >= with_sources["novelty_threshold"] for c in found]) >= 0.8
    assert np.mean([c >= plain["novelty_threshold"] for c in found]) < with_sources["independent_kept"]
    assert "independent_queries" not in plain



def test_a_few_families_rewritten_by_other_libraries_still_keep_95_percent_of_their_rewrites():
    # pooled with two hundred families' tight rows, two families' far rewrites are 1 % of the weight:
    # the pooled 1 % tail sat above nearly all of them (at 0.597, 91.5 % of the zoo's were kept)
    from narcli.search.family import INDEPENDENT_KEPT, calibrate_novelty, family_balanced_share, independent_nearest

    rng = np.random.default_rng(5)
    centres = rng.standard_normal((200, 16))
    vectors, families, sources = [], [], []
    for f, centre in enumerate(centres):
        for member in range(4 if f < 2 else 3):
            far = f < 2 and member == 3  # another library's version of families 0 and 1
            vectors.append(centre + (0.9 if far else 0.05) * rng.standard_normal(16))
            families.append(str(f))
            sources.append(frozenset({"monai" if far else "timm"}))
    vectors = np.array(vectors) / np.linalg.norm(vectors, axis=1, keepdims=True)
    result = calibrate_novelty(vectors, families, list(range(len(families))), sources=sources)
    found = [(cosine, families[row]) for row, cosine in independent_nearest(vectors, families, sources)]
    assert family_balanced_share(found, result["pooled_threshold"]) < INDEPENDENT_KEPT  # the pooled tail alone
    assert result["novelty_threshold"] < result["pooled_threshold"]
    assert result["independent_kept"] >= INDEPENDENT_KEPT


def test_a_new_design_says_which_family_its_far_neighbours_lean_to():
    from narcli.search.family import predict_family
    from narcli.search.text import prediction_line

    far = predict_family(None, [("nerf", "mlp", 0.61), ("nerf", "mlp", 0.60), ("mlp", "mlp", 0.58)], 0.637)
    assert far.novel and far.alternatives[0][0] == "nerf"
    line = prediction_line(far)
    assert "no close family" in line and "below 0.637" in line
    assert "lean to nerf (" in line  # a far rewrite of a NeRF reads as new, but the user is told
    lonely = predict_family(None, [], 0.637)  # nothing to lean to: no such clause
    assert lonely.novel and "lean to" not in prediction_line(lonely)
    head_only = predict_family({"family": [["vae", 0.9]]}, [], 0.637)  # the head alone is no neighbours' lean
    assert head_only.novel and head_only.alternatives and "lean to" not in prediction_line(head_only)


# -- issue 43: what the walk-through found ---------------------------------------------------------
TINY_GPT = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=1000, d=64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(64, d)
        self.blocks = nn.Sequential(Block(d), Block(d))
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        return self.head(self.blocks(self.tok(idx) + self.pos(torch.arange(idx.shape[1]))))
"""


def test_a_zoo_models_own_label_wins_over_a_twin_of_another_family(cli):
    """hf/big_bird is hf/bert's graph with a longer position table: cosine 1.000, another hash."""
    [found] = similar_json(cli, "bert")
    assert found["query"]["name"] == "hf/bert"
    assert found["prediction"]["family"] == "bert", found["prediction"]
    assert "hf/big_bird" in found["twins"] and "hf/big_bird" not in found["identical"]
    text = cli("similar", "bert").stdout
    assert "same layers, other sizes (cosine ≥ 0.9995): hf/big_bird" in " ".join(text.split())


def test_parameter_counts_in_billions_read_b():
    from narcli.search.text import human, human_params

    assert human_params(6_720_158_976) == "6.72 B" and human(833e9) == "833 G" and human_params(25.6e6) == "25.6 M"
    done = run_nar("similar", "llama", "-k", "1")
    assert done.returncode == 0, done.stderr
    assert "hf/llama (zoo, 6.61 B params, 833 G MACs)" in done.stdout


def _similar_text(target, width):
    import io

    from rich.console import Console

    from narcli.cli.render_search import print_similar
    from narcli.search.similar import find_similar

    console = Console(width=width, file=io.StringIO(), color_system=None)
    print_similar(console, find_similar(target, 10))
    return console.file.getvalue().splitlines()


def test_the_similar_table_gives_family_its_width_and_cuts_the_name():
    lines = _similar_text("resnet50", 80)
    header = next(line for line in lines if line.lstrip().startswith("#"))
    rows = lines[lines.index(header) + 1:lines.index(header) + 11]
    assert all(len(line) <= 80 for line in lines)
    assert all(" resnet " in row for row in rows), rows  # never `resn…`
    assert header.split()[:3] == ["#", "name", "family"] and "cosine" in header and "MACs" in header
    wide = _similar_text("resnet50", 150)
    assert any("image-classification" in line for line in wide)  # task in full on a wide terminal
    narrow_bert = _similar_text("bert", 80)
    assert any(" visual_bert " in line for line in narrow_bert)


def test_task_heads_fold_into_one_row_led_by_the_querys_task():
    from narcli.search.similar import Neighbour, fold_heads, task_distance

    def head(name, task, cosine):
        return Neighbour(name, "zoo", "gpt2", "transformer", task, "transformers", cosine, 1, 1, name)

    rows = [head("hf/gpt2/token-classification", "token-classification", 0.84),
            head("hf/gpt2/causal-lm", "causal-lm", 0.81), head("hf/gpt2", "feature-extraction", 0.80),
            head("hf/bert/masked-lm", "masked-lm", 0.79), head("hf/opt", "feature-extraction", 0.75)]
    folded = fold_heads(rows, "causal-lm")
    assert [n.name for n in folded] == ["hf/gpt2/causal-lm", "hf/bert/masked-lm", "hf/opt"]
    assert set(folded[0].heads) == {"hf/gpt2/token-classification", "hf/gpt2"}
    assert fold_heads(rows, None)[0].name == "hf/gpt2/token-classification"  # no task: the nearest
    assert task_distance("masked-lm", "causal-lm") == 1 and task_distance("causal-lm", "causal-lm") == 0


def test_a_tiny_gpts_nearest_is_a_causal_lm(cli, write):
    path = write("tiny_gpt.py", TINY_GPT)
    [found] = similar_json(cli, str(path), "--source", "transformers", "-k", "5")
    zoo = [n for n in found["neighbours"] if n["kind"] == "zoo"]
    assert zoo[0]["task"] == "causal-lm", [(n["name"], n["task"]) for n in zoo]
    models = [n["name"].removesuffix("/" + n["task"]) for n in zoo]
    assert len(models) == len(set(models))  # one row per model, its other heads folded in


# a cached neighbour's family is the one the same graph gets as a query, with no unexplained "(x?)"
def test_a_cached_neighbour_has_the_family_it_gets_as_a_query(cli, write, tmp_path):
    import json
    from pathlib import Path

    models = Path(__file__).with_name("models.py").read_text()
    first = write("mine/my_resnet.py", models)
    second = tmp_path / "theirs" / "their_resnet.py"
    second.parent.mkdir()
    second.write_text(models + "\n# my own copy\n")  # other bytes (its own cache entry), the same graph
    alone = json.loads(cli("similar", first, "--model", "SmallResNet", "-k", "3", "--json").stdout)
    expected = alone["results"][0]["prediction"]["family"] or "new"
    result = json.loads(cli("similar", second, "--model", "SmallResNet", "-k", "3", "--json").stdout)
    [cached] = [n for n in result["results"][0]["neighbours"] if n["source"] == "cache"]
    assert cached["cosine"] > 0.999 and cached["family"] == expected
    assert "?" not in cached["family"]


# no design confidence without a design
def test_no_design_means_no_design_confidence():
    from narcli.search.family import predict_family

    novel = predict_family(None, [("resnet", "convolutional", 0.1)], threshold=0.7).to_json()
    assert novel["design"] is None and novel["design_confidence"] is None


# `performance` in `--json` is fields (value, interval, unit, device), not a sentence
def test_performance_in_json_is_structured(cli, write):
    import json

    result = cli("similar", "resnet50", "-k", "1", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"][0]["performance"]
    assert [r["kind"] for r in rows] == ["accuracy", "latency", "throughput"]
    for row in rows:
        assert isinstance(row["value"], float) and row["low"] <= row["value"] <= row["high"], row
        assert row["unit"] and row["what"]
    assert rows[0]["unit"] == "%" and rows[1]["device"] and rows[1]["unit"] == "ms"
    text = cli("similar", "resnet50", "-k", "1")
    assert f"top-1 {rows[0]['value']:.1f} %" in text.stdout  # the text line reads the same rows
    scanned = cli("scan", write("tiny.py", mlp_source(4, 8, 2)), "--json")
    assert json.loads(scanned.stdout)["models"][0]["performance"] == []  # none applies to an MLP


class _FakeIndex:
    """Cosines by query vector: the plain spelling finds a RegNet first, the ImageNet stem a ResNet."""

    meta: dict = {}  # no calibration, no known decoders

    def __init__(self, answers):
        self.answers = answers

    def query(self, vector, n):
        return self.answers[float(vector[0])][:n]


def test_the_zoo_graph_a_file_rebuilds_exactly_comes_first_and_votes_first():
    """A hand-written BERT whose canonical graph is hf/bert's was shown below BigBird: traced at
    another sequence length, the two vectors of one graph sat at the same cosine as a near twin."""
    from narcli.search.similar import Neighbour, fold_heads, same_graph_first, votes

    class Index:
        keys = ["bigbird", "bert", "far"]
        stored = {"bigbird": np.array([1.0, 0.0]), "bert": np.array([0.6, 0.8]), "far": np.array([0.0, 1.0])}

        def position(self, key):
            return self.keys.index(key) if key in self.keys else None

        def vector(self, position):
            return self.stored[self.keys[position]]

    nearest = [("bigbird", 0.9753), ("bert", 0.9751), ("far", 0.5)]
    assert same_graph_first(Index(), [np.array([1.0, 0.0])], nearest, "bert") == \
        [("bert", 0.9751), ("bigbird", 0.9753), ("far", 0.5)]  # its own cosine, shown as measured
    assert same_graph_first(Index(), [np.array([1.0, 0.0])], nearest, None) == nearest
    assert same_graph_first(Index(), [np.array([1.0, 0.0])], nearest, "not-in-the-zoo") == nearest
    # beyond the nearest asked for, it is still found and put in front, the list keeping its length
    assert same_graph_first(Index(), [np.array([1.0, 0.0])], nearest[:1] + nearest[2:], "bert") == \
        [("bert", pytest.approx(0.6)), ("bigbird", 0.9753)]

    class Model:
        def __init__(self, family):
            self.family, self.coarse = family, "transformer"

    models = {"bigbird": [Model("big_bird")], "bert": [Model("bert")]}
    first = same_graph_first(Index(), [np.array([1.0, 0.0])], nearest, "bert")
    vote_on = votes(first, models, "bert")
    assert vote_on[0][0] == "bert" and vote_on[0][2] > max(c for _, _, c in vote_on[1:])
    assert [c for _, _, c in votes(nearest, models)] == [0.9753, 0.9751]  # no graph of its own: as measured
    # its family wins over many near twins of another, and it is never called new
    from narcli.search.family import predict_family

    crowd = {**{f"bigbird{i}": [Model("big_bird")] for i in range(6)}, "bert": [Model("bert")]}
    found = [("bert", 0.61)] + [(f"bigbird{i}", 0.63) for i in range(6)]
    assert predict_family(None, votes(found, crowd, "bert"), 0.66).family == "bert"
    assert predict_family(None, votes(found, crowd), 0.66).novel  # the same rows, not the query's own graph

    def row(name, cosine, graph_hash):
        return Neighbour(name, "zoo", "x", "transformer", "feature-extraction", "transformers", cosine, 1, 1, graph_hash)

    rows = [row("hf/big_bird", 0.9753, "bigbird"), row("hf/bert", 0.9751, "bert")]
    assert [n.name for n in fold_heads(rows, None, "bert")] == ["hf/bert", "hf/big_bird"]
    mine = Neighbour("copy.py:Bert", "cache", "bert", "transformer", "", "cache", 0.9752, 1, 1, "bert")
    assert [n.name for n in fold_heads(rows + [mine], None, "bert")][:2] == ["hf/bert", "hf/big_bird"]  # zoo rows only
    assert [n.name for n in fold_heads(rows, None)] == ["hf/big_bird", "hf/bert"]


def test_a_cifar_stem_query_takes_each_graph_at_the_better_of_its_two_spellings():
    from narcli.search.query import STEM_KEY, Query
    from narcli.search.similar import nearest_either_stem

    index = _FakeIndex({1.0: [("regnet", 0.954), ("resnet", 0.942), ("vgg", 0.80)],
                        2.0: [("resnet", 0.996), ("regnet", 0.915), ("densenet", 0.90)]})
    plain = Query("q", "file", "h", np.array([1.0], np.float32), {"family": []}, [])
    assert nearest_either_stem(index, plain, 3) == [("regnet", 0.954), ("resnet", 0.942), ("vgg", 0.80)]
    both = Query("q", "file", "h", np.array([1.0], np.float32), {"family": [], STEM_KEY: [2.0]}, [])
    assert nearest_either_stem(index, both, 3) == [("resnet", 0.996), ("regnet", 0.954), ("densenet", 0.90)]


def test_a_cached_cifar_stem_scan_gets_the_family_nar_similar_gives_it():
    """The browser's family column took a scanned CIFAR ResNeXt's plain spelling alone (regnet)
    while `nar similar` searched both spellings (resnext)."""
    from types import SimpleNamespace

    from narcli.search.query import STEM_KEY
    from narcli.search.similar import _cached_family

    class Users:
        keys = ["mine"]

        def vector(self, position):
            return np.array([1.0], np.float32)

    index = _FakeIndex({1.0: [("regnet", 0.954), ("regnet2", 0.95), ("resnet", 0.942)],
                        2.0: [("resnet", 0.996), ("resnet2", 0.99), ("regnet", 0.915)]})
    index.position = lambda key: None  # the scan's graph is no zoo graph
    zoo = SimpleNamespace(models_by_hash=lambda hashes: {  # graph "resnet2" is a second ResNet
        h: [SimpleNamespace(family=h.rstrip("2"), coarse="convolutional" if h.startswith("resnet") else "hybrid")]
        for h in hashes})
    plain = {"graph_hash": "h", "prediction": {"family": []}}
    both = {"graph_hash": "h", "prediction": {"family": [], STEM_KEY: [2.0]}}
    assert _cached_family("mine", Users(), index, zoo, plain, 0.6) == "regnet"
    assert _cached_family("mine", Users(), index, zoo, both, 0.6) == "resnet"
    from narcli.search.similar import _cached_prediction

    # the browser's coarse column reads the same prediction (the regnets here are "hybrid")
    assert _cached_prediction("mine", Users(), index, zoo, both, 0.6).coarse == "convolutional"
    assert _cached_prediction("mine", Users(), index, zoo, plain, 0.6).coarse == "hybrid"


def test_only_a_query_with_a_cifar_stem_gets_a_second_spelling():
    from narcli.encode.augment import EDITS
    from narcli.search.query import STEM_KEY, embed_with_stem
    from tests.test_augment import imagenet_stem_net

    class Embedder:
        def embed(self, graphs):
            from narcli.encode.embedder import Embedding

            return [Embedding(np.full(2, float(len(g.nodes)), np.float32), {}, []) for g in graphs]

    imagenet = imagenet_stem_net()
    cifar = EDITS["no_stem_pool"](EDITS["cifar_stem"](imagenet, __import__("random").Random(0)), None)
    plain, respelled = embed_with_stem(Embedder(), [imagenet, cifar])
    assert plain.prediction[STEM_KEY] == []  # looked at: no second spelling
    assert respelled.prediction[STEM_KEY] == [float(len(imagenet.nodes))] * 2  # the pool is back
    assert respelled.vector[0] == len(cifar.nodes)


def test_a_query_cached_before_the_second_spelling_gets_it_and_others_are_only_marked(tmp_path, monkeypatch):
    from narcli.search import query as q
    from narcli.search.query import STEM_KEY
    from tests.test_augment import imagenet_stem_net
    from narcli.encode.augment import EDITS

    imagenet = imagenet_stem_net()
    cifar = EDITS["no_stem_pool"](EDITS["cifar_stem"](imagenet, __import__("random").Random(0)), None)

    class Cache:
        def __init__(self, graph):
            self.stored = graph

        def graph(self, key):
            return self.stored

    class Record:
        graph_key = "k"

    old = {"vector": b"", "prediction": {"family": [["resnet", 0.9]]}, "motifs": []}
    assert q._with_stem_checked(Cache(cifar), Record(), old) is None  # embed again: it has a CIFAR stem
    marked = q._with_stem_checked(Cache(imagenet), Record(), old)
    assert marked["prediction"] == {"family": [["resnet", 0.9]], STEM_KEY: [], "decoder": {}} and STEM_KEY not in old["prediction"]
    assert q._with_stem_checked(Cache(cifar), Record(), marked) is marked  # looked at before: left alone


def test_a_cache_name_query_stored_before_the_second_spelling_is_embedded_again(monkeypatch):
    """`cache:NAME` reads the stored embedding itself: one from before the second spelling is
    embedded again when its graph has a CIFAR stem (and stored where its record is still cached);
    one without a CIFAR stem is only marked; a marked one is used as it is."""
    from types import SimpleNamespace

    import numpy as np

    from narcli.encode.augment import EDITS
    from narcli.search import query as q
    from narcli.search.query import STEM_KEY
    from tests.test_augment import imagenet_stem_net

    imagenet = imagenet_stem_net()
    cifar = EDITS["no_stem_pool"](EDITS["cifar_stem"](imagenet, __import__("random").Random(0)), None)

    class Embedder:
        def embed(self, graphs):
            return [SimpleNamespace(vector=np.full(2, float(len(g.nodes)), np.float32), prediction={}, motifs=[])
                    for g in graphs]

    monkeypatch.setattr(q, "_embedder", Embedder)

    class Cache:
        def __init__(self, graph, records):
            self.stored, self.kept, self.saved = graph, records, []

        def graph(self, key):
            return self.stored

        def record(self, model_id):
            return next((r for r in self.kept if r.id == model_id), None)

        def store_embedding(self, record, encoder, vector, prediction, motifs):
            self.saved.append((record.id, prediction))

    old = {"model_id": "m1", "graph_key": "k", "vector": b"\0" * 8, "prediction": {"family": []}, "motifs": []}
    cache = Cache(cifar, [SimpleNamespace(id="m1")])
    again = q._stem_checked_entry(cache, old, "enc")
    assert again["prediction"][STEM_KEY] == [float(len(imagenet.nodes))] * 2
    assert np.frombuffer(again["vector"], dtype=np.float32)[0] == len(cifar.nodes)
    assert [record for record, _ in cache.saved] == ["m1"]
    gone = Cache(cifar, [])  # its record is gone: embedded for this search, nothing stored
    assert q._stem_checked_entry(gone, old, "enc")["prediction"][STEM_KEY] and gone.saved == []
    plain = Cache(imagenet, [SimpleNamespace(id="m1")])
    marked = q._stem_checked_entry(plain, old, "enc")
    assert marked["prediction"][STEM_KEY] == [] and marked["vector"] == old["vector"] and plain.saved == []
    assert q._stem_checked_entry(Cache(cifar, []), marked, "enc") is marked


def test_a_filtered_search_takes_each_graph_at_the_better_of_the_querys_vectors():
    from types import SimpleNamespace

    from narcli.search.similar import _filtered

    class Index:
        keys = ["resnet", "regnet", "vgg"]

        def vectors(self, positions):
            return np.eye(3, dtype=np.float32)[positions]

    class Zoo:
        def models(self, **filters):
            return [SimpleNamespace(graph_hash=h) for h in ("resnet", "regnet")]

    plain = np.array([0.2, 1.0, 0.0], np.float32)  # nearest the RegNet
    respelled = np.array([1.0, 0.1, 0.0], np.float32)  # nearest the ResNet
    found = _filtered(Index(), [plain, respelled], Zoo(), "x", None, None, 5, None)
    assert [k for k, _ in found] == ["resnet", "regnet"]
    assert found[0][1] == pytest.approx(1.0 / np.linalg.norm(respelled))
    assert [k for k, _ in _filtered(Index(), [plain], Zoo(), "x", None, None, 5, None)] == ["regnet", "resnet"]


def test_a_cached_prediction_from_before_decoders_gets_its_graph_decoder_read_as_the_embedder_reads_it():
    """Scans cached before decoder signatures are named by their decoder too, as a query and as a
    neighbour or browser row (`_cached_prediction`): the signature comes from the cached graph,
    after the idiom rules, without torch."""
    from narcli.graph.decoder import decoder_signature
    from narcli.graph.idioms import normalise_idioms
    from narcli.search.query import with_decoder
    from tests.test_composite import nested

    graph = nested("unet++", "plain")

    class Cache:
        def __init__(self, stored):
            self.stored = stored

        def graph(self, key):
            return self.stored

    old = {"family": [["unet", 0.9]]}
    filled = with_decoder(old, "k", Cache(graph))
    assert filled["decoder"] == decoder_signature(normalise_idioms(graph)) and filled["decoder"]["cat3"] == 2
    assert "decoder" not in old  # the stored entry itself is not changed here
    assert with_decoder(filled, "k", Cache(None)) is filled  # read before: as it is
    assert with_decoder(old, "k", Cache(None)) is old  # its graph is gone: as it is
    assert with_decoder(old, "", Cache(graph)) is old and with_decoder(None, "k", Cache(graph)) is None


def test_the_browser_reads_an_old_cached_decoder_once_and_stores_it_back(write, cli, monkeypatch):
    """`cached_families` (the browser's table) filled an old prediction's decoder from its graph at
    every start and never kept it."""
    from tests.conftest import mlp_source

    from narcli.scan.cache import Cache
    from narcli.search.query import DECODER_KEY, current_encoder
    from narcli.search.similar import cached_families

    path = write("mine.py", mlp_source(12, 32, 3))
    assert cli("similar", path, "--model", "Net", "-i", "1,12").exit_code == 0
    encoder = current_encoder()
    [entry] = Cache().embeddings(encoder)
    assert DECODER_KEY in entry["prediction"]
    old = {k: v for k, v in entry["prediction"].items() if k != DECODER_KEY}  # as cached before decoders
    Cache().update_prediction(entry["graph_key"], encoder, old)
    assert DECODER_KEY not in Cache().embeddings(encoder)[0]["prediction"]

    reads = []
    graph = Cache.graph
    monkeypatch.setattr(Cache, "graph", lambda self, key: reads.append(key) or graph(self, key))
    first = cached_families()
    assert reads == [entry["graph_key"]]
    assert Cache().embeddings(encoder)[0]["prediction"] == old | {DECODER_KEY: entry["prediction"][DECODER_KEY]}
    assert cached_families() == first and len(reads) == 1  # the second start reads no graph


def test_an_old_cached_decoder_that_cannot_be_stored_back_still_names_the_family(monkeypatch):
    from narcli.errors import CacheError
    from narcli.search.query import DECODER_KEY, with_decoder
    from tests.test_composite import nested

    graph = nested("unet++", "plain")

    class ReadOnly:
        def graph(self, key):
            return graph

        def update_prediction(self, *args):
            raise CacheError("cache /home/x/cache.db cannot be written: read-only file system")

    class Denied(ReadOnly):
        def update_prediction(self, *args):
            raise PermissionError(13, "Permission denied")

    for cache in (ReadOnly(), Denied()):
        filled = with_decoder({"family": []}, "k", cache, "encoder-id")
        assert filled[DECODER_KEY]["cat3"] == 2


def test_a_search_stores_back_the_decoder_of_an_old_cached_neighbour(write, cli):
    """A cached scan from before decoders, met as another search's neighbour, gets its decoder read
    from its graph and stored, as the browser does (`cached_families`)."""
    from tests.conftest import mlp_source

    from narcli.scan.cache import Cache
    from narcli.search.query import DECODER_KEY, current_encoder

    mine = write("mine.py", mlp_source(12, 32, 3))
    assert cli("similar", mine, "--model", "Net", "-i", "1,12").exit_code == 0
    encoder = current_encoder()
    [entry] = Cache().embeddings(encoder)
    old = {k: v for k, v in entry["prediction"].items() if k != DECODER_KEY}
    Cache().update_prediction(entry["graph_key"], encoder, old)

    other = write("other.py", mlp_source(12, 33, 3))
    result = cli("similar", other, "--model", "Net", "-i", "1,12", "--source", "cache")
    assert result.exit_code == 0 and "mine.py" in result.stdout  # the old scan is a neighbour
    stored = {e["graph_key"]: e["prediction"] for e in Cache().embeddings(encoder)}
    assert stored[entry["graph_key"]] == old | {DECODER_KEY: entry["prediction"][DECODER_KEY]}


def test_a_zoo_model_own_graph_leads_the_vote_but_its_cosine_is_said_as_at_most_one(cli):
    # its own label votes a hair above 1 (`_ahead_of`); `--json` said "nearest_cosine": 1.001
    from narcli.search.family import predict_family

    own = predict_family(None, [("a", "mlp", 1.001), ("b", "mlp", 0.97)], threshold=0.9)
    assert own.family == "a" and own.nearest_cosine == 1.0
    out = cli("similar", "resnet50", "--json")
    assert out.exit_code == 0, out.output
    (result,) = json.loads(out.stdout)["results"]
    assert result["prediction"]["family"] == "resnet" and result["prediction"]["nearest_cosine"] == 1.0


def test_the_query_own_graph_stays_first_whatever_the_second_stage_or_a_near_tie_says():
    from narcli.search.similar import Neighbour, family_ordered

    def row(name: str, family: str, cosine: float, graph_hash: str) -> Neighbour:
        return Neighbour(name, "zoo", family, "transformer", "", "zoo", cosine, 1, 1, graph_hash)

    # the file is the zoo's own graph traced at another length: its row sits first at a lower cosine,
    # and two rows of a family the vote prefers are within the tie band of it
    rows = [row("own", "deit", 0.9990, "h0"), row("twin", "vit", 0.9995, "h1"), row("other", "vit", 0.9992, "h2"),
            row("far", "deit", 0.90, "h3")]
    shares = {"vit": 0.9, "deit": 0.1}
    assert [n.name for n in family_ordered(rows, shares, None, True)][0] == "own"
    # nor does a family the query's graph renames move it
    assert [n.name for n in family_ordered(rows, shares, {"deit": "vit"}, True)][0] == "own"
    # without a graph of its own the same rows are the stage's to order: the tie goes to the vote
    assert [n.name for n in family_ordered(rows, shares, None, False)][0] == "twin"
