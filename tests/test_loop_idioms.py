"""A Python loop of parameter-free steps keeps one step, and so does a loop of layers that runs once
per position of an input's axis (`graph/loop_idioms.py`)."""

import json
from dataclasses import replace

import pytest

from narcli.graph.arch_graph import ArchGraph, Node
from narcli.graph.idioms import normalise_idioms
from narcli.graph.loop_idioms import LOOP_READS, MIN_CHAIN, MIN_COPIES, REPEATS, expand_loops, fold_loops
from narcli.graph.structure_idioms import as_run

SAMPLED_POINTS = '''
import torch
from torch import nn

def farthest_points(xyz, count):
    """PointNet++'s sampling: `count` steps of subtract, square, sum, compare, pick."""
    b, n, _ = xyz.shape
    chosen = torch.zeros(b, count, dtype=torch.long)
    distance = torch.full((b, n), 1e10)
    farthest = torch.zeros(b, dtype=torch.long)
    rows = torch.arange(b)
    for i in range(count):
        chosen[:, i] = farthest
        centre = xyz[rows, farthest, :].view(b, 1, 3)
        d = torch.sum((xyz - centre) ** 2, -1)
        distance = torch.minimum(distance, d)
        farthest = torch.max(distance, -1)[1]
    return chosen

class SetNet(nn.Module):
    def __init__(self, count=COUNT):
        super().__init__()
        self.count = count
        self.mlp = nn.Sequential(nn.Conv1d(3, 64, 1), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU())
        self.head = nn.Linear(128, 10)

    def forward(self, xyz):  # (B, N, 3)
        idx = farthest_points(xyz, self.count)
        picked = torch.gather(xyz, 1, idx.unsqueeze(-1).expand(-1, -1, 3))
        return self.head(self.mlp(picked.transpose(1, 2)).max(-1)[0])
'''


def scan(cli, write, name: str, count: int) -> dict:
    result = cli("scan", write(name, SAMPLED_POINTS.replace("COUNT", str(count))), "-i", "2,256,3",
                 "--json", "--graph")
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.stdout)["models"]
    return record


def test_a_sampling_loop_keeps_one_step_whatever_its_length(cli, write):
    long, short = scan(cli, write, "long.py", 96), scan(cli, write, "short.py", 48)
    assert long["graph_hash"] == short["graph_hash"]  # how many points it samples is data, not design
    assert scan(cli, write, "few.py", 16)["graph_hash"] == long["graph_hash"]  # 14 steps: a recurrence
    nodes = long["graph"]["nodes"]
    assert len(nodes) < 40  # unrolled, 96 steps made over 500 nodes
    def repeats(record):
        return max(n.get("attrs", {}).get(REPEATS, 0) for n in record["graph"]["nodes"])

    assert 90 < repeats(long) <= 96 and 40 < repeats(short) <= 48  # the first and last steps stay
    assert long["macs"] > short["macs"]  # the MACs are every step's
    ops = [n["op"] for n in nodes]
    assert ops.count("conv1d") == 2 and ops.count("linear") == 1


def _chain(steps: int, layer_params: int = 0) -> ArchGraph:
    """input -> conv -> `steps` × (sub, pow, compare[, a layer with weights]) -> linear -> output."""
    nodes = [Node("input", [2, 3, 64]), Node("conv1d", [2, 8, 64], params=32, macs=3072, scope="mlp")]
    edges, last = [(0, 1)], 1
    for _ in range(steps):
        step = [Node("sub", [2, 64], scope="sample"), Node("pow", [2, 64], macs=128, scope="sample"),
                Node("compare", [2, 64], scope="sample")]
        if layer_params:
            step.append(Node("linear", [2, 64], params=layer_params, macs=8192, scope="sample"))
        for node in step:
            nodes.append(node)
            edges.append((last, len(nodes) - 1))
            last = len(nodes) - 1
        edges.append((1, len(nodes) - len(step)))  # every step also reads the features
    nodes += [Node("linear", [2, 10], params=650, macs=1280, scope="head"), Node("output", [2, 10])]
    edges += [(last, len(nodes) - 2), (len(nodes) - 2, len(nodes) - 1)]
    return ArchGraph(nodes, edges, {}).canonicalize()


def test_a_long_parameter_free_loop_folds_and_keeps_its_macs():
    graph = _chain(MIN_COPIES + 8)
    folded = fold_loops(graph)
    assert folded.num_nodes < 25 and folded.macs == graph.macs and folded.params == graph.params
    repeats = [n.attrs[REPEATS] for n in folded.nodes if REPEATS in n.attrs]
    assert len(repeats) == 3 and all(MIN_COPIES + 4 <= r < MIN_COPIES + 8 for r in repeats)  # ends kept
    # the network around the loop is intact: input to output through conv, the loop, the head
    ops = [n.op for n in folded.nodes]
    assert ops[0] == "input" and ops[-1] == "output" and ops.count("conv1d") == 1 and ops.count("linear") == 1
    assert fold_loops(folded) is folded and normalise_idioms(folded).content_hash() == folded.content_hash()


