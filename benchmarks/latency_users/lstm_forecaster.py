"""A two-layer LSTM forecaster: 96 past steps of 7 sensors, 24 steps ahead."""
import torch
from torch import nn


class LSTMForecaster(nn.Module):
    def __init__(self, features=7, hidden=128, horizon=24):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.out = nn.Linear(hidden, horizon * features)
        self.horizon, self.features = horizon, features

    def forward(self, x):
        seq, _ = self.lstm(x)
        return self.out(seq[:, -1]).view(-1, self.horizon, self.features)

