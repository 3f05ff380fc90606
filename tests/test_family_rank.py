"""The search's second stage: candidates re-ordered by their family's share of the nearest ten's vote."""

from __future__ import annotations

import numpy as np
import pytest

from narcli.encode.evaluation import retrieval_metrics
from narcli.encode.family_rank import KEEP_NEAREST, family_order, renamed_away, rerank_rows, vote


def test_the_vote_weighs_closer_voters_more():
    shares = vote(["a", "b", "b"], [0.99, 0.95, 0.94], temperature=0.02)
    assert shares["a"] > shares["b"] and abs(sum(shares.values()) - 1) < 1e-9
    assert vote([], []) == {}


def test_the_voted_family_comes_first_each_family_in_cosine_order():
    cosines = [0.95, 0.94, 0.93, 0.92, 0.91]
    labels = ["regnet", "resnet", "regnet", "resnet", "resnet"]
    shares = {"resnet": 0.7, "regnet": 0.3}
    assert family_order(cosines, labels, shares, weight=1.0, keep=0) == [1, 3, 4, 0, 2]
    assert family_order(cosines, labels, shares, weight=0.0, keep=0) == [0, 1, 2, 3, 4]  # weight 0: cosine order
    assert family_order(cosines, labels, {}, weight=1.0, keep=0) == [0, 1, 2, 3, 4]  # no vote: cosine order
    # a small weight only swaps candidates whose cosines are close
    assert family_order([0.95, 0.949, 0.80], ["regnet", "resnet", "resnet"], shares, weight=0.01, keep=0) == [1, 0, 2]
    # as shipped, the nearest KEEP_NEAREST stay in front
    assert family_order(cosines, labels, shares)[:KEEP_NEAREST] == list(range(KEEP_NEAREST))


def test_the_nearest_kept_stay_in_front_in_cosine_order():
    cosines = [0.95, 0.94, 0.93, 0.92, 0.91]
    labels = ["regnet", "resnet", "regnet", "resnet", "resnet"]
    shares = {"resnet": 0.7, "regnet": 0.3}
    assert family_order(cosines, labels, shares, weight=1.0, keep=1) == [0, 1, 3, 4, 2]
    assert family_order(cosines, labels, shares, weight=1.0, keep=2) == [0, 1, 3, 4, 2]
    assert family_order(cosines, labels, shares, weight=1.0, keep=3) == [0, 1, 2, 3, 4]
    assert family_order(cosines, labels, shares, weight=1.0, keep=9) == [0, 1, 2, 3, 4]  # more than there are
    assert family_order([], [], shares, weight=1.0, keep=1) == []


GROUPED = {"resnet": "resnext"}  # a query with grouped bottlenecks (`zoo.labels.block_names`)


def test_among_the_nearest_kept_the_family_the_query_blocks_name_leads():
    # a CIFAR ResNeXt: a plain ResNet a hair nearer than a ResNeXt
    assert family_order([0.959, 0.956, 0.95], ["resnet", "resnext", "regnet"], {"resnext": 1.0}, weight=0.5,
                        keep=2, blocks=GROUPED) == [1, 0, 2]
    # two plain ResNets nearest, the ResNeXts further: the renamed ResNets leave the front, so the
    # family the blocks name comes first (the shares are already renamed: none left for "resnet")
    assert family_order([0.967, 0.963, 0.95, 0.94], ["resnet", "resnet", "resnext", "resnext"], {"resnext": 1.0},
                        weight=0.5, keep=2, blocks=GROUPED) == [2, 3, 0, 1]
    se = {"resnet": "senet", "resnext": "senet"}
    assert family_order([0.97, 0.96, 0.95], ["resnext", "resnet", "senet"], {"senet": 1.0}, weight=0.5,
                        keep=2, blocks=se) == [2, 0, 1]  # both renamed families step behind


def test_only_a_family_the_query_renames_leaves_the_front():
    assert renamed_away("resnet", GROUPED) and not renamed_away("resnext", GROUPED)
    assert not renamed_away("regnet", GROUPED)  # a family the blocks say nothing of keeps its place
    assert not renamed_away("resnet", {}) and not renamed_away("resnet", None)  # plain blocks
    # a family renamed to itself (a decoder family the vote already named) stays
    assert not renamed_away("unet", {"fpn": "unet", "unet": "unet"})
    assert family_order([0.96, 0.95, 0.94], ["regnet", "resnet", "resnext"], {"resnext": 1.0}, keep=2,
                        blocks=GROUPED) == [0, 2, 1]  # the RegNet stays nearest; the ResNet is re-ordered
    # with weight 0 (cosine order, as `--order cosine`), nothing moves
    assert family_order([0.96, 0.95], ["resnet", "resnext"], {}, weight=0.0, keep=2, blocks=GROUPED) == [0, 1]
    assert family_order([0.96, 0.95], ["resnet", "resnext"], {}, keep=2, blocks={}) == [0, 1]


