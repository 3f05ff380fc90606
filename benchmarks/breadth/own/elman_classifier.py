"""A two-layer Elman RNN sequence classifier over feature vectors (Elman 1990), written for nar's
breadth set."""
import torch.nn as nn


class ElmanClassifier(nn.Module):
    def __init__(self, features=40, hidden=128, classes=10):
        super().__init__()
        self.rnn = nn.RNN(features, hidden, num_layers=2, nonlinearity="tanh", batch_first=True, dropout=0.2)
        self.norm = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        outputs, _ = self.rnn(x)
        return self.fc(self.norm(outputs[:, -1]))
