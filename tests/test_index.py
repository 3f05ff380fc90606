"""Indexes: annoy over projected search vectors, re-ranked on the full ones; agreement with brute
force, int8 rows for large indexes, atomic rebuilds."""

import json
from pathlib import Path

import numpy as np
import pytest

from narcli.search import index as index_module
from narcli.search.index import IndexError_, VectorIndex, build_index
from narcli.zoo.store import Zoo


def unit_vectors(count, dim=16, seed=0):
    v = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def clustered_vectors(count, dim, seed=0):
    """Unit vectors around count // 20 random centres: neighbours that mean something."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, count // 20), dim)).astype(np.float32)
    v = centres[rng.integers(0, len(centres), count)] + 0.5 * rng.standard_normal((count, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def brute_force_recall(index, vectors, queries, k=10):
    hits = 0
    for q in queries:
        exact = {f"k{i}" for i in np.argsort(-(vectors @ vectors[q]))[:k]}
        hits += len(exact & {key for key, _ in index.query(vectors[q], k)})
    return hits / (k * len(queries))


def test_query_scores_are_exact_cosines_and_match_brute_force(tmp_path):
    vectors = unit_vectors(500)
    index = build_index(tmp_path / "i.json", [f"k{i}" for i in range(500)], vectors)
    hits = 0
    for q in range(0, 500, 10):
        found = index.query(vectors[q], 10)
        exact = np.argsort(-(vectors @ vectors[q]))[:10]
        hits += len({f"k{i}" for i in exact} & {k for k, _ in found})
        for key, cosine in found:
            assert cosine == pytest.approx(float(vectors[int(key[1:])] @ vectors[q]), abs=1e-5)
    assert hits / 500 >= 0.99


def test_the_bundled_zoo_index_agrees_with_brute_force():
    from narcli.search.neighbours import zoo_index

    index = zoo_index()
    vectors = np.stack([index.vector(i) for i in range(len(index))])
    position = {key: i for i, key in enumerate(index.keys)}
    hits = 0
    queries = range(0, len(index), 7)
    for q in queries:
        exact = set(np.argsort(-(vectors @ vectors[q]))[:10].tolist())
        hits += len(exact & {position[k] for k, _ in index.query(vectors[q], 10)})
    assert hits / (10 * len(queries)) >= 0.99


def test_the_bundled_index_is_current_with_the_bundled_zoo():
    from narcli.search.neighbours import BUNDLED_INDEX
    from narcli.zoo.store import BUNDLED, Zoo

    with Zoo([BUNDLED]) as zoo:
        assert VectorIndex(BUNDLED_INDEX).meta["fingerprint"] == zoo.embedding_fingerprint()


def test_the_bundled_index_knows_the_zoo_decoder_families():
    """The decoders a query's decoder is compared with are stored with the index, in the form a
    search accepts (`graph.decoder.known_decoders`)."""
    from narcli.graph.decoder import known_decoders
    from narcli.search.neighbours import BUNDLED_INDEX

    meta = VectorIndex(BUNDLED_INDEX).meta
    assert known_decoders(meta) == meta["decoders"]
    assert {"unet", "unet++", "fpn", "deeplabv3", "linknet"} <= set(meta["decoders"])
    assert any(s.get("cat3") for s in meta["decoders"]["unet++"])  # nested skips
    assert not any(s.get("cat3") for s in meta["decoders"]["linknet"])  # LinkNet adds its skips
    # families no source builds over a backbone keep their decoders apart: an Attention U-Net's skips
    # pass gates (sigmoid, multiply); a classifier never upsamples, so it has none
    others = known_decoders(meta, "other_decoders")
    assert others == meta["other_decoders"] and not set(others) & set(meta["decoders"])
    assert all(s.get("gate") and s.get("mul") for s in others["attention-unet"])
    assert {"vnet", "vae"} <= set(others) and "resnet" not in others


def test_a_rebuild_replaces_the_index_and_removes_the_old_file(tmp_path):
    path = tmp_path / "i.json"
    first = build_index(path, ["a", "b"], unit_vectors(2))
    old_ann = path.with_name(first.meta["ann"])
    second = build_index(path, ["a", "b", "c"], unit_vectors(3, seed=1))
    old_vec = path.with_name(first.meta["vec"])
    assert len(VectorIndex(path)) == 3 and not old_ann.exists() and not old_vec.exists()
    assert path.with_name(second.meta["ann"]).exists() and path.with_name(second.meta["vec"]).exists()
    assert not list(tmp_path.glob("*.tmp"))


def test_missing_damaged_or_truncated_indexes_are_refused(tmp_path):
    with pytest.raises(IndexError_, match="missing"):
        VectorIndex(tmp_path / "none.json")
    path = tmp_path / "i.json"
    index = build_index(path, ["a", "b"], unit_vectors(2))
    ann = path.with_name(index.meta["ann"])
    ann.write_bytes(ann.read_bytes()[:-8])
    with pytest.raises(IndexError_, match="damaged"):
        VectorIndex(path)
    path.write_text(json.dumps({"format": index_module.FORMAT}))
    with pytest.raises(IndexError_, match="damaged"):
        VectorIndex(path)
    path.write_text(json.dumps({"format": 1, "ann": ann.name}))  # an index from before search vectors
    with pytest.raises(IndexError_, match="another version of nar; rebuild it"):
        VectorIndex(path)
    vec = path.with_name(index.meta["vec"])
    build_index(path, ["a", "b"], unit_vectors(2))
    vec.write_bytes(b"")  # a truncated vector file is caught on opening, before any number is read
    with pytest.raises(IndexError_, match="damaged or incomplete"):
        VectorIndex(path)


def test_long_vectors_are_searched_on_their_principal_axes_and_re_ranked_in_full(tmp_path):
    vectors = clustered_vectors(3000, 256)
    index = build_index(tmp_path / "i.json", [f"k{i}" for i in range(3000)], vectors)
    assert index.meta["search_dim"] == index_module.SEARCH_DIM and index.meta["rows_dtype"] == "float32"
    assert brute_force_recall(index, vectors, range(0, 3000, 30)) >= 0.97
    key, cosine = index.query(vectors[5], 1)[0]
    assert key == "k5" and cosine == pytest.approx(1.0, abs=1e-5)
    assert np.allclose(index.vector(7), vectors[7], atol=1e-6)


def test_large_indexes_keep_int8_rows_whose_cosines_stay_within_a_thousandth(tmp_path, monkeypatch):
    monkeypatch.setattr(index_module, "FLOAT_ROWS_MAX_BYTES", 1024)
    vectors = clustered_vectors(2000, 256, seed=3)
    index = build_index(tmp_path / "i.json", [f"k{i}" for i in range(2000)], vectors)
    assert index.meta["rows_dtype"] == "int8"
    # per row: the 64-d search vector in float16 and 256 int8 residuals, against 1 KB of float32
    assert index.meta["vec_bytes"] < vectors.nbytes / 2
    assert brute_force_recall(index, vectors, range(0, 2000, 20)) >= 0.95
    for key, cosine in index.query(vectors[11], 10):
        assert cosine == pytest.approx(float(vectors[int(key[1:])] @ vectors[11]), abs=1e-3)


def test_index_info_says_the_bundled_index_is_current(cli):
    result = cli("index", "info", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows[0]["kind"] == "zoo" and rows[0]["status"] == "ok" and rows[0]["current"] is True


@pytest.fixture(scope="module")
def small_embedded_zoo(tmp_path_factory):
    """A zoo of the fake sources' models, embedded: `nar index build` over it takes seconds where the
    bundled zoo's novelty calibration takes minutes."""
    from narcli.encode.zoo_embed import embed_zoo
    from narcli.zoo import plugins
    from narcli.zoo.build import BuildOptions, build_zoo
    from tests import fake_source

    db = tmp_path_factory.mktemp("zoo") / "zoo.db"
    plugins.register(fake_source, name="fake-zoo")
    try:
        build_zoo(BuildOptions(db=db, sources=["fake", "other"], patterns=["mlp_*", "cnn_*", "resnet*"], jobs=2,
                               timeout=60))
    finally:
        plugins.unregister("fake-zoo")
    embed_zoo(db, jobs=1)
    return db


