"""Sequence models: recurrent language models, classifiers and forecasters, seq2seq (with and without
attention), TCN and WaveNet. Sizes follow the papers where they give them."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

CELLS = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}


class RecurrentLM(nn.Module):
    """Embedding, stacked recurrence, vocabulary projection (Zaremba et al. 2014; Merity et al.)."""

    def __init__(self, cell="lstm", vocab=10000, embed=200, hidden=200, layers=2, tie=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = CELLS[cell](embed, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)
        if tie and embed == hidden:
            self.decoder.weight = self.embed.weight

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.decoder(out)


class RecurrentClassifier(nn.Module):
    """Embedding, (bi)directional recurrence, the last state classified (sentiment, intent, ...)."""

    def __init__(self, cell="lstm", vocab=20000, embed=128, hidden=128, layers=1, bidirectional=True, classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.rnn = CELLS[cell](embed, hidden, layers, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.head(out[:, -1])


class RecurrentForecaster(nn.Module):
    """A window of past values in, the next `horizon` values out."""

    def __init__(self, cell="lstm", features=8, hidden=64, layers=2, horizon=12):
        super().__init__()
        self.rnn = CELLS[cell](features, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, horizon)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class Seq2Seq(nn.Module):
    """Encoder-decoder recurrence (Sutskever et al. 2014); with `attention`, the decoder attends over
    the encoder's states at every step (Bahdanau et al. 2015, additive). Teacher-forced decoding."""

    def __init__(self, cell="gru", vocab=8000, embed=256, hidden=512, layers=1, attention=False):
        super().__init__()
        self.attention = attention
        self.src_embed = nn.Embedding(vocab, embed)
        self.tgt_embed = nn.Embedding(vocab, embed)
        self.encoder = CELLS[cell](embed, hidden, layers, batch_first=True)
        self.decoder = CELLS[cell](embed + (hidden if attention else 0), hidden, layers, batch_first=True)
        if attention:
            self.query = nn.Linear(hidden, hidden, bias=False)
            self.key = nn.Linear(hidden, hidden)
            self.score = nn.Linear(hidden, 1, bias=False)
        self.out = nn.Linear(hidden * (2 if attention else 1), vocab)

    def forward(self, src, tgt):
        memory, state = self.encoder(self.src_embed(src))
        embedded = self.tgt_embed(tgt)
        if not self.attention:
            out, _ = self.decoder(embedded, state)
            return self.out(out)
        # additive attention from the encoder's final state, one context for the whole target
        query = state[0] if isinstance(state, tuple) else state
        energy = self.score(torch.tanh(self.key(memory) + self.query(query[-1]).unsqueeze(1)))
        context = (F.softmax(energy, dim=1) * memory).sum(1, keepdim=True)
        out, _ = self.decoder(torch.cat([embedded, context.expand(-1, embedded.shape[1], -1)], -1), state)
        return self.out(torch.cat([out, context.expand(-1, out.shape[1], -1)], -1))


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, kernel, dilation):
        super().__init__()
        self.pad = (kernel - 1) * dilation
        self.conv1 = nn.Conv1d(cin, cout, kernel, dilation=dilation)
        self.conv2 = nn.Conv1d(cout, cout, kernel, dilation=dilation)
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        y = F.relu(self.conv1(F.pad(x, (self.pad, 0))))
        y = F.relu(self.conv2(F.pad(y, (self.pad, 0))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class TCN(nn.Module):
    """Temporal convolutional network (Bai et al. 2018): causal dilated residual blocks."""

    def __init__(self, inputs=1, channels=25, levels=8, kernel=7, outputs=10):
        super().__init__()
        widths = [inputs] + [channels] * levels
        self.blocks = nn.Sequential(*[TemporalBlock(widths[i], widths[i + 1], kernel, 2 ** i) for i in range(levels)])
        self.head = nn.Linear(channels, outputs)

    def forward(self, x):
        return self.head(self.blocks(x)[:, :, -1])


class WaveNet(nn.Module):
    """WaveNet (van den Oord et al. 2016): gated dilated causal convolutions, residual and skip paths,
    a softmax over 256 mu-law levels."""

    def __init__(self, layers=10, stacks=3, residual=32, skip=256, classes=256):
        super().__init__()
        self.start = nn.Conv1d(classes, residual, 1)
        self.dilations = [2 ** i for i in range(layers)] * stacks
        self.filters = nn.ModuleList(nn.Conv1d(residual, residual, 2, dilation=d) for d in self.dilations)
        self.gates = nn.ModuleList(nn.Conv1d(residual, residual, 2, dilation=d) for d in self.dilations)
        self.residuals = nn.ModuleList(nn.Conv1d(residual, residual, 1) for _ in self.dilations)
        self.skips = nn.ModuleList(nn.Conv1d(residual, skip, 1) for _ in self.dilations)
        self.end1 = nn.Conv1d(skip, skip, 1)
        self.end2 = nn.Conv1d(skip, classes, 1)

    def forward(self, x):
        x = self.start(x)
        skips = 0
        for d, f, g, r, s in zip(self.dilations, self.filters, self.gates, self.residuals, self.skips):
            padded = F.pad(x, (d, 0))
            z = torch.tanh(f(padded)) * torch.sigmoid(g(padded))
            skips = skips + s(z)
            x = x + r(z)
        return self.end2(F.relu(self.end1(F.relu(skips))))
