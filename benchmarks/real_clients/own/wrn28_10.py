# Wide ResNet WRN-28-10 for CIFAR: pre-activation basic blocks (BN-ReLU-conv), widen factor 10,
# (28 - 4) / 6 = 4 blocks per group, dropout between the two convolutions.
# Own re-implementation from "Wide Residual Networks" (Zagoruyko & Komodakis, 2016),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# --model: WideResNet(depth=28, widen=10)
import torch.nn as nn
import torch.nn.functional as F


class WideBlock(nn.Module):
    def __init__(self, cin, cout, stride, drop):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.drop = drop
        self.equal = cin == cout and stride == 1
        self.short = None if self.equal else nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        o = F.relu(self.bn1(x))
        shortcut = x if self.equal else self.short(o)
        y = self.conv1(o)
        y = F.relu(self.bn2(y))
        if self.drop > 0:
            y = F.dropout(y, p=self.drop, training=self.training)
        y = self.conv2(y)
        return y + shortcut


class WideResNet(nn.Module):
    def __init__(self, depth=28, widen=10, num_classes=10, drop=0.3):
        super().__init__()
        assert (depth - 4) % 6 == 0
        n = (depth - 4) // 6
        ch = [16, 16 * widen, 32 * widen, 64 * widen]
        self.conv1 = nn.Conv2d(3, ch[0], 3, 1, 1, bias=False)
        self.group1 = self._group(ch[0], ch[1], n, 1, drop)
        self.group2 = self._group(ch[1], ch[2], n, 2, drop)
        self.group3 = self._group(ch[2], ch[3], n, 2, drop)
        self.bn = nn.BatchNorm2d(ch[3])
        self.fc = nn.Linear(ch[3], num_classes)

    @staticmethod
    def _group(cin, cout, n, stride, drop):
        return nn.Sequential(*[WideBlock(cin if i == 0 else cout, cout, stride if i == 0 else 1, drop)
                               for i in range(n)])

    def forward(self, x):
        out = self.conv1(x)
        out = self.group3(self.group2(self.group1(out)))
        out = F.relu(self.bn(out))
        out = F.avg_pool2d(out, 8)
        out = out.view(-1, self.fc.in_features)
        return self.fc(out)
