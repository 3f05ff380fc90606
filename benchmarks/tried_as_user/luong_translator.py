"""A Luong-style translator written by hand for trying `nar similar` (Apache-2.0): a 2-layer LSTM
encoder, an `LSTMCell` decoder stepped over the target with dot attention and input feeding."""
import torch
import torch.nn as nn


class Translator(nn.Module):
    """LSTM encoder; a decoder that steps over the target with an LSTMCell, dot-product attention
    over the encoder states and an attentional hidden state (Luong et al. 2015, input feeding)."""

    def __init__(self, vocab=5000, dim=256):
        super().__init__()
        self.src = nn.Embedding(vocab, dim)
        self.tgt = nn.Embedding(vocab, dim)
        self.enc = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
        self.cell = nn.LSTMCell(2 * dim, dim)
        self.combine = nn.Linear(2 * dim, dim)
        self.proj = nn.Linear(dim, vocab)

    def forward(self, tokens):
        memory, (h, c) = self.enc(self.src(tokens))
        h, c = h[-1], c[-1]
        feed = torch.zeros_like(h)
        y = self.tgt(tokens)
        outs = []
        for t in range(tokens.size(1)):
            h, c = self.cell(torch.cat([y[:, t], feed], -1), (h, c))
            scores = torch.bmm(memory, h.unsqueeze(2)).squeeze(2)
            context = torch.bmm(scores.softmax(-1).unsqueeze(1), memory).squeeze(1)
            feed = torch.tanh(self.combine(torch.cat([context, h], -1)))
            outs.append(self.proj(feed))
        return torch.stack(outs, 1)
