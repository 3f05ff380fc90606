"""A Conformer speech encoder (Gulati et al., arXiv:2005.08100), written for nar's breadth set:
a convolutional subsampling of 80-bin log-mel frames by 4, then macaron blocks (half-step feed
forward, relative-position-free multi-head self-attention here, the convolution module with a GLU,
a depthwise convolution, batch norm and Swish, a second half-step feed forward, a final layer
norm) and a CTC output layer."""
import torch
import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, d, mult=4, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d * mult), nn.SiLU(), nn.Dropout(dropout),
                                 nn.Linear(d * mult, d), nn.Dropout(dropout))

    def forward(self, x):
        return self.net(x)


class ConvModule(nn.Module):
    def __init__(self, d, kernel=31, dropout=0.1):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.pointwise1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pointwise2 = nn.Conv1d(d, d, 1)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        h = self.norm(x).transpose(1, 2)
        h = nn.functional.glu(self.pointwise1(h), dim=1)
        h = self.pointwise2(nn.functional.silu(self.bn(self.depthwise(h))))
        return self.drop(h.transpose(1, 2))


class ConformerBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ff1, self.ff2 = FeedForward(d), FeedForward(d)
        self.attn_norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.conv = ConvModule(d)
        self.out_norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        h = self.attn_norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.conv(x)
        x = x + 0.5 * self.ff2(x)
        return self.out_norm(x)


class ConformerCTC(nn.Module):
    def __init__(self, mels=80, d=256, heads=4, layers=16, vocab=128):
        super().__init__()
        self.subsample = nn.Sequential(nn.Conv2d(1, d, 3, 2), nn.ReLU(), nn.Conv2d(d, d, 3, 2), nn.ReLU())
        self.proj = nn.Linear(d * (((mels - 1) // 2 - 1) // 2), d)
        self.blocks = nn.ModuleList([ConformerBlock(d, heads) for _ in range(layers)])
        self.ctc = nn.Linear(d, vocab)

    def forward(self, mel):  # (batch, frames, mels)
        h = self.subsample(mel[:, None])
        b, c, t, f = h.shape
        h = self.proj(h.permute(0, 2, 1, 3).reshape(b, t, c * f))
        for block in self.blocks:
            h = block(h)
        return self.ctc(h).log_softmax(-1)
