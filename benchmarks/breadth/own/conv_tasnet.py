"""Conv-TasNet (Luo & Mesgarani arXiv:1809.07454), written for nar's breadth set: a learned 1-D
encoder, a temporal convolutional separator of dilated depthwise blocks with global layer norm and
PReLU, masks by sigmoid, and a transposed-convolution decoder."""
import torch
import torch.nn as nn


class GlobalLayerNorm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.gamma, self.beta = nn.Parameter(torch.ones(1, channels, 1)), nn.Parameter(torch.zeros(1, channels, 1))

    def forward(self, x):
        mean = x.mean(dim=(1, 2), keepdim=True)
        var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
        return self.gamma * (x - mean) / torch.sqrt(var + 1e-8) + self.beta


class SeparatorBlock(nn.Module):
    def __init__(self, bottleneck, hidden, dilation):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(bottleneck, hidden, 1), nn.PReLU(), GlobalLayerNorm(hidden),
            nn.Conv1d(hidden, hidden, 3, padding=dilation, dilation=dilation, groups=hidden), nn.PReLU(),
            GlobalLayerNorm(hidden))
        self.residual, self.skip = nn.Conv1d(hidden, bottleneck, 1), nn.Conv1d(hidden, bottleneck, 1)

    def forward(self, x):
        h = self.body(x)
        return x + self.residual(h), self.skip(h)


class ConvTasNet(nn.Module):
    def __init__(self, speakers=2, filters=256, kernel=20, bottleneck=128, hidden=256, blocks=6, repeats=2):
        super().__init__()
        self.speakers, self.filters = speakers, filters
        self.encoder = nn.Conv1d(1, filters, kernel, stride=kernel // 2, bias=False)
        self.norm = GlobalLayerNorm(filters)
        self.inp = nn.Conv1d(filters, bottleneck, 1)
        self.blocks = nn.ModuleList(SeparatorBlock(bottleneck, hidden, 2 ** b) for _ in range(repeats) for b in range(blocks))
        self.mask = nn.Sequential(nn.PReLU(), nn.Conv1d(bottleneck, speakers * filters, 1))
        self.decoder = nn.ConvTranspose1d(filters, 1, kernel, stride=kernel // 2, bias=False)

    def forward(self, mixture):
        w = torch.relu(self.encoder(mixture))
        x, skips = self.inp(self.norm(w)), 0
        for block in self.blocks:
            x, skip = block(x)
            skips = skips + skip
        masks = torch.sigmoid(self.mask(skips)).view(mixture.shape[0], self.speakers, self.filters, -1)
        sources = [self.decoder(w * masks[:, s]) for s in range(self.speakers)]
        return torch.cat(sources, dim=1)
