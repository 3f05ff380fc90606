# PoolFormer-S12: MetaFormer with average pooling as the token mixer. 7x7/4 stem conv, four stages
# of [2, 2, 6, 2] blocks with widths [64, 128, 320, 512]; each block is GroupNorm(1) -> (avgpool3x3 - x)
# -> layer scale -> residual, then GroupNorm(1) -> 1x1 conv MLP (ratio 4, GELU) -> layer scale ->
# residual; 3x3/2 conv downsampling, final norm, mean pooling, linear head.
# Own re-implementation from "MetaFormer is Actually What You Need for Vision" (Yu et al., 2021),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


class Pooling(nn.Module):
    def forward(self, x):
        return F.avg_pool2d(x, 3, 1, 1, count_include_pad=False) - x


class ConvMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Conv2d(dim, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, dim, 1)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class PoolFormerBlock(nn.Module):
    def __init__(self, dim, mlp_ratio=4, ls=1e-5):
        super().__init__()
        self.norm1 = nn.GroupNorm(1, dim)
        self.token_mixer = Pooling()
        self.norm2 = nn.GroupNorm(1, dim)
        self.mlp = ConvMlp(dim, dim * mlp_ratio)
        self.ls1 = nn.Parameter(ls * torch.ones(dim))
        self.ls2 = nn.Parameter(ls * torch.ones(dim))

    def forward(self, x):
        x = x + self.ls1.unsqueeze(-1).unsqueeze(-1) * self.token_mixer(self.norm1(x))
        x = x + self.ls2.unsqueeze(-1).unsqueeze(-1) * self.mlp(self.norm2(x))
        return x


class PoolFormer(nn.Module):
    def __init__(self, layers=(2, 2, 6, 2), dims=(64, 128, 320, 512), num_classes=1000):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dims[0], 7, stride=4, padding=2)
        net = []
        for i, (n, d) in enumerate(zip(layers, dims)):
            net.append(nn.Sequential(*[PoolFormerBlock(d) for _ in range(n)]))
            if i < len(dims) - 1:
                net.append(nn.Conv2d(d, dims[i + 1], 3, stride=2, padding=1))
        self.network = nn.ModuleList(net)
        self.norm = nn.GroupNorm(1, dims[-1])
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x):
        x = self.patch_embed(x)
        for m in self.network:
            x = m(x)
        x = self.norm(x)
        return self.head(x.mean([-2, -1]))
