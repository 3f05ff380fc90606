# EfficientNet-B0: MBConv blocks (expand 1x1, depthwise kxk, squeeze-excite on 1/4 of the block
# input width, project 1x1), swish written as x * sigmoid(x), stochastic depth on the residual
# path, 1280-channel head.
# Own re-implementation from "EfficientNet: Rethinking Model Scaling for Convolutional Neural
# Networks" (Tan & Le, 2019), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


def swish(x):
    return x * torch.sigmoid(x)


def drop_connect(x, p, training):
    if not training or p == 0.0:
        return x
    keep = 1.0 - p
    mask = torch.rand(x.shape[0], 1, 1, 1, device=x.device, dtype=x.dtype) < keep
    return x / keep * mask


class MBConv(nn.Module):
    def __init__(self, cin, cout, k, stride, expand, se_ratio=0.25, drop=0.0):
        super().__init__()
        mid = cin * expand
        self.expand = expand != 1
        if self.expand:
            self.expand_conv = nn.Conv2d(cin, mid, 1, bias=False)
            self.bn0 = nn.BatchNorm2d(mid, momentum=0.01, eps=1e-3)
        self.dw_conv = nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False)
        self.bn1 = nn.BatchNorm2d(mid, momentum=0.01, eps=1e-3)
        sq = max(1, int(cin * se_ratio))
        self.se_reduce = nn.Linear(mid, sq)
        self.se_expand = nn.Linear(sq, mid)
        self.project_conv = nn.Conv2d(mid, cout, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout, momentum=0.01, eps=1e-3)
        self.residual = stride == 1 and cin == cout
        self.drop = drop

    def forward(self, inputs):
        x = inputs
        if self.expand:
            x = swish(self.bn0(self.expand_conv(x)))
        x = swish(self.bn1(self.dw_conv(x)))
        s = x.mean((2, 3))
        s = self.se_expand(swish(self.se_reduce(s)))
        x = x * torch.sigmoid(s)[:, :, None, None]
        x = self.bn2(self.project_conv(x))
        if self.residual:
            x = drop_connect(x, self.drop, self.training) + inputs
        return x


class EfficientNetB0(nn.Module):
    # expand, kernel, stride, out, repeats
    blocks_args = [
        (1, 3, 1, 16, 1),
        (6, 3, 2, 24, 2),
        (6, 5, 2, 40, 2),
        (6, 3, 2, 80, 3),
        (6, 5, 1, 112, 3),
        (6, 5, 2, 192, 4),
        (6, 3, 1, 320, 1),
    ]

    def __init__(self, num_classes=1000, drop_connect_rate=0.2, dropout=0.2):
        super().__init__()
        self.conv_stem = nn.Conv2d(3, 32, 3, 2, 1, bias=False)
        self.bn0 = nn.BatchNorm2d(32, momentum=0.01, eps=1e-3)
        total = sum(r for *_, r in self.blocks_args)
        blocks, cin, idx = [], 32, 0
        for e, k, s, c, r in self.blocks_args:
            for i in range(r):
                blocks.append(MBConv(cin, c, k, s if i == 0 else 1, e,
                                     drop=drop_connect_rate * idx / total))
                cin = c
                idx += 1
        self.blocks = nn.ModuleList(blocks)
        self.conv_head = nn.Conv2d(320, 1280, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(1280, momentum=0.01, eps=1e-3)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = swish(self.bn0(self.conv_stem(x)))
        for b in self.blocks:
            x = b(x)
        x = swish(self.bn1(self.conv_head(x)))
        x = F.adaptive_avg_pool2d(x, 1).squeeze(-1).squeeze(-1)
        return self.fc(self.dropout(x))
