"""A character-level GPT as tutorials write it: learned positions for a 128-character block."""
import torch
from torch import nn
from torch.nn import functional as F


class Head(nn.Module):
    def __init__(self, dim, size, block):
        super().__init__()
        self.key, self.query, self.value = (nn.Linear(dim, size, bias=False) for _ in range(3))
        self.register_buffer("tril", torch.tril(torch.ones(block, block)))

    def forward(self, x):
        T = x.shape[1]
        k, q = self.key(x), self.query(x)
        w = (q @ k.transpose(-2, -1)) * k.shape[-1] ** -0.5
        w = F.softmax(w.masked_fill(self.tril[:T, :T] == 0, float("-inf")), dim=-1)
        return w @ self.value(x)


class Block(nn.Module):
    def __init__(self, dim, heads, block):
        super().__init__()
        self.heads = nn.ModuleList(Head(dim, dim // heads, block) for _ in range(heads))
        self.proj = nn.Linear(dim, dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.ReLU(), nn.Linear(4 * dim, dim))
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x):
        x = x + self.proj(torch.cat([h(self.ln1(x)) for h in self.heads], dim=-1))
        return x + self.ff(self.ln2(x))


class CharGPT(nn.Module):
    def __init__(self, vocab=65, dim=192, heads=6, layers=6, block=128):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads, block) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x)))


if __name__ == "__main__":
    idx = torch.randint(0, 65, (4, 128))
    print(CharGPT()(idx).shape)
