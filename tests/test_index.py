"""Annoy indexes: cosine from angular distance, agreement with brute force, atomic rebuilds."""

import json
from pathlib import Path

import numpy as np
import pytest

from narcli.search.index import IndexError_, VectorIndex, angular_to_cosine, build_index


def unit_vectors(count, dim=16, seed=0):
    v = np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_angular_distance_converts_to_cosine():
    a, b = unit_vectors(2)
    distance = float(np.linalg.norm(a - b))  # annoy's angular distance between unit vectors
    assert angular_to_cosine(distance) == pytest.approx(float(a @ b), abs=1e-6)


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


def test_a_rebuild_replaces_the_index_and_removes_the_old_file(tmp_path):
    path = tmp_path / "i.json"
    first = build_index(path, ["a", "b"], unit_vectors(2))
    old_ann = path.with_name(first.meta["ann"])
    second = build_index(path, ["a", "b", "c"], unit_vectors(3, seed=1))
    assert len(VectorIndex(path)) == 3 and not old_ann.exists() and path.with_name(second.meta["ann"]).exists()
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
    path.write_text(json.dumps({"format": 1}))
    with pytest.raises(IndexError_, match="damaged"):
        VectorIndex(path)


def test_index_info_and_build_commands(cli):
    result = cli("index", "info", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows[0]["kind"] == "zoo" and rows[0]["status"] == "ok" and rows[0]["current"] is True
    result = cli("index", "build", "--json")
    assert result.exit_code == 0, result.output
    assert any(r["path"].endswith(".json") and "nar-home" in r["path"] for r in json.loads(result.stdout))


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


def test_an_open_index_survives_its_file_being_replaced(tmp_path):
    vectors = unit_vectors(30)
    build_index(tmp_path / "i.json", [f"k{i}" for i in range(30)], vectors)
    opened = VectorIndex(tmp_path / "i.json")  # named, not loaded yet
    build_index(tmp_path / "i.json", [f"j{i}" for i in range(30)], unit_vectors(30, seed=1))
    assert opened.query(vectors[3], 1)[0][0] == "k3"
