"""Recurrent layers and cells in the canonical graph: one vocabulary op each, MACs as counted by
hand (every weight matrix once per time step), a cell called in a Python loop folded into one node,
the same under every tracer that can trace them."""

import pytest
import torch
from torch import nn

from narcli.graph.canonical import build_graph
from narcli.trace.torch_tracer import TRACERS, trace_module


def traced(model, *inputs, tracers=TRACERS):
    raw, tracer = trace_module(model, list(inputs), tracers)
    return build_graph(raw, {"tracer": tracer})


class Forecaster(nn.Module):
    def __init__(self, cell=nn.LSTM, bidirectional=False):
        super().__init__()
        self.rnn = cell(8, 32, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(32 * (2 if bidirectional else 1), 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class CellLoop(nn.Module):
    def __init__(self, cell=nn.LSTMCell):
        super().__init__()
        self.cell = cell(8, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], 16)
        state = (h, h) if isinstance(self.cell, nn.LSTMCell) else h
        for t in range(x.shape[1]):
            state = self.cell(x[:, t], state)
        return self.head(state[0] if isinstance(state, tuple) else state)


# gates per step: LSTM 4, GRU 3, plain RNN 1; layer 2 reads layer 1's output (× directions)
@pytest.mark.parametrize("cell, gates, op", [(nn.LSTM, 4, "lstm"), (nn.GRU, 3, "gru"), (nn.RNN, 1, "rnn")])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_recurrent_layer_has_hand_counted_macs(cell, gates, op, bidirectional):
    dirs = 2 if bidirectional else 1
    batch, time = 3, 10
    per_step = dirs * (gates * 32 * (8 + 32) + gates * 32 * (32 * dirs + 32))
    head = batch * 4 * 32 * dirs
    graph = traced(Forecaster(cell, bidirectional), torch.randn(batch, time, 8))
    [node] = [n for n in graph.nodes if n.op == op]
    assert node.macs == batch * time * per_step
    assert graph.macs == batch * time * per_step + head
    assert graph.params == sum(p.numel() for p in Forecaster(cell, bidirectional).parameters())


@pytest.mark.parametrize("cell, layer, gates, op", [(nn.LSTMCell, nn.LSTM, 4, "lstm"), (nn.GRUCell, nn.GRU, 3, "gru"),
                                                     (nn.RNNCell, nn.RNN, 1, "rnn")])
def test_a_cell_stepped_over_a_sequence_is_the_recurrent_layer(cell, layer, gates, op):
    """`for t in range(T): h = cell(x[:, t], h)` then a head on `h` is `nn.LSTM` then `out[:, -1]`:
    one node with every step counted, and the same graph as the layer's."""
    batch, time = 2, 7
    graph = traced(CellLoop(cell), torch.randn(batch, time, 8))
    [node] = [n for n in graph.nodes if n.op == op]
    assert node.macs == batch * time * gates * 16 * (8 + 16)
    assert graph.params == sum(p.numel() for p in CellLoop(cell).parameters())  # the weights once

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = layer(8, 16, batch_first=True)
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    assert graph.content_hash() == traced(Layer(), torch.randn(batch, time, 8)).content_hash()


def test_a_cell_fed_its_own_prediction_is_not_folded_into_a_cycle():
    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(4, 16)
            self.out = nn.Linear(16, 4)

        def forward(self, x):
            h, y, outs = x.new_zeros(x.shape[0], 16), x, []
            for _ in range(3):
                h = self.cell(y, h)
                y = self.out(h)
                outs.append(y)
            return torch.stack(outs, 1)

    graph = traced(Decoder(), torch.randn(2, 4))
    assert graph.op_histogram()["gru"] == 3  # unrolled, and still a DAG
    assert sum(n.macs for n in graph.nodes if n.op == "gru") == 3 * 2 * 3 * 16 * (4 + 16)


def test_onnx_recurrent_nodes_have_macs(tmp_path):
    pytest.importorskip("onnxscript")
    from narcli.trace.onnx_tracer import load_onnx, trace_onnx

    path = tmp_path / "gru.onnx"
    model = Forecaster(nn.GRU).eval()
    torch.onnx.export(model, (torch.randn(3, 10, 8),), str(path), dynamo=False)
    graph = build_graph(trace_onnx(load_onnx(path)))
    per_step = 3 * 32 * (8 + 32) + 3 * 32 * (32 + 32)
    assert sum(n.macs for n in graph.nodes if n.op == "gru") == 3 * 10 * per_step


@pytest.mark.parametrize("tracer", TRACERS)
def test_every_tracer_counts_an_lstm_alike(tracer):
    model, x = Forecaster(nn.LSTM), torch.randn(3, 10, 8)
    graph = traced(model, x, tracers=(tracer,))
    [node] = [n for n in graph.nodes if n.op == "lstm"]
    assert node.macs == 3 * 10 * (4 * 32 * (8 + 32) + 4 * 32 * (32 + 32)), tracer


# the coarse class a model's operations allow (issue 32: an LSTM was "convolutional (80 %)")
@pytest.mark.parametrize("ops, ruled_out, kept", [
    ({"linear": 3, "relu": 2}, {"convolutional", "hybrid", "transformer", "recurrent", "graph"}, {"mlp"}),
    ({"lstm": 1, "linear": 1}, {"convolutional", "transformer", "mlp"}, {"recurrent"}),
    ({"conv1d": 8, "relu": 8, "add": 4}, {"hybrid", "transformer", "recurrent"}, {"convolutional"}),
    ({"attention": 4, "linear": 16, "conv2d": 1}, {"recurrent", "graph"}, {"transformer", "hybrid"}),
    ({"gather": 2, "scatter": 2, "linear": 2}, {"convolutional", "recurrent"}, {"graph", "mlp"}),
])
def test_operations_rule_out_coarse_classes(ops, ruled_out, kept):
    from narcli.zoo.labels import possible_coarse

    possible = possible_coarse(ops)
    assert not possible & ruled_out and kept <= possible


def test_the_family_vote_keeps_to_the_possible_coarse_classes():
    from narcli.search.family import predict_family

    head = {"family": [["resnet", 0.6]], "coarse": [["convolutional", 0.9], ["mlp", 0.1]],
            "coarse_possible": ["mlp", "other", "state-space"], "coarse_structure": "mlp"}
    voters = [("resnet", "convolutional", 0.5), ("vit", "transformer", 0.4)]
    predicted = predict_family(head, voters, threshold=0.7)
    assert predicted.coarse == "mlp" and predicted.coarse_confidence == pytest.approx(1.0)
    nothing_possible = {**head, "coarse": [["convolutional", 1.0]]}
    assert predict_family(nothing_possible, voters, threshold=0.7).coarse == "mlp"  # from the structure


def test_an_lstm_file_is_recurrent_and_an_mlp_file_is_mlp(write, cli):
    import json

    lstm = write("forecaster.py", "from torch import nn\n\nclass Forecaster(nn.Module):\n"
                 "    def __init__(self):\n        super().__init__()\n"
                 "        self.rnn = nn.LSTM(8, 64, 2, batch_first=True)\n        self.head = nn.Linear(64, 4)\n\n"
                 "    def forward(self, x):\n        return self.head(self.rnn(x)[0][:, -1])\n")
    result = cli("similar", lstm, "--input-shape", "1,24,8", "-k", "1", "--json")
    assert result.exit_code == 0, result.output
    prediction = json.loads(result.stdout)["results"][0]["prediction"]
    assert prediction["coarse"] == "recurrent"
    [query] = json.loads(cli("scan", lstm, "--input-shape", "1,24,8", "--json").stdout)["models"]
    assert query["macs"] == 24 * (4 * 64 * (8 + 64) + 4 * 64 * (64 + 64)) + 4 * 64
