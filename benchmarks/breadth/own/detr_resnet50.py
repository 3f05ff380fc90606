"""DETR (Carion et al., arXiv:2005.12872), written for nar's breadth set: a ResNet-50 backbone
(frozen batch norm folded into plain BatchNorm here), a 1x1 projection, a 6+6 layer transformer
with sine positional encodings added to queries and keys, 100 learned object queries, and class and
box heads."""
import math

import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) \
            if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


def backbone():
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    return nn.Sequential(*layers)


def sine_positions(h, w, dim, device):
    half = dim // 2
    y = torch.arange(1, h + 1, dtype=torch.float32, device=device)[:, None].expand(h, w) / h * 2 * math.pi
    x = torch.arange(1, w + 1, dtype=torch.float32, device=device)[None, :].expand(h, w) / w * 2 * math.pi
    freqs = 10000 ** (2 * (torch.arange(half, device=device) // 2) / half)
    px, py = x[..., None] / freqs, y[..., None] / freqs
    px = torch.stack((px[..., 0::2].sin(), px[..., 1::2].cos()), dim=3).flatten(2)
    py = torch.stack((py[..., 0::2].sin(), py[..., 1::2].cos()), dim=3).flatten(2)
    return torch.cat((py, px), dim=2).flatten(0, 1)  # (h*w, dim)


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.ReLU(), nn.Dropout(0.1), nn.Linear(ff, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x, pos):
        q = x + pos
        x = self.n1(x + self.attn(q, q, x)[0])
        return self.n2(x + self.ff(x))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, dropout=0.1)
        self.cross = nn.MultiheadAttention(d, heads, dropout=0.1)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.ReLU(), nn.Dropout(0.1), nn.Linear(ff, d))
        self.n1, self.n2, self.n3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, t, memory, pos, query_pos):
        q = t + query_pos
        t = self.n1(t + self.self_attn(q, q, t)[0])
        t = self.n2(t + self.cross(t + query_pos, memory + pos, memory)[0])
        return self.n3(t + self.ff(t))


class DETR(nn.Module):
    def __init__(self, classes=91, queries=100, d=256, heads=8, ff=2048, layers=6):
        super().__init__()
        self.backbone = backbone()
        self.proj = nn.Conv2d(2048, d, 1)
        self.encoder = nn.ModuleList([EncoderLayer(d, heads, ff) for _ in range(layers)])
        self.decoder = nn.ModuleList([DecoderLayer(d, heads, ff) for _ in range(layers)])
        self.dec_norm = nn.LayerNorm(d)
        self.query = nn.Embedding(queries, d)
        self.cls = nn.Linear(d, classes + 1)
        self.box = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

    def forward(self, images):
        f = self.proj(self.backbone(images))
        b, d, h, w = f.shape
        memory = f.flatten(2).permute(2, 0, 1)  # (hw, b, d)
        pos = sine_positions(h, w, d, f.device)[:, None].expand(-1, b, -1)
        for layer in self.encoder:
            memory = layer(memory, pos)
        query_pos = self.query.weight[:, None].expand(-1, b, -1)
        t = torch.zeros_like(query_pos)
        for layer in self.decoder:
            t = layer(t, memory, pos, query_pos)
        t = self.dec_norm(t).transpose(0, 1)
        return self.cls(t), self.box(t).sigmoid()
