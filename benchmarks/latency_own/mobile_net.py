"""A small MobileNetV2-style network (inverted residuals, width 0.75) for 160x160 images."""
from torch import nn


def conv_bn(cin, cout, k, s, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, nn.ReLU6(inplace=True)) if act else nn.Sequential(*layers)


class Inverted(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.body = nn.Sequential(conv_bn(cin, mid, 1, 1), conv_bn(mid, mid, 3, stride, groups=mid),
                                  conv_bn(mid, cout, 1, 1, act=False))

    def forward(self, x):
        return x + self.body(x) if self.use_res else self.body(x)


class MobileNet(nn.Module):
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 3, 2), (6, 96, 2, 1), (6, 160, 2, 2), (6, 320, 1, 1)]

    def __init__(self, classes=100, width=0.75):
        super().__init__()
        cin = int(32 * width)
        layers = [conv_bn(3, cin, 3, 2)]
        for expand, c, n, s in self.SETTINGS:
            cout = int(c * width)
            for i in range(n):
                layers.append(Inverted(cin, cout, s if i == 0 else 1, expand))
                cin = cout
        layers.append(conv_bn(cin, 1024, 1, 1))
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(1024, classes))

    def forward(self, x):
        return self.head(self.features(x))
