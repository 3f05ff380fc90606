# Whisper "tiny" encoder-decoder: log-mel input (80 x 3000) through two Conv1d+GELU layers (the
# second with stride 2), fixed sinusoidal positions, 4 pre-LN encoder blocks (width 384, 6 heads);
# text decoder with learned positions, 4 blocks of causal self-attention + cross-attention + MLP,
# logits from the transposed token embedding. Key projections have no bias.
# Own re-implementation from "Robust Speech Recognition via Large-Scale Weak Supervision"
# (Radford et al., 2022), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# input: float log-mel spectrogram, --input-shape 1,80,3000. Decoder tokens default to a short
# start-of-transcript prompt when not given.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoids(length, channels, max_timescale=10000):
    inc = math.log(max_timescale) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d, bias=False)
        self.value = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x, xa=None, causal=False):
        src = x if xa is None else xa
        q, k, v = self.query(x), self.key(src), self.value(src)
        B, T, D = q.shape
        S = k.shape[1]
        hd = D // self.h
        q = q.view(B, T, self.h, hd).permute(0, 2, 1, 3)
        k = k.view(B, S, self.h, hd).permute(0, 2, 1, 3)
        v = v.view(B, S, self.h, hd).permute(0, 2, 1, 3)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return self.out(o.permute(0, 2, 1, 3).flatten(2))


class ResidualBlock(nn.Module):
    def __init__(self, d, h, cross=False):
        super().__init__()
        self.attn_ln = nn.LayerNorm(d)
        self.attn = MultiHeadAttention(d, h)
        self.cross = cross
        if cross:
            self.cross_ln = nn.LayerNorm(d)
            self.cross_attn = MultiHeadAttention(d, h)
        self.mlp_ln = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, xa=None):
        x = x + self.attn(self.attn_ln(x), causal=self.cross)
        if self.cross:
            x = x + self.cross_attn(self.cross_ln(x), xa)
        return x + self.mlp(self.mlp_ln(x))


class AudioEncoder(nn.Module):
    def __init__(self, n_mels, n_ctx, d, h, n_layer):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, d), persistent=False)
        self.blocks = nn.ModuleList([ResidualBlock(d, h) for _ in range(n_layer)])
        self.ln_post = nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x))
        x = x.permute(0, 2, 1)
        x = x + self.positional_embedding[: x.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.ln_post(x)


class TextDecoder(nn.Module):
    def __init__(self, vocab, n_ctx, d, h, n_layer):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, d)
        self.positional_embedding = nn.Parameter(torch.empty(n_ctx, d).normal_(0, 0.01))
        self.blocks = nn.ModuleList([ResidualBlock(d, h, cross=True) for _ in range(n_layer)])
        self.ln = nn.LayerNorm(d)

    def forward(self, tokens, audio):
        x = self.token_embedding(tokens) + self.positional_embedding[: tokens.shape[-1]]
        for b in self.blocks:
            x = b(x, audio)
        x = self.ln(x)
        return x @ self.token_embedding.weight.t()


class Whisper(nn.Module):
    SOT_PROMPT = [50258, 50259, 50359, 50363]

    def __init__(self, n_mels=80, n_audio_ctx=1500, n_vocab=51865, n_text_ctx=448, d=384, heads=6, layers=4):
        super().__init__()
        self.encoder = AudioEncoder(n_mels, n_audio_ctx, d, heads, layers)
        self.decoder = TextDecoder(n_vocab, n_text_ctx, d, heads, layers)

    def forward(self, mel, tokens=None):
        if tokens is None:
            tokens = torch.tensor([self.SOT_PROMPT], dtype=torch.long, device=mel.device).expand(mel.shape[0], -1)
        return self.decoder(tokens, self.encoder(mel))
