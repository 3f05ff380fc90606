# MobileNet v1 (width 1.0, 224x224): full 3x3/2 conv stem then 13 depthwise-separable blocks
# (3x3 depthwise + BN + ReLU, 1x1 pointwise + BN + ReLU), global average pool, FC.
# Own re-implementation from "MobileNets: Efficient Convolutional Neural Networks for Mobile Vision
# Applications" (Howard et al., 2017), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch.nn as nn


def dw_sep(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
        nn.BatchNorm2d(cin),
        nn.ReLU(inplace=True),
        nn.Conv2d(cin, cout, 1, 1, 0, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class MobileNetV1(nn.Module):
    # (out_channels, stride) for the 13 separable blocks
    spec = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
            (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]

    def __init__(self, num_classes=1000):
        super().__init__()
        layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True)]
        c = 32
        for out, s in self.spec:
            layers.append(dw_sep(c, out, s))
            c = out
        self.model = nn.Sequential(*layers)
        self.fc = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = self.model(x)
        x = x.mean([2, 3])
        return self.fc(x)
