"""A temporal convolutional network: causal dilated 1-D convolutions with residual blocks."""
from torch import nn


class Causal(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.pad = (k - 1) * dilation
        self.conv = nn.Conv1d(cin, cout, k, padding=self.pad, dilation=dilation)

    def forward(self, x):
        return self.conv(x)[..., :-self.pad]


class Block(nn.Module):
    def __init__(self, cin, cout, k, dilation):
        super().__init__()
        self.net = nn.Sequential(Causal(cin, cout, k, dilation), nn.ReLU(), nn.Dropout(0.1),
                                 Causal(cout, cout, k, dilation), nn.ReLU(), nn.Dropout(0.1))
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        return nn.functional.relu(self.net(x) + self.down(x))


class TCN(nn.Module):
    def __init__(self, channels=8, hidden=64, levels=6, k=3, outputs=1):
        super().__init__()
        blocks, cin = [], channels
        for i in range(levels):
            blocks.append(Block(cin, hidden, k, 2 ** i))
            cin = hidden
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(hidden, outputs)

    def forward(self, x):
        return self.head(self.blocks(x)[..., -1])
