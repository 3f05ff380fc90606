"""A Mamba language model (Gu & Dao, arXiv:2312.00752), written for nar's breadth set: RMSNorm,
an input projection split into the SSM branch and a gate, a causal depthwise convolution, the
input-dependent (selective) dt, B and C, a sequential selective scan, and the output projection."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaBlock(nn.Module):
    def __init__(self, d_model, d_state=16, expand=2, d_conv=4):
        super().__init__()
        inner = expand * d_model
        self.dt_rank = math.ceil(d_model / 16)
        self.in_proj = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, d_conv, groups=inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(inner, self.dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, inner)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1).float()).repeat(inner, 1))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d_model, bias=False)
        self.d_state = d_state

    def forward(self, x):
        length = x.shape[1]
        u, gate = self.in_proj(x).chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :length].transpose(1, 2))
        dt, B, C = self.x_proj(u).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))  # (b, l, inner)
        A = -torch.exp(self.A_log)  # (inner, n)
        dA = torch.exp(dt[..., None] * A)  # (b, l, inner, n)
        dBu = dt[..., None] * B[:, :, None] * u[..., None]
        state = torch.zeros_like(dA[:, 0])
        ys = []
        for i in range(length):
            state = dA[:, i] * state + dBu[:, i]
            ys.append((state * C[:, i, None]).sum(-1))
        y = torch.stack(ys, dim=1) + u * self.D
        return self.out_proj(y * F.silu(gate))


class MambaLM(nn.Module):
    def __init__(self, vocab=50280, d_model=768, layers=24):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.norms = nn.ModuleList([RMSNorm(d_model) for _ in range(layers)])
        self.blocks = nn.ModuleList([MambaBlock(d_model) for _ in range(layers)])
        self.norm_f = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, tokens):
        h = self.embed(tokens)
        for norm, block in zip(self.norms, self.blocks):
            h = h + block(norm(h))
        return self.lm_head(self.norm_f(h))
