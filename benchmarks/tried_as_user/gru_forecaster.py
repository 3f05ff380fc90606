"""A GRU forecaster: 7 sensor channels over a 168-hour window, 24 hours ahead (time-major, as old code writes it)."""
import torch
from torch import nn


class Forecaster(nn.Module):
    def __init__(self, sensors=7, hidden=64, window=168, horizon=24):
        super().__init__()
        self.gru = nn.GRU(sensors, hidden, num_layers=2)
        self.attend = nn.Linear(hidden, 1)
        self.out = nn.Linear(hidden * window, horizon * sensors)
        self.horizon, self.sensors = horizon, sensors

    def forward(self, x):  # x: (window, batch, sensors)
        h, _ = self.gru(x)
        w = torch.softmax(self.attend(h), dim=0)
        h = (h * w).permute(1, 0, 2).flatten(1)
        return self.out(h).view(-1, self.horizon, self.sensors)


if __name__ == "__main__":
    batch = torch.randn(168, 16, 7)
    print(Forecaster()(batch).shape)
