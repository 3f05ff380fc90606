# ResNet-56 for CIFAR-10, the 6n+2 design of the paper's CIFAR section: 3x3 conv (16 ch), three
# stages of n=9 basic blocks with 16/32/64 filters, parameter-free "option A" shortcuts (stride-2
# subsampling plus zero-padding of the new channels), global average pooling, 10-way FC.
# Own re-implementation from "Deep Residual Learning for Image Recognition" (He et al., 2015),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# --model: resnet_cifar(56)   (20 / 32 / 44 / 56 / 110 all valid)
import torch
import torch.nn as nn
import torch.nn.functional as F


class PadShortcut(nn.Module):
    def __init__(self, extra):
        super().__init__()
        self.extra = extra

    def forward(self, x):
        x = x[:, :, ::2, ::2]
        return F.pad(x, (0, 0, 0, 0, self.extra // 2, self.extra // 2))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv_a = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn_a = nn.BatchNorm2d(cout)
        self.conv_b = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn_b = nn.BatchNorm2d(cout)
        self.shortcut = PadShortcut(cout - cin) if (stride != 1 or cin != cout) else nn.Identity()

    def forward(self, x):
        y = F.relu(self.bn_a(self.conv_a(x)))
        y = self.bn_b(self.conv_b(y))
        return F.relu(y + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, n, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        layers = []
        cin = 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(n):
                layers.append(Block(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = self.layers(x)
        x = F.avg_pool2d(x, x.size()[3])
        return self.fc(x.view(x.size(0), -1))


def resnet_cifar(depth=56, num_classes=10):
    assert (depth - 2) % 6 == 0
    return CifarResNet((depth - 2) // 6, num_classes)
