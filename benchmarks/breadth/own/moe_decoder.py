"""A sparse mixture-of-experts decoder in the manner of Mixtral (Jiang et al., arXiv:2401.04088),
written for nar's breadth set: RMSNorm, grouped-query attention with rotary position embeddings,
and in each layer a router that sends every token to its top 2 of 8 SwiGLU experts."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def rotate(x, cos, sin):
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-b, a), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q = nn.Linear(d, heads * self.hd, bias=False)
        self.kv = nn.Linear(d, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(heads * self.hd, d, bias=False)

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(out.transpose(1, 2).reshape(b, n, -1))


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False), \
            nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class SparseMoE(nn.Module):
    def __init__(self, d, hidden, experts=8, top=2):
        super().__init__()
        self.router = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList([Expert(d, hidden) for _ in range(experts)])
        self.top = top

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        weights, chosen = torch.topk(self.router(flat).softmax(-1), self.top, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):  # dense over experts, weighted by the routing mask
            mask = (chosen == e).to(flat.dtype) * weights
            out = out + expert(flat) * mask.sum(-1, keepdim=True)
        return out.view_as(x)


class MoEDecoder(nn.Module):
    def __init__(self, vocab=32000, d=512, layers=8, heads=8, kv_heads=2, hidden=1408, context=2048):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.attn_norms = nn.ModuleList([RMSNorm(d) for _ in range(layers)])
        self.attns = nn.ModuleList([Attention(d, heads, kv_heads) for _ in range(layers)])
        self.moe_norms = nn.ModuleList([RMSNorm(d) for _ in range(layers)])
        self.moes = nn.ModuleList([SparseMoE(d, hidden) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        inv = 1.0 / (1e6 ** (torch.arange(0, hd, 2).float() / hd))
        angles = torch.outer(torch.arange(context).float(), inv)
        self.register_buffer("cos", torch.cat((angles, angles), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((angles, angles), -1).sin(), persistent=False)

    def forward(self, tokens):
        n = tokens.shape[1]
        cos, sin = self.cos[:n], self.sin[:n]
        h = self.embed(tokens)
        for an, attn, mn, moe in zip(self.attn_norms, self.attns, self.moe_norms, self.moes):
            h = h + attn(an(h), cos, sin)
            h = h + moe(mn(h))
        return self.head(self.norm(h))
