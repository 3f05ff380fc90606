"""A GRU encoder-decoder translating token sequences (teacher-forced decoder)."""
import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab=8000, dim=256, hidden=512):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, dim)
        self.tgt_embed = nn.Embedding(vocab, dim)
        self.encoder = nn.GRU(dim, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.decoder = nn.GRU(dim, hidden, batch_first=True)
        self.project = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        _, h = self.encoder(self.src_embed(src))
        h = torch.tanh(self.bridge(torch.cat([h[0], h[1]], -1))).unsqueeze(0)
        out, _ = self.decoder(self.tgt_embed(tgt), h)
        return self.project(out)