def test_index_build_writes_a_current_zoo_index_under_nar_home(cli, small_embedded_zoo, monkeypatch):
    monkeypatch.setenv("NAR_ZOO", str(small_embedded_zoo))
    result = cli("index", "info", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["current"] is False  # nothing built for this zoo yet
    result = cli("index", "build", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows[0]["current"] is False  # the shipped index is of the shipped zoo, and stays
    [zoo_row] = [r for r in rows if r["kind"] == "zoo" and "nar-home" in r["path"]]
    assert zoo_row["status"] == "ok" and zoo_row["current"] is True
    with Zoo() as zoo:
        assert zoo_row["items"] == len(VectorIndex(Path(zoo_row["path"]))) == len({m.graph_hash for m in zoo.models()})
    result = cli("similar", "fk/cnn_tiny", "-k", "2", "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.slow  # ~200 s: the bundled zoo's novelty calibration featurises and embeds 2,600 edited copies
def test_index_build_over_the_bundled_zoo(cli):
    result = cli("index", "build", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    [zoo_row] = [r for r in rows if r["kind"] == "zoo" and "nar-home" in r["path"]]
    assert zoo_row["status"] == "ok" and zoo_row["current"] is True and zoo_row["items"] > 3000


def _rebuild_and_read(path: str, seed: int, rounds: int, failures) -> None:
    """One of several processes sharing an index: rebuild it, then read and query it, `rounds` times."""
    for r in range(rounds):
        vectors = unit_vectors(40, seed=seed * 1000 + r)
        build_index(Path(path), [f"p{seed}-{i}" for i in range(40)], vectors, trees=4)
        try:
            index = VectorIndex(Path(path))
            assert len(index.query(vectors[0], 3)) == 3
        except Exception as exc:  # noqa: BLE001 - counted, then asserted on by the test
            failures.put(f"{type(exc).__name__}: {exc}")


def test_concurrent_rebuilds_never_pull_a_file_from_under_a_reader(tmp_path):
    """Eight processes rebuild and read one index at once: no reader sees its annoy file vanish,
    and no old generation is left behind."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    failures = ctx.Queue()
    path = tmp_path / "user.json"
    workers = [ctx.Process(target=_rebuild_and_read, args=(str(path), seed, 25, failures)) for seed in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    seen = []
    while not failures.empty():
        seen.append(failures.get())
    assert seen == [] and all(w.exitcode == 0 for w in workers), seen[:3]
    index = VectorIndex(path)
    index.verify()
    assert sorted(p.name for p in tmp_path.glob("*.ann")) == [index.meta["ann"]]
    assert sorted(p.name for p in tmp_path.glob("*.vec")) == [index.meta["vec"]]


def test_an_open_index_survives_its_file_being_replaced(tmp_path):
    vectors = unit_vectors(30)
    build_index(tmp_path / "i.json", [f"k{i}" for i in range(30)], vectors)
    opened = VectorIndex(tmp_path / "i.json")  # named, not loaded yet
    build_index(tmp_path / "i.json", [f"j{i}" for i in range(30)], unit_vectors(30, seed=1))
    assert opened.query(vectors[3], 1)[0][0] == "k3"