def _side_by_side(copies: int) -> ArchGraph:
    """input -> conv -> `copies` × (sub, pow, compare), each reading the features only, -> stack ->
    linear -> output: copies next to one another (a tensor split into parts), not one after another."""
    nodes = [Node("input", [2, 3, 64]), Node("conv1d", [2, 8, 64], params=32, macs=3072, scope="mlp")]
    edges, ends = [(0, 1)], []
    for _ in range(copies):
        first = len(nodes)
        nodes += [Node("sub", [2, 64], scope="sample"), Node("pow", [2, 64], macs=128, scope="sample"),
                  Node("compare", [2, 64], scope="sample")]
        edges += [(1, first), (first, first + 1), (first + 1, first + 2)]
        ends.append(first + 2)
    nodes.append(Node("stack", [2, copies, 64], scope="sample"))
    edges += [(end, len(nodes) - 1) for end in ends]
    nodes += [Node("linear", [2, 10], params=650, macs=1280, scope="head"), Node("output", [2, 10])]
    edges += [(len(nodes) - 3, len(nodes) - 2), (len(nodes) - 2, len(nodes) - 1)]
    return ArchGraph(nodes, edges, {}).canonicalize()


def test_a_recurrence_folds_from_fewer_steps_than_copies_side_by_side():
    """Each step of a recurrence reads the one before (a scan over 24 tokens): it folds from
    MIN_CHAIN steps, so a model traced at 24 tokens and at 128 is one architecture. The same number
    of copies side by side, or fewer steps, is written as it is."""
    recurrence = fold_loops(_chain(MIN_COPIES - 8))
    assert recurrence.num_nodes < 25 and recurrence.content_hash() == fold_loops(_chain(MIN_COPIES + 8)).content_hash()
    assert fold_loops(_chain(MIN_CHAIN + 2)).content_hash() == recurrence.content_hash()
    short = _chain(MIN_CHAIN - 1)
    assert fold_loops(short) is short
    parts = _side_by_side(MIN_COPIES - 8)
    assert fold_loops(parts) is parts
    assert fold_loops(_side_by_side(MIN_COPIES + 8)).num_nodes < 20  # so many copies are a loop either way


def test_a_loop_of_shared_layers_as_long_as_its_configuration_stays_as_written():
    """ALBERT's one layer run twelve times: the count is the design's (no input is that long)."""
    for steps in (MIN_CHAIN + 4, MIN_COPIES + 8):
        decoder = _chain(steps, layer_params=4160)
        assert fold_loops(decoder) is decoder


def _with_input_length(graph: ArchGraph, length: int) -> ArchGraph:
    nodes = [replace(graph.nodes[0], shape=[1, length])] + list(graph.nodes[1:])
    return ArchGraph(nodes, list(graph.edges), dict(graph.meta)).canonicalize()


def test_a_loop_of_layers_once_per_input_position_keeps_one_step():
    """The same loop run once per token of the input it reads (a decoder's step at every position):
    the data's length, so one step of it, with every step's MACs; one graph at any length."""
    folded = {}
    for steps in (MIN_CHAIN + 4, MIN_COPIES + 8):
        decoder = _with_input_length(_chain(steps, layer_params=4160), steps)
        folded[steps] = fold_loops(decoder)
        assert folded[steps].num_nodes < 30 and folded[steps].macs == decoder.macs, folded[steps].num_nodes
        assert any(n.params and n.attrs.get(REPEATS) for n in folded[steps].nodes)
    assert len({g.content_hash() for g in folded.values()}) == 1
    short = _with_input_length(_chain(MIN_CHAIN + 4, layer_params=4160), MIN_CHAIN + 30)
    assert fold_loops(short) is short  # twelve steps over forty-two tokens: not once per position


def test_the_latency_head_costs_every_step_of_a_folded_loop():
    graph = _chain(MIN_COPIES + 8)
    folded = fold_loops(graph)
    back = expand_loops(folded)
    assert back.num_nodes == graph.num_nodes and back.macs == graph.macs
    assert sorted(n.op for n in back.nodes) == sorted(n.op for n in graph.nodes)
    assert as_run(folded).num_nodes == graph.num_nodes
    assert expand_loops(graph) is graph


