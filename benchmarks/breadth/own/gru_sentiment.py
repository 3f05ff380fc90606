"""A bidirectional GRU text classifier, written for nar's breadth set."""
import torch
import torch.nn as nn


class GRUClassifier(nn.Module):
    def __init__(self, vocab=25000, emb=100, hidden=256, classes=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb, padding_idx=0)
        self.gru = nn.GRU(emb, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(hidden * 2, classes)

    def forward(self, text):
        _, hidden = self.gru(self.emb(text))
        return self.fc(torch.cat((hidden[-2], hidden[-1]), dim=1))
