# Origin: https://github.com/pytorch/tutorials
#   file: beginner_source/nlp/sequence_models_tutorial.py
#   commit: f77e1c2c11be5d612ed9adbc73a8b82904162c23
#   url: https://github.com/pytorch/tutorials/blob/f77e1c2c11be5d612ed9adbc73a8b82904162c23/beginner_source/nlp/sequence_models_tutorial.py
# Licence: BSD-3-Clause (full text in ./LICENSE, copied from the repository, LICENSE at commit c53e7d4efc0e39e455c531d21ec7db28ba220214)
# Collected for nar's breadth validation set (third-party code).
# Changes from the original:
#   - kept the imports (minus torch.optim) and the LSTMTagger class; removed the tutorial text, toy data, prepare_sequence and the training loop
# --------------------------------------------------------------------------------------------------
import torch
import torch.autograd as autograd
import torch.nn as nn
import torch.nn.functional as F


class LSTMTagger(nn.Module):

    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super(LSTMTagger, self).__init__()
        self.hidden_dim = hidden_dim

        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)

        # The LSTM takes word embeddings as inputs, and outputs hidden states
        # with dimensionality hidden_dim.
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)

        # The linear layer that maps from hidden state space to tag space
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)
        self.hidden = self.init_hidden()

    def init_hidden(self):
        # Before we've done anything, we dont have any hidden state.
        # Refer to the Pytorch documentation to see exactly
        # why they have this dimensionality.
        # The axes semantics are (num_layers, minibatch_size, hidden_dim)
        return (autograd.Variable(torch.zeros(1, 1, self.hidden_dim)),
                autograd.Variable(torch.zeros(1, 1, self.hidden_dim)))

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, self.hidden = self.lstm(
            embeds.view(len(sentence), 1, -1), self.hidden)
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        tag_scores = F.log_softmax(tag_space, dim=1)
        return tag_scores
