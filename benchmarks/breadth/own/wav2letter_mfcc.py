"""Wav2Letter (Collobert et al. arXiv:1609.03193) over 13 MFCCs, written for nar's breadth set: a
strided first convolution, seven 250-channel convolutions, two wide ones and a 1x1 to the letters."""
import torch.nn as nn


def block(cin, cout, kernel, stride=1, dilation=1):
    return [nn.Conv1d(cin, cout, kernel, stride=stride, padding=dilation * (kernel // 2), dilation=dilation), nn.ReLU(inplace=True)]


class Wav2Letter(nn.Module):
    def __init__(self, mfcc=13, letters=29):
        super().__init__()
        layers = block(mfcc, 250, 48, stride=2)
        for _ in range(7):
            layers += block(250, 250, 7)
        layers += block(250, 2000, 32, dilation=1) + block(2000, 2000, 1)
        layers.append(nn.Conv1d(2000, letters, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, mfccs):
        return self.net(mfccs).log_softmax(dim=1)
