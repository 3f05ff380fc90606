"""An LSTM forecaster that steps an LSTMCell over the window itself, written for nar's breadth set."""
import torch
import torch.nn as nn


class StepForecaster(nn.Module):
    def __init__(self, n_in=5, hidden=64, horizon=1):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.LSTMCell(n_in, hidden)
        self.out = nn.Linear(hidden, horizon)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.hidden, device=x.device)
        c = torch.zeros(x.size(0), self.hidden, device=x.device)
        for t in range(x.size(1)):
            h, c = self.cell(x[:, t, :], (h, c))
        return self.out(h)