def test_the_latency_prediction_of_a_folded_loop_is_the_unrolled_ones():
    from narcli import DATA_DIR
    from narcli.predict.latency import load_head

    head = load_head(DATA_DIR)
    if head is None:
        pytest.skip("no bundled latency head")
    graph, folded = _chain(MIN_COPIES + 8), fold_loops(_chain(MIN_COPIES + 8))
    unrolled, rolled = head.predict(graph), head.predict(folded)
    assert not isinstance(unrolled, str) and not isinstance(rolled, str), (unrolled, rolled)
    assert abs(rolled[0] / unrolled[0] - 1) < 0.02


def test_a_folded_loop_of_layers_runs_as_its_unrolled_form_for_the_latency_head():
    """Expanded for costing, a folded decoder gets back its steps in turn, each reading the one before
    (the edges the cycle's cut dropped as well), so its prediction is the unrolled graph's."""
    from narcli import DATA_DIR
    from narcli.predict.latency import load_head

    decoder = _with_input_length(_chain(MIN_CHAIN + 8, layer_params=4160), MIN_CHAIN + 8)
    folded = fold_loops(decoder)
    back = expand_loops(folded)
    assert back.num_nodes == decoder.num_nodes and back.macs == decoder.macs
    assert back.depth == decoder.depth and len(back.edges) == len(decoder.edges)
    reads = [n.attrs[LOOP_READS] for n in folded.nodes if LOOP_READS in n.attrs]
    assert reads and all(isinstance(lag, int) for r in reads for lag in r.values())
    head = load_head(DATA_DIR)
    if head is None:
        pytest.skip("no bundled latency head")
    unrolled, rolled = head.predict(decoder), head.predict(folded)
    assert abs(rolled[0] / unrolled[0] - 1) < 0.02, (unrolled, rolled)


def test_recorded_steps_that_contradict_one_another_are_guessed_instead():
    """A stored graph whose `loop_reads` close a cycle (edited by hand) still expands: every copy is
    there, and the edges form a DAG."""
    folded = fold_loops(_with_input_length(_chain(MIN_CHAIN + 8, layer_params=4160), MIN_CHAIN + 8))
    ids = [n.attrs["loop_id"] for n in folded.nodes if "loop_id" in n.attrs]
    # lag 0 from itself: each copy would read itself
    nodes = [replace(n, attrs={**n.attrs, LOOP_READS: {str(k): 0 for k in ids}}) if "loop_id" in n.attrs else n
             for n in folded.nodes]
    broken = ArchGraph(nodes, list(folded.edges), dict(folded.meta))
    back = expand_loops(broken)
    assert back.num_nodes == expand_loops(folded).num_nodes and back.macs == folded.macs


def test_an_exported_graph_shows_a_folded_step_with_its_count():
    from narcli.graph.dot import graph_dot

    folded = fold_loops(_chain(MIN_COPIES + 8))
    steps = [n.attrs[REPEATS] for n in folded.nodes if REPEATS in n.attrs]
    assert f"loop step ×{steps[0]}" in graph_dot(folded, "chain")
    assert "loop step" not in graph_dot(_chain(4), "chain")


SELECTIVE_SCAN = '''
import torch
from torch import nn

class ScanLM(nn.Module):
    """A state-space language model's core: a gated projection, then a sequential scan over tokens
    (h = a_t * h + b_t * x_t, y_t = <h, c_t>) written as a Python loop."""
    def __init__(self, vocab=100, dim=32, state=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.project = nn.Linear(dim, 3 * state)
        self.mix = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.state = state

    def forward(self, tokens):
        x = self.embed(tokens)
        a, b, c = torch.sigmoid(self.project(x)).chunk(3, -1)
        h = torch.zeros(x.shape[0], x.shape[-1], self.state)
        ys = []
        for t in range(tokens.shape[1]):
            h = a[:, t, None, :] * h + b[:, t, None, :] * x[:, t, :, None]
            ys.append((h * c[:, t, None, :]).sum(-1))
        return self.head(self.mix(torch.stack(ys, 1)))
'''


def test_a_scan_over_tokens_is_one_architecture_at_any_traced_length(cli, write):
    """How many tokens a model is traced at is the input's, not the design's: a scan over 16
    tokens (14 steps between the first and the last, fewer than MIN_COPIES), one over 24 and one
    over 128 fold to the same graph. Which of a step's independent operations comes first in the
    trace's order moves with the length; where the folded recurrence is cut must not (at 16 and 128
    tokens it once kept one edge more)."""
    path = write("scan_lm.py", SELECTIVE_SCAN)
    hashes, sizes = [], []
    for tokens in (16, 24, 128):
        result = cli("scan", path, "-i", f"1,{tokens}", "--input-dtype", "long", "--json", "--graph")
        assert result.exit_code == 0, result.output
        [record] = json.loads(result.stdout)["models"]
        hashes.append(record["graph_hash"])
        sizes.append(len(record["graph"]["nodes"]))
    assert len(set(hashes)) == 1 and max(sizes) < 60, (hashes, sizes)


