import math
import torch
from torch import nn


class Translator(nn.Module):
    """The PyTorch tutorial's translation model: nn.Transformer between two embedding tables."""

    def __init__(self, src_vocab=10000, tgt_vocab=10000, d=512):
        super().__init__()
        self.src = nn.Embedding(src_vocab, d)
        self.tgt = nn.Embedding(tgt_vocab, d)
        self.transformer = nn.Transformer(d, 8, 3, 3, 512, 0.1, batch_first=True)
        self.generator = nn.Linear(d, tgt_vocab)
        self.d = d

    def forward(self, src, tgt):
        mask = self.transformer.generate_square_subsequent_mask(tgt.shape[1])
        out = self.transformer(self.src(src) * math.sqrt(self.d), self.tgt(tgt) * math.sqrt(self.d), tgt_mask=mask)
        return self.generator(out)