def test_evaluation_reads_each_query_blocks_as_the_search_does():
    # query 0 (a ResNeXt) has a plain ResNet nearest, then a ResNeXt
    z = np.array([[1.0, 0.0], [0.999, 0.04], [0.99, 0.14], [0.0, 1.0]], np.float32)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    labels = ["resnext", "resnet", "resnext", "vit"]
    plain = retrieval_metrics(z, labels, [0], ks=(2,), rerank=0.5)
    named = retrieval_metrics(z, labels, [0], ks=(2,), rerank=0.5, blocks=[GROUPED])
    assert plain["MRR@2"] == 0.5 and named["MRR@2"] == 1.0
    with_none = retrieval_metrics(z, labels, [0], ks=(2,), rerank=0.5, blocks=[{}])
    assert with_none == plain
    with pytest.raises(ValueError, match="2 block renamings for 1 queries"):
        retrieval_metrics(z, labels, [0], ks=(2,), rerank=0.5, blocks=[GROUPED, GROUPED])


@pytest.mark.parametrize("keep", [-1, 1.5, 5.0, True, "1"])
def test_a_bad_keep_is_refused(keep):
    with pytest.raises(ValueError, match="cosine order"):
        family_order([0.9], ["a"], {"a": 1.0}, weight=1.0, keep=keep)
    with pytest.raises(ValueError, match="cosine order"):  # before any row is looked at, whatever the weight
        rerank_rows(np.array([[0]]), np.array([[-np.inf]]), np.array(["a"]), weight=0.0, keep=keep)
    assert family_order([0.9, 0.8], ["a", "b"], {"b": 1.0}, weight=1.0, keep=np.int64(1)) == [0, 1]


@pytest.mark.parametrize("weight", [-0.1, float("nan"), float("inf"), "1"])
def test_a_bad_weight_is_refused(weight):
    with pytest.raises(ValueError, match="re-rank weight"):
        family_order([0.9], ["a"], {"a": 1.0}, weight=weight)


def test_rows_are_reordered_by_their_own_vote_and_unreachable_rows_stay_last():
    labels = np.array(["a", "b", "a", "b"])
    order = np.array([[1, 0, 2, 3], [0, 1, 3, 2]])
    sims = np.array([[0.9, 0.89, 0.5, -np.inf], [0.9, 0.8, 0.7, 0.6]])
    out = rerank_rows(order, sims, labels, weight=1.0, voters=2, keep=0)
    assert out[0].tolist() == [1, 0, 2, 3]  # b voted most (nearest), then a; the masked row stays last
    assert out[1].tolist() == [0, 2, 1, 3]
    assert rerank_rows(order, sims, labels, weight=0.0) is order
    kept = rerank_rows(order, sims, labels, weight=1.0, voters=2, keep=1)
    assert kept[1].tolist() == [0, 2, 1, 3]  # the nearest was already of the voted family
    # the unreachable row stays last even when more are kept than can be reached
    assert rerank_rows(order, sims, labels, weight=1.0, voters=2, keep=4)[0].tolist() == [1, 0, 2, 3]


def test_the_second_stage_lifts_map_when_a_family_is_interleaved_with_another():
    # query 0 (family a): cosine order interleaves family b between a's members
    z = np.array([[1.0, 0.0], [0.99, 0.14], [0.98, 0.2], [0.97, 0.24], [0.96, 0.28], [0.0, 1.0]], np.float32)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    labels = ["a", "a", "b", "a", "b", "a"]
    plain = retrieval_metrics(z, labels, [0], ks=(3,))
    reranked = retrieval_metrics(z, labels, [0], ks=(3,), rerank=1.0, keep=0)
    assert reranked["MAP@3"] > plain["MAP@3"] and reranked["MRR@3"] == plain["MRR@3"] == 1.0
    assert retrieval_metrics(z, labels, [0], ks=(3,), rerank=0.0) == plain


def test_keeping_the_nearest_first_keeps_a_right_first_hit_the_vote_would_bury():
    # query 0 (family a): its nearest is a, but the next voters are b, which win the vote
    # three b voters a little behind the nearest a (further than the tie band: no tie)
    angles = np.arccos([1.0, 0.99, 0.985, 0.984, 0.983, 0.5])
    z = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    labels = ["a", "a", "b", "b", "b", "a"]
    voted = retrieval_metrics(z, labels, [0], ks=(2,), rerank=1.0, keep=0)
    kept = retrieval_metrics(z, labels, [0], ks=(2,), rerank=1.0, keep=1)
    assert voted["MRR@2"] == 0.0 and kept["MRR@2"] == 1.0


def test_the_query_own_label_never_votes():
    # the query is family c, alone; its own row must not pull c candidates (there are none) or vote
    z = np.eye(3, dtype=np.float32)
    z[1] = [0.9, 0.43, 0]
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    m = retrieval_metrics(z, ["c", "c", "d"], [0], ks=(2,), rerank=1.0, keep=0)
    assert m["MRR@2"] == 1.0 and m["queries"] == 1


def test_the_order_help_names_how_many_nearest_stay_in_front():
    # the help text is written out (importing numpy for `nar --help` would slow every command);
    # this keeps it true when KEEP_NEAREST changes
    import typer.main

    from narcli.cli.app import app

    similar = typer.main.get_command(app).commands["similar"]
    order = next(p for p in similar.params if p.name == "order")
    assert f"the {KEEP_NEAREST} nearest, then" in order.help


