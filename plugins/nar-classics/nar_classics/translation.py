"""Attention decoders stepped one target token at a time, as the papers define them and as
translation code is written: Bahdanau et al. 2015 (RNNsearch: a bidirectional GRU encoder, additive
attention from the previous decoder state, a GRU cell fed the previous word and the context, a
maxout output layer) and Luong et al. 2015 (stacked LSTMs, global "general" attention from the
current state, an attentional hidden state tanh(W[c; h]) fed back as input: input feeding).
Teacher-forced: the decoder reads the target shifted by one."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class BahdanauSeq2Seq(nn.Module):
    def __init__(self, vocab=30000, embed=620, hidden=1000, align=1000, maxout=500):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, embed)
        self.tgt_embed = nn.Embedding(vocab, embed)
        self.encoder = nn.GRU(embed, hidden, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(hidden, hidden)  # s0 = tanh(W h1_backward)
        self.keys = nn.Linear(2 * hidden, align, bias=False)  # U h_j, once per source position
        self.query = nn.Linear(hidden, align, bias=False)  # W s_{t-1}
        self.energy = nn.Linear(align, 1, bias=False)  # v^T tanh(.)
        self.cell = nn.GRUCell(embed + 2 * hidden, hidden)
        self.maxout = nn.Linear(hidden + embed + 2 * hidden, 2 * maxout)
        self.out = nn.Linear(maxout, vocab)

    def forward(self, src, tgt):
        memory, _ = self.encoder(self.src_embed(src))
        keys = self.keys(memory)
        hidden = memory.shape[-1] // 2
        state = torch.tanh(self.init_state(memory[:, 0, hidden:]))
        words = self.tgt_embed(tgt)
        logits = []
        for t in range(tgt.shape[1]):
            scores = self.energy(torch.tanh(keys + self.query(state).unsqueeze(1)))
            context = (F.softmax(scores, dim=1) * memory).sum(1)
            word = words[:, t]
            features = self.maxout(torch.cat([state, word, context], -1))
            logits.append(self.out(features.view(*features.shape[:-1], -1, 2).amax(-1)))
            state = self.cell(torch.cat([word, context], -1), state)
        return torch.stack(logits, 1)


class LuongSeq2Seq(nn.Module):
    def __init__(self, vocab=50000, embed=1000, hidden=1000, layers=4):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, embed)
        self.tgt_embed = nn.Embedding(vocab, embed)
        self.encoder = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.cells = nn.ModuleList(nn.LSTMCell((embed + hidden) if i == 0 else hidden, hidden) for i in range(layers))
        self.score = nn.Linear(hidden, hidden, bias=False)  # "general": h_t^T W h_s
        self.attentional = nn.Linear(2 * hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        memory, (h, c) = self.encoder(self.src_embed(src))
        states = [(h[i], c[i]) for i in range(len(self.cells))]
        keys = self.score(memory)
        feed = memory.new_zeros(memory.shape[0], memory.shape[-1])
        words = self.tgt_embed(tgt)
        logits = []
        for t in range(tgt.shape[1]):
            x = torch.cat([words[:, t], feed], -1)
            for i, cell in enumerate(self.cells):
                states[i] = cell(x, states[i])
                x = states[i][0]
            weights = F.softmax(torch.bmm(keys, x.unsqueeze(2)), dim=1)
            context = (weights * memory).sum(1)
            feed = torch.tanh(self.attentional(torch.cat([context, x], -1)))
            logits.append(self.out(feed))
        return torch.stack(logits, 1)
