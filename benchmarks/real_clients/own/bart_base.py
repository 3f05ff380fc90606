# BART-base sequence-to-sequence model: shared byte-level BPE embedding (50265 x 768), learned
# positions with an offset of 2, embedding LayerNorm, 6 post-LN encoder layers and 6 post-LN decoder
# layers (12 heads, FFN 3072, GELU; decoder adds causal self-attention and cross-attention),
# LM head tied to the shared embedding plus a final logits bias.
# Own re-implementation from "BART: Denoising Sequence-to-Sequence Pre-training for Natural Language
# Generation, Translation, and Comprehension" (Lewis et al., 2019), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# input: LongTensor of token ids (--input-shape 1,32 --input-dtype long); decoder ids default to the
# input shifted right with the decoder start id 2.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d, heads, p=0.1):
        super().__init__()
        self.heads = heads
        self.scaling = (d // heads) ** -0.5
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)
        self.p = p

    def forward(self, x, mem=None, causal_mask=None):
        src = x if mem is None else mem
        B, T, D = x.shape
        S = src.shape[1]
        hd = D // self.heads
        q = (self.q_proj(x) * self.scaling).view(B, T, self.heads, hd).transpose(1, 2)
        k = self.k_proj(src).view(B, S, self.heads, hd).transpose(1, 2)
        v = self.v_proj(src).view(B, S, self.heads, hd).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2))
        if causal_mask is not None:
            w = w + causal_mask
        w = F.dropout(w.softmax(-1), self.p, self.training)
        o = torch.matmul(w, v).transpose(1, 2).reshape(B, T, D)
        return self.out_proj(o)


class EncLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.fc2 = nn.Linear(ff, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, x):
        x = self.self_attn_layer_norm(x + F.dropout(self.self_attn(x), 0.1, self.training))
        y = self.fc2(F.dropout(F.gelu(self.fc1(x)), 0.0, self.training))
        return self.final_layer_norm(x + F.dropout(y, 0.1, self.training))


class DecLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.self_attn = Attention(d, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = Attention(d, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.fc2 = nn.Linear(ff, d)
        self.final_layer_norm = nn.LayerNorm(d)

    def forward(self, x, mem, mask):
        x = self.self_attn_layer_norm(x + self.self_attn(x, causal_mask=mask))
        x = self.encoder_attn_layer_norm(x + self.encoder_attn(x, mem=mem))
        return self.final_layer_norm(x + self.fc2(F.gelu(self.fc1(x))))


class LearnedPositions(nn.Embedding):
    OFFSET = 2

    def __init__(self, n, d):
        super().__init__(n + self.OFFSET, d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device) + self.OFFSET
        return super().forward(pos)


class BartForConditionalGeneration(nn.Module):
    def __init__(self, vocab=50265, d=768, layers=6, heads=12, ff=3072, max_pos=1024, pad_id=1, start_id=2):
        super().__init__()
        self.pad_id, self.start_id = pad_id, start_id
        self.shared = nn.Embedding(vocab, d, padding_idx=pad_id)
        self.enc_pos = LearnedPositions(max_pos, d)
        self.dec_pos = LearnedPositions(max_pos, d)
        self.enc_ln_emb = nn.LayerNorm(d)
        self.dec_ln_emb = nn.LayerNorm(d)
        self.encoder_layers = nn.ModuleList([EncLayer(d, heads, ff) for _ in range(layers)])
        self.decoder_layers = nn.ModuleList([DecLayer(d, heads, ff) for _ in range(layers)])
        self.register_buffer("final_logits_bias", torch.zeros(1, vocab))

    def shift_right(self, ids):
        out = torch.full_like(ids, self.start_id)
        out[:, 1:] = ids[:, :-1]
        return out

    def forward(self, input_ids, decoder_input_ids=None):
        if decoder_input_ids is None:
            decoder_input_ids = self.shift_right(input_ids)
        x = self.enc_ln_emb(self.shared(input_ids) + self.enc_pos(input_ids))
        x = F.dropout(x, 0.1, self.training)
        for layer in self.encoder_layers:
            x = layer(x)
        T = decoder_input_ids.shape[1]
        mask = torch.full((T, T), float("-inf"), device=x.device).triu(1)
        y = self.dec_ln_emb(self.shared(decoder_input_ids) + self.dec_pos(decoder_input_ids))
        for layer in self.decoder_layers:
            y = layer(y, x, mask)
        return F.linear(y, self.shared.weight) + self.final_logits_bias
