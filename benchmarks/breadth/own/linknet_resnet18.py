"""LinkNet (Chaurasia & Culurciello arXiv:1707.03718), written for nar's breadth set: a ResNet-18
encoder whose four stages each pass their output to the decoder block of the same size, decoder
blocks of a 1x1 convolution to a quarter of the channels, a 3x3 transposed convolution upsampling by
2 and a 1x1 convolution, their outputs added to the encoder's, and two 3x3 convolutions and a transposed convolution back to the input's
size (the encoder's first stage keeps its input's size, as ResNet's does, so the paper's first
final transposed convolution has nothing left to undo)."""
import torch.nn as nn


def cbr(cin, cout, k, s=1, p=0):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


def tbr(cin, cout, k, s, p, op):
    return nn.Sequential(nn.ConvTranspose2d(cin, cout, k, s, p, op, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = cbr(cin, cout, 3, stride, 1)
        self.b = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) \
            if stride != 1 or cin != cout else nn.Identity()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.b(self.a(x)) + self.skip(x))


class Decoder(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        mid = cin // 4
        self.body = nn.Sequential(cbr(cin, mid, 1), tbr(mid, mid, 3, 2, 1, 1), cbr(mid, cout, 1))

    def forward(self, x):
        return self.body(x)


class LinkNet(nn.Module):
    def __init__(self, classes=1):
        super().__init__()
        self.init = nn.Sequential(cbr(3, 64, 7, 2, 3), nn.MaxPool2d(3, 2, 1))
        self.enc = nn.ModuleList([nn.Sequential(Residual(cin, cout, stride), Residual(cout, cout, 1))
                                  for cin, cout, stride in ((64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2))])
        self.dec = nn.ModuleList([Decoder(512, 256), Decoder(256, 128), Decoder(128, 64), Decoder(64, 64)])
        self.final = nn.Sequential(cbr(64, 32, 3, 1, 1), cbr(32, 32, 3, 1, 1),
                                   nn.ConvTranspose2d(32, classes, 2, 2))

    def forward(self, x):
        x = self.init(x)
        skips = []
        for stage in self.enc:
            x = stage(x)
            skips.append(x)
        e1, e2, e3, e4 = skips
        d = self.dec[0](e4) + e3
        d = self.dec[1](d) + e2
        d = self.dec[2](d) + e1
        d = self.dec[3](d)
        return self.final(d)
