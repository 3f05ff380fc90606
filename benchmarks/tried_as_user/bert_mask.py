import math
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        att = att.masked_fill(mask[:, None, None, :] == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.out(y))
        return self.ln2(x + self.ff(x))


class MiniBert(nn.Module):
    """A post-norm BERT encoder for sentence classification, written by hand."""

    def __init__(self, vocab=30522, d=256, layers=4, heads=4, max_len=512, classes=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln = nn.LayerNorm(d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.pool = nn.Linear(d, d)
        self.cls = nn.Linear(d, classes)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.ln(self.tok(input_ids) + self.pos(pos))
        for block in self.blocks:
            x = block(x, attention_mask)
        return self.cls(torch.tanh(self.pool(x[:, 0])))
