"""An encoder-decoder GRU with additive attention (Bahdanau et al. arXiv:1409.0473), written for nar's
breadth set. Teacher forcing: the decoder reads the target tokens, which the manifest's one input
supplies for both sides (source and target of one length)."""
import torch
import torch.nn as nn


class AdditiveAttention(nn.Module):
    def __init__(self, enc, dec, size):
        super().__init__()
        self.w_enc, self.w_dec, self.v = nn.Linear(enc, size, bias=False), nn.Linear(dec, size), nn.Linear(size, 1, bias=False)

    def forward(self, state, memory):
        scores = self.v(torch.tanh(self.w_enc(memory) + self.w_dec(state).unsqueeze(1))).squeeze(-1)
        weights = torch.softmax(scores, dim=-1)
        return torch.bmm(weights.unsqueeze(1), memory).squeeze(1)


class AttentionSeq2Seq(nn.Module):
    def __init__(self, vocab=8000, emb=256, hidden=512):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(vocab, emb), nn.Embedding(vocab, emb)
        self.encoder = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.attention = AdditiveAttention(2 * hidden, hidden, hidden)
        self.cell = nn.GRUCell(emb + 2 * hidden, hidden)
        self.out = nn.Linear(hidden + 2 * hidden + emb, vocab)

    def forward(self, tokens):
        memory, last = self.encoder(self.src_emb(tokens))
        state = torch.tanh(self.bridge(torch.cat([last[0], last[1]], dim=-1)))
        targets = self.tgt_emb(tokens)
        logits = []
        for t in range(tokens.shape[1]):
            context = self.attention(state, memory)
            state = self.cell(torch.cat([targets[:, t], context], dim=-1), state)
            logits.append(self.out(torch.cat([state, context, targets[:, t]], dim=-1)))
        return torch.stack(logits, dim=1)
