# BERT-base (uncased vocabulary): word + position + segment embeddings with LayerNorm, 12
# post-LN encoder layers (hidden 768, 12 heads, intermediate 3072, erf GELU), tanh pooler over the
# [CLS] token and a masked-LM head (transform + LN + decoder tied to the word embeddings).
# Own re-implementation from "BERT: Pre-training of Deep Bidirectional Transformers for Language
# Understanding" (Devlin et al., 2018), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# input: LongTensor of token ids (--input-shape 1,128 --input-dtype long); segment ids and the
# padding mask are optional.
import math
import torch
from torch import nn
import torch.nn.functional as F


class Embeddings(nn.Module):
    def __init__(self, vocab, hidden, max_pos, type_vocab, p):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden, padding_idx=0)
        self.position = nn.Embedding(max_pos, hidden)
        self.segment = nn.Embedding(type_vocab, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(p)

    def forward(self, ids, segments):
        pos = torch.arange(ids.size(1), device=ids.device).expand_as(ids)
        e = self.word(ids) + self.position(pos) + self.segment(segments)
        return self.dropout(self.norm(e))


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads, p):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(p)
        self.dense = nn.Linear(hidden, hidden)
        self.out_drop = nn.Dropout(p)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def split(self, x):
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, h, ext_mask):
        q, k, v = self.split(self.query(h)), self.split(self.key(h)), self.split(self.value(h))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + ext_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(h.size(0), h.size(1), -1)
        return self.norm(h + self.out_drop(self.dense(ctx)))


class FeedForward(nn.Module):
    def __init__(self, hidden, inter, p):
        super().__init__()
        self.intermediate = nn.Linear(hidden, inter)
        self.output = nn.Linear(inter, hidden)
        self.dropout = nn.Dropout(p)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, h):
        y = F.gelu(self.intermediate(h))
        return self.norm(h + self.dropout(self.output(y)))


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, inter, p):
        super().__init__()
        self.attention = SelfAttention(hidden, heads, p)
        self.ffn = FeedForward(hidden, inter, p)

    def forward(self, h, mask):
        return self.ffn(self.attention(h, mask))


class BertForPreTraining(nn.Module):
    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, inter=3072, max_pos=512, type_vocab=2, p=0.1):
        super().__init__()
        self.embeddings = Embeddings(vocab, hidden, max_pos, type_vocab, p)
        self.encoder = nn.ModuleList([EncoderLayer(hidden, heads, inter, p) for _ in range(layers)])
        self.pooler = nn.Linear(hidden, hidden)
        self.mlm_transform = nn.Linear(hidden, hidden)
        self.mlm_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.mlm_decoder = nn.Linear(hidden, vocab)
        self.mlm_decoder.weight = self.embeddings.word.weight
        self.nsp = nn.Linear(hidden, 2)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        ext = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        h = self.embeddings(input_ids, token_type_ids)
        for layer in self.encoder:
            h = layer(h, ext)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        mlm = self.mlm_decoder(self.mlm_norm(F.gelu(self.mlm_transform(h))))
        return mlm, self.nsp(pooled)
