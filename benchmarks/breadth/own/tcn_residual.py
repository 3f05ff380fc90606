"""A temporal convolutional network (Bai et al., arXiv:1803.01271), written for nar's breadth set."""
import torch.nn as nn
import torch.nn.functional as F


class CausalConv(nn.Conv1d):
    def __init__(self, cin, cout, k, dilation):
        super().__init__(cin, cout, k, dilation=dilation)
        self.left = (k - 1) * dilation

    def forward(self, x):
        return super().forward(F.pad(x, (self.left, 0)))


class Block(nn.Module):
    def __init__(self, cin, cout, k, d):
        super().__init__()
        self.net = nn.Sequential(CausalConv(cin, cout, k, d), nn.ReLU(), nn.Dropout(0.1),
                                 CausalConv(cout, cout, k, d), nn.ReLU(), nn.Dropout(0.1))
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.net(x) + self.skip(x))


class TCN(nn.Module):
    def __init__(self, n_in=3, channels=(32, 32, 32, 32, 32, 32), k=3, n_out=5):
        super().__init__()
        layers, cin = [], n_in
        for i, c in enumerate(channels):
            layers.append(Block(cin, c, k, 2 ** i))
            cin = c
        self.tcn = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, n_out)

    def forward(self, x):
        return self.fc(self.tcn(x)[:, :, -1])
