# Small ViT for CIFAR-10 (32x32, patch 4 -> 64 tokens): patches cut with reshape/permute and
# embedded by a Linear layer, class token, 7 pre-norm blocks (dim 384, 12 heads, MLP 384*4),
# hand-written LayerNorm and GELU (tanh form), classification on the class token.
# Own re-implementation from "An Image is Worth 16x16 Words: Transformers for Image Recognition at
# Scale" (Dosovitskiy et al., 2020), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import math

import torch
import torch.nn as nn


class LN(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.g = nn.Parameter(torch.ones(d))
        self.b = nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return self.g * (x - mu) / torch.sqrt(var + self.eps) + self.b


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class Attention(nn.Module):
    def __init__(self, d, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.dh = d // n_heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        q = self.q(x).view(b, n, self.n_heads, self.dh).transpose(1, 2)
        k = self.k(x).view(b, n, self.n_heads, self.dh).transpose(1, 2)
        v = self.v(x).view(b, n, self.n_heads, self.dh).transpose(1, 2)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh)
        w = torch.softmax(w, -1)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, n, d)
        return self.o(out)


class Layer(nn.Module):
    def __init__(self, d, heads, hidden, dropout):
        super().__init__()
        self.norm1 = LN(d)
        self.att = Attention(d, heads)
        self.norm2 = LN(d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.att(self.norm1(x)))
        h = self.fc2(self.drop(gelu(self.fc1(self.norm2(x)))))
        return x + self.drop(h)


class ViTCifar(nn.Module):
    def __init__(self, img=32, patch=4, d=384, depth=7, heads=12, hidden=1536, n_classes=10, dropout=0.0):
        super().__init__()
        self.patch = patch
        n = (img // patch) ** 2
        self.embed = nn.Linear(3 * patch * patch, d)
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, n + 1, d))
        self.layers = nn.Sequential(*[Layer(d, heads, hidden, dropout) for _ in range(depth)])
        self.final_norm = LN(d)
        self.fc = nn.Linear(d, n_classes)

    def to_patches(self, x):
        b, c, h, w = x.shape
        p = self.patch
        x = x.reshape(b, c, h // p, p, w // p, p)
        x = x.permute(0, 2, 4, 3, 5, 1)  # b, gh, gw, p, p, c
        return x.reshape(b, (h // p) * (w // p), p * p * c)

    def forward(self, x):
        tokens = self.embed(self.to_patches(x))
        tokens = torch.cat([self.cls.repeat(tokens.size(0), 1, 1), tokens], dim=1)
        tokens = tokens + self.pos
        tokens = self.layers(tokens)
        return self.fc(self.final_norm(tokens)[:, 0])
