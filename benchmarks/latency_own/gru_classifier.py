"""A text classifier: token embedding, a two-layer bidirectional GRU, max-pool over time, MLP."""
import torch
from torch import nn


class GRUClassifier(nn.Module):
    def __init__(self, vocab=20000, dim=128, hidden=192, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, tokens):
        out, _ = self.gru(self.embed(tokens))
        return self.head(out.max(dim=1).values)
