"""Which zoo models a calibration times: the farthest-point order (`calibration_set.spread_order`)."""

import numpy as np
from narcli.bench.calibration_set import REFERENCE_COLUMN, Candidate, spread_order


def model(name: str, macs: float, coarse: str = "convolutional", ms_per_gmac: float = 10.0) -> Candidate:
    return Candidate(name, int(macs), int(macs / 100), {REFERENCE_COLUMN: ms_per_gmac * macs / 1e9}, np.zeros(0),
                     coarse=coarse)


def test_the_order_starts_at_the_median_model_and_goes_to_the_least_like_it_next():
    found = [model(f"m{i}", 10 ** (8 + i / 4)) for i in range(9)]  # 0.1 to 10 GMACs, one kind
    order = spread_order(found)
    assert sorted(order) == list(range(9))  # every model, once
    assert order[0] == 4  # the median MACs
    assert order[1] in (0, 8) and {order[1], order[2]} == {0, 8}  # then both ends of the range
    assert order[3] not in (3, 4, 5)  # the next fills the widest gap, not beside the start


def test_a_kind_of_model_seen_once_comes_before_near_copies_of_models_already_chosen():
    found = [model(f"conv{i}", 1e9 * (1 + i / 100)) for i in range(6)] + [model("gru", 1e9, coarse="recurrent")]
    order = spread_order(found)
    assert found[order[1]].name == "gru"


def test_extra_features_change_which_models_come_first():
    found = [model(f"m{i}", 1e9) for i in range(4)]  # alike in everything the order sees
    assert spread_order(found)[:2] == [2, 0]  # the middle one, then the first of equals
    shares = np.array([[0.0], [0.0], [0.0], [5.0]])
    assert spread_order(found, shares)[:2] == [2, 3]
