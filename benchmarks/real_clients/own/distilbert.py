# DistilBERT (6 layers, hidden 768, 12 heads, FFN 3072) with a sequence-classification head:
# word + position embeddings (no segment embeddings) with LayerNorm, post-LN transformer layers,
# [CLS] -> pre-classifier Linear + ReLU -> dropout -> classifier.
# Own re-implementation from "DistilBERT, a distilled version of BERT: smaller, faster, cheaper and
# lighter" (Sanh et al., 2019), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# input: LongTensor of token ids, e.g. --input-shape 1,128 --input-dtype long
import math
import torch
import torch.nn as nn


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, dim, n_heads, dropout):
        super().__init__()
        self.n_heads = n_heads
        self.q_lin = nn.Linear(dim, dim)
        self.k_lin = nn.Linear(dim, dim)
        self.v_lin = nn.Linear(dim, dim)
        self.out_lin = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask):
        bs, n, dim = x.size()
        dph = dim // self.n_heads

        def shape(t):
            return t.view(bs, -1, self.n_heads, dph).transpose(1, 2)

        q = shape(self.q_lin(x)) / math.sqrt(dph)
        k = shape(self.k_lin(x))
        v = shape(self.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        scores = scores.masked_fill((mask == 0).view(bs, 1, 1, n), torch.finfo(scores.dtype).min)
        weights = self.dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.matmul(weights, v).transpose(1, 2).reshape(bs, -1, dim)
        return self.out_lin(ctx)


class TransformerBlock(nn.Module):
    def __init__(self, dim, n_heads, hidden, dropout):
        super().__init__()
        self.attention = MultiHeadSelfAttention(dim, n_heads, dropout)
        self.sa_layer_norm = nn.LayerNorm(dim, eps=1e-12)
        self.lin1 = nn.Linear(dim, hidden)
        self.lin2 = nn.Linear(hidden, dim)
        self.act = nn.GELU()
        self.drop = nn.Dropout(dropout)
        self.output_layer_norm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x, mask):
        x = self.sa_layer_norm(self.attention(x, mask) + x)
        y = self.drop(self.lin2(self.act(self.lin1(x))))
        return self.output_layer_norm(y + x)


class DistilBertClassifier(nn.Module):
    def __init__(self, vocab=30522, max_pos=512, dim=768, n_layers=6, n_heads=12, hidden=3072,
                 dropout=0.1, num_labels=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, dim, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, dim)
        self.emb_norm = nn.LayerNorm(dim, eps=1e-12)
        self.emb_drop = nn.Dropout(dropout)
        self.layer = nn.ModuleList([TransformerBlock(dim, n_heads, hidden, dropout) for _ in range(n_layers)])
        self.pre_classifier = nn.Linear(dim, dim)
        self.classifier = nn.Linear(dim, num_labels)
        self.dropout = nn.Dropout(0.2)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        pos = torch.arange(input_ids.size(1), dtype=torch.long, device=input_ids.device)[None]
        h = self.emb_drop(self.emb_norm(self.word_embeddings(input_ids) + self.position_embeddings(pos)))
        for blk in self.layer:
            h = blk(h, attention_mask)
        pooled = torch.relu(self.pre_classifier(h[:, 0]))
        return self.classifier(self.dropout(pooled))
