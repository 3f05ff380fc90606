import pytest
from torch import nn

from narcli.errors import UsageError
from narcli.trace.inputs import InputSpec, guess_inputs, parse_inputs


def test_parse_shapes_and_dtypes():
    assert parse_inputs(None, None) is None
    assert parse_inputs(["1,3,224,224"], None) == [InputSpec((1, 3, 224, 224), "float32")]
    assert parse_inputs(["1,128"], ["long"]) == [InputSpec((1, 128), "int64")]
    assert parse_inputs(["1,4", "1,8"], ["float", "long"]) == [InputSpec((1, 4)), InputSpec((1, 8), "int64")]
    assert parse_inputs(["1x3x32x32"], None) == [InputSpec((1, 3, 32, 32))]


@pytest.mark.parametrize("shapes, dtypes", [
    (["1,a"], None), (["0,3"], None), ([""], None), (["1,3"], ["complex7"]), (None, ["long"]),
    (["1", "2", "3"], ["long", "float"]),
])
def test_bad_specs_are_usage_errors(shapes, dtypes):
    with pytest.raises(UsageError):
        parse_inputs(shapes, dtypes)


@pytest.mark.parametrize("layer, shape, dtype, word", [
    (nn.Conv2d(3, 8, 3), (1, 3, 224, 224), "float32", "image"),
    (nn.Conv1d(2, 8, 3), (1, 2, 1024), "float32", "signal"),
    (nn.Conv3d(3, 8, 3), (1, 3, 16, 112, 112), "float32", "video"),
    (nn.Embedding(100, 8), (1, 128), "int64", "token ids"),
    (nn.Linear(20, 8), (1, 20), "float32", "vector"),
    (nn.LSTM(10, 8, batch_first=True), (1, 32, 10), "float32", "sequence"),
])
def test_guess_from_first_layer(layer, shape, dtype, word):
    [spec], why = guess_inputs(nn.Sequential(layer, nn.Identity()))
    assert spec == InputSpec(shape, dtype)
    assert why.startswith(word) and "first layer" in why


def test_guess_fails_clearly_without_a_known_first_layer():
    with pytest.raises(UsageError, match="--input-shape"):
        guess_inputs(nn.Sequential(nn.ReLU()))