def test_the_vote_temperature_reaches_the_second_stage():
    # one near voter of a against two a little farther of b: a cold vote follows the nearest, a warm
    # one counts heads; rerank_rows and retrieval_metrics pass the temperature down to the vote
    labels = np.array(["a", "b", "b"])
    order = np.array([[0, 1, 2]])
    sims = np.array([[0.9, 0.88, 0.87]])
    cold = rerank_rows(order, sims, labels, weight=1.0, voters=3, keep=0, temperature=0.005)
    warm = rerank_rows(order, sims, labels, weight=1.0, voters=3, keep=0, temperature=1.0)
    assert cold[0].tolist() == [0, 1, 2] and warm[0].tolist() == [1, 2, 0]
    z = np.array([[1.0, 0.0], [0.9, 0.436], [0.88, 0.475], [0.87, 0.493]], np.float32)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    names = ["b", "a", "b", "b"]  # the query is family b: only the warm vote puts a b first
    assert retrieval_metrics(z, names, [0], ks=(1,), rerank=1.0, keep=0, vote_temperature=1.0)["MRR@1"] == 1.0
    assert retrieval_metrics(z, names, [0], ks=(1,), rerank=1.0, keep=0, vote_temperature=0.005)["MRR@1"] == 0.0


def test_a_near_tie_in_front_is_broken_by_the_vote_only_inside_the_band():
    # a ViT whose nearest is a NaFlexViT a hair nearer than the ViTs the vote names
    cosines, labels = [0.9984, 0.9982, 0.99, 0.5], ["naflexvit", "vit", "vit", "x"]
    shares = {"vit": 0.8, "naflexvit": 0.2}
    assert family_order(cosines, labels, shares, weight=0.5, keep=2, tie_band=None) == [0, 1, 2, 3]
    assert family_order(cosines, labels, shares, weight=0.5, keep=2, tie_band=0.001) == [1, 0, 2, 3]
    assert family_order(cosines, labels, shares, weight=0.5, keep=2, tie_band=0.0) == [0, 1, 2, 3]  # not a tie
    # a candidate outside the front but inside the band joins the tie: it is as near as the nearest
    assert family_order([0.9984, 0.9983, 0.9982, 0.9], ["naflexvit", "naflexvit", "vit", "vit"], shares,
                        weight=0.5, keep=2, tie_band=0.001) == [2, 0, 1, 3]
    # an exact tie (two names for one graph) is broken by the vote at band 0; weight 0 keeps cosine order
    assert family_order([1.0, 1.0, 0.9], ["deit", "vit", "vit"], shares, weight=0.5, keep=2, tie_band=0.0) == [1, 0, 2]
    assert family_order([1.0, 1.0, 0.9], ["deit", "vit", "vit"], shares, weight=0.0, keep=2, tie_band=0.0) == [0, 1, 2]


def test_a_family_the_query_renames_takes_no_part_in_a_tie():
    # the renamed ResNet is inside the band; were it tied, it would come second
    assert family_order([0.96, 0.9599, 0.90], ["resnet", "resnext", "resnext"], {"resnext": 1.0}, weight=0.5,
                        keep=2, blocks=GROUPED, tie_band=0.01) == [1, 2, 0]
    assert family_order([0.96, 0.9599, 0.90], ["resnet", "resnext", "resnext"], {"resnext": 1.0}, weight=0.5,
                        keep=2, tie_band=0.01) == [1, 0, 2]


@pytest.mark.parametrize("band", [-0.001, float("nan"), "0.1"])
def test_a_bad_tie_band_is_refused(band):
    with pytest.raises(ValueError, match="tie band"):
        family_order([0.9], ["a"], {"a": 1.0}, weight=1.0, tie_band=band)
    with pytest.raises(ValueError, match="tie band"):
        retrieval_metrics(np.eye(2, dtype=np.float32), ["a", "a"], [0], ks=(1,), rerank=0.5, tie_band=band)


def test_rows_and_metrics_break_a_near_tie_by_the_vote_as_the_search_does():
    # query 0 (family a): a b row a hair nearer than the a rows the vote names
    angles = np.arccos([1.0, 0.9995, 0.9990, 0.98, 0.97, 0.2])
    z = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    labels = ["a", "b", "a", "a", "a", "b"]
    untied = retrieval_metrics(z, labels, [0], ks=(1,), rerank=0.5, keep=2, tie_band=None)
    tied = retrieval_metrics(z, labels, [0], ks=(1,), rerank=0.5, keep=2, tie_band=0.001)
    assert untied["MRR@1"] == 0.0 and tied["MRR@1"] == 1.0
    order = np.array([[1, 2, 3, 4, 5]])
    sims = (z[[0]] @ z[order[0]].T)
    rows = rerank_rows(order, sims, np.array(labels), weight=0.5, keep=2, tie_band=0.001)
    assert rows[0].tolist()[:2] == [2, 1]
    assert rerank_rows(order, sims, np.array(labels), weight=0.5, keep=2, tie_band=None)[0].tolist()[:2] == [1, 2]
