"""A word-level LSTM language model with tied embeddings (Press & Wolf, arXiv:1608.05859), written for nar's breadth set."""
import torch.nn as nn


class WordLM(nn.Module):
    def __init__(self, ntoken=33278, ninp=400, nlayers=3, dropout=0.3):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, ninp, nlayers, dropout=dropout)
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight

    def forward(self, tokens):
        emb = self.drop(self.encoder(tokens.t()))
        output, _ = self.rnn(emb)
        return self.decoder(self.drop(output)).transpose(0, 1)
