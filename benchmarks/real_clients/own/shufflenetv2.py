# ShuffleNet V2 1.0x (224x224): channel split, two-branch units with channel shuffle
# (view/transpose/view), stage widths 116/232/464 with 4/8/4 units, 1024-channel conv5.
# Own re-implementation from "ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture
# Design" (Ma et al., 2018), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn


def channel_shuffle(x, groups=2):
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    x = x.transpose(1, 2).contiguous()
    return x.view(n, c, h, w)


def conv_bn_relu(cin, cout, k=1, s=1, relu=True, groups=1):
    mods = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if relu:
        mods.append(nn.ReLU(inplace=True))
    return nn.Sequential(*mods)


class ShuffleUnit(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        half = cout // 2
        if stride == 2:
            self.left = nn.Sequential(
                conv_bn_relu(cin, cin, 3, 2, relu=False, groups=cin),
                conv_bn_relu(cin, half, 1),
            )
            right_in = cin
        else:
            self.left = None
            right_in = half
        self.right = nn.Sequential(
            conv_bn_relu(right_in, half, 1),
            conv_bn_relu(half, half, 3, stride, relu=False, groups=half),
            conv_bn_relu(half, half, 1),
        )

    def forward(self, x):
        if self.stride == 1:
            a, b = x.chunk(2, dim=1)
            out = torch.cat([a, self.right(b)], 1)
        else:
            out = torch.cat([self.left(x), self.right(x)], 1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, widths=(24, 116, 232, 464, 1024), repeats=(4, 8, 4), num_classes=1000):
        super().__init__()
        self.conv1 = conv_bn_relu(3, widths[0], 3, 2)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages = []
        cin = widths[0]
        for cout, n in zip(widths[1:4], repeats):
            units = [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(n - 1)]
            stages.append(nn.Sequential(*units))
            cin = cout
        self.stage2, self.stage3, self.stage4 = stages
        self.conv5 = conv_bn_relu(cin, widths[4], 1)
        self.fc = nn.Linear(widths[4], num_classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        x = self.stage4(self.stage3(self.stage2(x)))
        x = self.conv5(x)
        x = x.mean([2, 3])
        return self.fc(x)
