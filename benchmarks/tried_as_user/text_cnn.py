import torch
from torch import nn
import torch.nn.functional as F


class TextCNN(nn.Module):
    """Kim (2014): embeddings, three widths of 1-D convolution, max over time, dropout, linear."""

    def __init__(self, vocab=20000, dim=300, classes=5, filters=100):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.convs = nn.ModuleList([nn.Conv1d(dim, filters, k) for k in (3, 4, 5)])
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(3 * filters, classes)

    def forward(self, tokens):
        x = self.embed(tokens).transpose(1, 2)
        pooled = [F.relu(conv(x)).max(dim=2).values for conv in self.convs]
        return self.fc(self.drop(torch.cat(pooled, dim=1)))
