"""WaveRNN (Kalchbrenner et al. arXiv:1802.08435) as a mel-conditioned vocoder (the layout of
fatchord's and torchaudio's), written for nar's breadth set: a residual network over the mel
spectrogram, an upsampling network of stretched 2-D convolutions, both split into four conditioning
streams; a GRU over the waveform samples with the conditioning, two dense layers each given a stream,
and a softmax over 2^bits classes."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(channels, channels, 1, bias=False), nn.BatchNorm1d(channels),
                                  nn.ReLU(inplace=True), nn.Conv1d(channels, channels, 1, bias=False),
                                  nn.BatchNorm1d(channels))

    def forward(self, x):
        return x + self.body(x)


class MelResNet(nn.Module):
    def __init__(self, mels, hidden, out, blocks, pad):
        super().__init__()
        self.inp = nn.Sequential(nn.Conv1d(mels, hidden, 2 * pad + 1, bias=False), nn.BatchNorm1d(hidden),
                                 nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(*[ResBlock(hidden) for _ in range(blocks)])
        self.out = nn.Conv1d(hidden, out, 1)

    def forward(self, mel):
        return self.out(self.blocks(self.inp(mel)))


class Stretch(nn.Module):
    def __init__(self, x_scale):
        super().__init__()
        self.x_scale = x_scale

    def forward(self, x):
        return x.repeat_interleave(self.x_scale, dim=-1)


class Upsampler(nn.Module):
    def __init__(self, scales, mels, hidden, out, blocks, pad):
        super().__init__()
        total = 1
        for s in scales:
            total *= s
        self.total, self.pad = total, pad
        self.resnet = MelResNet(mels, hidden, out, blocks, pad)
        self.resnet_stretch = Stretch(total)
        layers = []
        for s in scales:
            conv = nn.Conv2d(1, 1, (1, 2 * s + 1), padding=(0, s), bias=False)
            layers += [Stretch(s), conv]
        self.up = nn.Sequential(*layers)

    def forward(self, mel):
        aux = self.resnet_stretch(self.resnet(mel).unsqueeze(1)).squeeze(1)
        mel = self.up(mel.unsqueeze(1)).squeeze(1)
        trim = self.pad * self.total
        return mel[:, :, trim:-trim].transpose(1, 2), aux.transpose(1, 2)


class WaveRNN(nn.Module):
    def __init__(self, bits=9, mels=80, rnn=512, fc=512, hop=200, scales=(5, 5, 8), res_blocks=10, pad=2):
        super().__init__()
        self.aux = 32
        self.upsample = Upsampler(scales, mels, 128, 4 * self.aux, res_blocks, pad)
        self.inp = nn.Linear(mels + self.aux + 1, rnn)
        self.rnn1 = nn.GRU(rnn, rnn, batch_first=True)
        self.rnn2 = nn.GRU(rnn + self.aux, rnn, batch_first=True)
        self.fc1 = nn.Linear(rnn + self.aux, fc)
        self.fc2 = nn.Linear(fc + self.aux, fc)
        self.out = nn.Linear(fc, 2 ** bits)

    def forward(self, wave, mel):
        cond, aux = self.upsample(mel)
        a1, a2, a3, a4 = aux.split(self.aux, dim=-1)
        x = self.inp(torch.cat([wave.unsqueeze(-1), cond, a1], dim=-1))
        x = x + self.rnn1(x)[0]
        x = x + self.rnn2(torch.cat([x, a2], dim=-1))[0]
        x = F.relu(self.fc1(torch.cat([x, a3], dim=-1)))
        x = F.relu(self.fc2(torch.cat([x, a4], dim=-1)))
        return self.out(x)
