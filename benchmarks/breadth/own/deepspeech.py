"""Deep Speech (Hannun et al. arXiv:1412.5567), written for nar's breadth set: three fully connected
layers with clipped ReLU over spectrogram frames with context, a bidirectional recurrent layer whose
two directions are summed, a fourth fully connected layer and per-frame character scores."""
import torch
import torch.nn as nn


class DeepSpeech(nn.Module):
    def __init__(self, features=161, context=9, hidden=1024, characters=29):
        super().__init__()
        self.context = context
        width = features * (2 * context + 1)
        self.fc = nn.ModuleList([nn.Linear(width, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)])
        self.rnn = nn.RNN(hidden, hidden, batch_first=True, bidirectional=True, nonlinearity="relu")
        self.fc4 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, characters)

    def forward(self, spectrogram):  # (batch, time, features)
        padded = nn.functional.pad(spectrogram, (0, 0, self.context, self.context))
        frames = padded.unfold(1, 2 * self.context + 1, 1).flatten(2)
        x = frames
        for layer in self.fc:
            x = torch.clamp(torch.relu(layer(x)), max=20.0)
        both, _ = self.rnn(x)
        forward, backward = both.chunk(2, dim=-1)
        x = torch.clamp(torch.relu(self.fc4(forward + backward)), max=20.0)
        return self.out(x).log_softmax(dim=-1)