ATTENTION_DECODER = '''
import torch
from torch import nn


class Decoder(nn.Module):
    """A GRU encoder, then at every target position additive attention over its states, a GRU cell
    and an output layer (Bahdanau et al.'s decoder, teacher-forced on the same tokens)."""

    def __init__(self, vocab=100, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.encoder = nn.GRU(dim, dim, batch_first=True)
        self.keys, self.query, self.score = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, 1)
        self.cell = nn.GRUCell(2 * dim, dim)
        self.out = nn.Linear(2 * dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        memory, last = self.encoder(x)
        state, logits = last[0], []
        for t in range(tokens.shape[1]):
            weights = self.score(torch.tanh(self.keys(memory) + self.query(state)[:, None])).softmax(1)
            context = (weights * memory).sum(1)
            state = self.cell(torch.cat([x[:, t], context], -1), state)
            logits.append(self.out(torch.cat([state, context], -1)))
        return torch.stack(logits, 1)
'''


def test_a_decoder_stepping_over_its_tokens_is_one_architecture_at_any_traced_length(cli, write):
    path = write("attention_decoder.py", ATTENTION_DECODER)
    records = []
    for tokens in (12, 40):
        result = cli("scan", path, "-i", f"1,{tokens}", "--input-dtype", "long", "--json", "--graph")
        assert result.exit_code == 0, result.output
        [record] = json.loads(result.stdout)["models"]
        records.append(record)
    assert records[0]["graph_hash"] == records[1]["graph_hash"]
    assert len(records[1]["graph"]["nodes"]) < 40 and records[1]["macs"] > 3 * records[0]["macs"]


FEEDING_DECODER = '''
import torch
from torch import nn


class Translator(nn.Module):
    """An LSTM encoder; an LSTMCell decoder over the target with dot-product attention, each step
    fed the attentional state of the step before (Luong et al.'s input feeding)."""

    def __init__(self, vocab=200, dim=64):
        super().__init__()
        self.src, self.tgt = nn.Embedding(vocab, dim), nn.Embedding(vocab, dim)
        self.enc = nn.LSTM(dim, dim, batch_first=True)
        self.cell = nn.LSTMCell(2 * dim, dim)
        self.combine, self.proj = nn.Linear(2 * dim, dim), nn.Linear(dim, vocab)

    def forward(self, tokens):
        memory, (h, c) = self.enc(self.src(tokens))
        h, c = h[-1], c[-1]
        feed, y, outs = torch.zeros_like(h), self.tgt(tokens), []
        for t in range(tokens.size(1)):
            h, c = self.cell(torch.cat([y[:, t], feed], -1), (h, c))
            weights = torch.bmm(memory, h.unsqueeze(2)).squeeze(2).softmax(-1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
            feed = torch.tanh(self.combine(torch.cat([context, h], -1)))
            outs.append(self.proj(feed))
        return torch.stack(outs, 1)
'''


@pytest.mark.parametrize("source, model", [(ATTENTION_DECODER, "Decoder"), (FEEDING_DECODER, "Translator")])
def test_a_traced_decoder_is_costed_as_its_unrolled_trace(tmp_path, monkeypatch, source, model):
    """Through the whole canonical pipeline, where idiom rules run again on the folded graph (a concat
    whose other input the cycle's cut dropped must stay a concat), the latency head costs the folded
    decoder as the unrolled one."""
    from narcli import DATA_DIR
    from narcli.graph import idioms
    from narcli.graph.arch_graph import ArchGraph
    from narcli.predict.latency import load_head
    from narcli.scan.scanner import trace_python_file
    from narcli.trace.inputs import InputSpec

    head = load_head(DATA_DIR)
    if head is None:
        pytest.skip("no bundled latency head")
    path = tmp_path / "decoder.py"
    path.write_text(source)

    def traced() -> ArchGraph:
        [payload] = trace_python_file(path, model, [InputSpec((1, 24), "int64")])
        return ArchGraph.from_dict(payload["graph"])

    folded = traced()
    monkeypatch.setattr(idioms, "fold_loops", lambda graph: graph)
    unrolled = traced()
    assert folded.num_nodes < 40 < unrolled.num_nodes
    # 3.9 % and 1.7 % today (6.5 % for the second when the concat fell): the first and last steps
    # are joined to the folded ones by guesses
    assert abs(head.predict(folded)[0] / head.predict(unrolled)[0] - 1) < 0.05
