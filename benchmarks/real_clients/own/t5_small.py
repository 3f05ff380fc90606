# T5-small encoder-decoder: shared token embedding (32128 x 512), 6 encoder + 6 decoder layers,
# 8 heads of 64, ReLU feed-forward 2048, pre-norm with a scale-only RMS LayerNorm, bucketed
# relative position bias computed in the first layer of each stack and shared by the rest,
# no 1/sqrt(d) attention scaling, cross-attention in the decoder, tied LM head (scaled by d^-0.5).
# Own re-implementation from "Exploring the Limits of Transfer Learning with a Unified Text-to-Text
# Transformer" (Raffel et al., 2019), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# input: LongTensor of encoder token ids (--input-shape 1,32 --input-dtype long); when no decoder
# ids are passed, the encoder ids shifted right by one (start id 0) are used, as in teacher forcing.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class T5Norm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def bucket(rel, bidirectional, num_buckets=32, max_distance=128):
    out = torch.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        out = out + (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = (-rel).clamp(min=0)
    max_exact = num_buckets // 2
    small = n < max_exact
    large = max_exact + (
        torch.log(n.float() / max_exact + 1e-6) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).long()
    large = large.clamp(max=num_buckets - 1)
    return out + torch.where(small, n, large)


class MultiHead(nn.Module):
    def __init__(self, d_model, n_heads, d_kv, has_bias=False, bidirectional=True):
        super().__init__()
        inner = n_heads * d_kv
        self.h, self.dk = n_heads, d_kv
        self.q = nn.Linear(d_model, inner, bias=False)
        self.k = nn.Linear(d_model, inner, bias=False)
        self.v = nn.Linear(d_model, inner, bias=False)
        self.o = nn.Linear(inner, d_model, bias=False)
        self.bidirectional = bidirectional
        self.rel_bias = nn.Embedding(32, n_heads) if has_bias else None

    def compute_bias(self, qlen, klen, device):
        ctx = torch.arange(qlen, device=device)[:, None]
        mem = torch.arange(klen, device=device)[None, :]
        b = bucket(mem - ctx, self.bidirectional)
        return self.rel_bias(b).permute(2, 0, 1).unsqueeze(0)  # 1, h, q, k

    def forward(self, x, kv=None, bias=None, causal=False):
        kv = x if kv is None else kv
        B, Lq, _ = x.shape
        Lk = kv.shape[1]
        q = self.q(x).view(B, Lq, self.h, self.dk).transpose(1, 2)
        k = self.k(kv).view(B, Lk, self.h, self.dk).transpose(1, 2)
        v = self.v(kv).view(B, Lk, self.h, self.dk).transpose(1, 2)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k)
        if bias is None and self.rel_bias is not None:
            bias = self.compute_bias(Lq, Lk, x.device)
            if causal:
                m = torch.triu(torch.ones(Lq, Lk, dtype=torch.bool, device=x.device), 1)
                bias = bias.masked_fill(m, float("-inf"))
        if bias is not None:
            scores = scores + bias
        attn = F.softmax(scores.float(), dim=-1).type_as(scores)
        ctx = torch.einsum("bhqk,bhkd->bhqd", attn, v).transpose(1, 2).reshape(B, Lq, -1)
        return self.o(ctx), bias


class DenseReLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.wo(self.drop(F.relu(self.wi(x))))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_kv, d_ff, first):
        super().__init__()
        self.ln1 = T5Norm(d_model)
        self.attn = MultiHead(d_model, n_heads, d_kv, has_bias=first, bidirectional=True)
        self.ln2 = T5Norm(d_model)
        self.ff = DenseReLU(d_model, d_ff)

    def forward(self, x, bias):
        a, bias = self.attn(self.ln1(x), bias=bias)
        x = x + a
        return x + self.ff(self.ln2(x)), bias


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_kv, d_ff, first):
        super().__init__()
        self.ln1 = T5Norm(d_model)
        self.self_attn = MultiHead(d_model, n_heads, d_kv, has_bias=first, bidirectional=False)
        self.ln2 = T5Norm(d_model)
        self.cross_attn = MultiHead(d_model, n_heads, d_kv)
        self.ln3 = T5Norm(d_model)
        self.ff = DenseReLU(d_model, d_ff)

    def forward(self, y, memory, bias):
        a, bias = self.self_attn(self.ln1(y), bias=bias, causal=True)
        y = y + a
        c, _ = self.cross_attn(self.ln2(y), kv=memory)
        y = y + c
        return y + self.ff(self.ln3(y)), bias


class T5(nn.Module):
    def __init__(self, vocab=32128, d_model=512, d_kv=64, d_ff=2048, n_layers=6, n_heads=8):
        super().__init__()
        self.d_model = d_model
        self.shared = nn.Embedding(vocab, d_model)
        self.encoder = nn.ModuleList([EncoderLayer(d_model, n_heads, d_kv, d_ff, i == 0) for i in range(n_layers)])
        self.enc_norm = T5Norm(d_model)
        self.decoder = nn.ModuleList([DecoderLayer(d_model, n_heads, d_kv, d_ff, i == 0) for i in range(n_layers)])
        self.dec_norm = T5Norm(d_model)
        self.dropout = nn.Dropout(0.1)

    def encode(self, ids):
        x = self.dropout(self.shared(ids))
        bias = None
        for layer in self.encoder:
            x, bias = layer(x, bias)
        return self.dropout(self.enc_norm(x))

    def forward(self, input_ids, decoder_input_ids=None):
        if decoder_input_ids is None:
            decoder_input_ids = F.pad(input_ids[:, :-1], (1, 0), value=0)
        memory = self.encode(input_ids)
        y = self.dropout(self.shared(decoder_input_ids))
        bias = None
        for layer in self.decoder:
            y, bias = layer(y, memory, bias)
        y = self.dropout(self.dec_norm(y)) * (self.d_model ** -0.5)
        return y @ self.shared.weight.t()
