"""PointNet, NeRF, super-resolution (SRCNN, ESPCN, EDSR), LeNet-5, a siamese network, and the
networks of value-based and actor-critic reinforcement learning."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _shared_mlp(widths):
    return nn.Sequential(*[m for a, b in zip(widths, widths[1:]) for m in (nn.Conv1d(a, b, 1), nn.BatchNorm1d(b), nn.ReLU())])


class TNet(nn.Module):
    """PointNet's alignment network: predicts a k x k transform of its input points or features."""

    def __init__(self, k):
        super().__init__()
        self.k = k
        self.features = _shared_mlp([k, 64, 128, 1024])
        self.head = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, k * k))

    def forward(self, x):
        m = self.head(self.features(x).amax(2)).view(-1, self.k, self.k)
        return m + torch.eye(self.k, device=x.device)


class PointNet(nn.Module):
    """Qi et al. 2017: per-point shared MLPs, input and feature transforms, a symmetric max pool;
    classification, or per-point segmentation from the global feature and the local ones."""

    def __init__(self, classes=40, segment=False, transforms=True):
        super().__init__()
        self.segment = segment
        self.input_t = TNet(3) if transforms else None
        self.mlp1 = _shared_mlp([3, 64, 64])
        self.feature_t = TNet(64) if transforms else None
        self.mlp2 = _shared_mlp([64, 64, 128, 1024])
        if segment:
            self.head = nn.Sequential(_shared_mlp([1088, 512, 256, 128]), nn.Conv1d(128, classes, 1))
        else:
            self.head = nn.Sequential(nn.Linear(1024, 512), nn.BatchNorm1d(512), nn.ReLU(),
                                      nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, classes))

    def forward(self, points):
        if self.input_t is not None:
            points = torch.bmm(self.input_t(points).transpose(1, 2), points)
        local = self.mlp1(points)
        if self.feature_t is not None:
            local = torch.bmm(self.feature_t(local).transpose(1, 2), local)
        pooled = self.mlp2(local).amax(2)
        if not self.segment:
            return self.head(pooled)
        return self.head(torch.cat([local, pooled.unsqueeze(2).expand(-1, -1, local.shape[2])], 1))


class NeRF(nn.Module):
    """Mildenhall et al. 2020: positionally encoded points through 8 layers of 256 with a skip at
    the fifth; density from the trunk, colour from the trunk and the encoded view direction."""

    def __init__(self, depth=8, width=256, point_freqs=10, dir_freqs=4, skip=4):
        super().__init__()
        self.point_freqs, self.dir_freqs, self.skip = point_freqs, dir_freqs, skip
        pin, din = 3 + 6 * point_freqs, 3 + 6 * dir_freqs
        self.trunk = nn.ModuleList(nn.Linear(pin if i == 0 else width + (pin if i == skip + 1 else 0), width)
                                   for i in range(depth))
        self.density = nn.Linear(width, 1)
        self.feature = nn.Linear(width, width)
        self.colour = nn.Sequential(nn.Linear(width + din, width // 2), nn.ReLU(), nn.Linear(width // 2, 3), nn.Sigmoid())

    @staticmethod
    def encode(x, freqs):
        scaled = x.unsqueeze(-1) * (2.0 ** torch.arange(freqs, device=x.device))
        return torch.cat([x, torch.sin(scaled).flatten(-2), torch.cos(scaled).flatten(-2)], -1)

    def forward(self, points, directions):
        p = self.encode(points, self.point_freqs)
        h = p
        for i, layer in enumerate(self.trunk):
            if i == self.skip + 1:
                h = torch.cat([h, p], -1)
            h = F.relu(layer(h))
        rgb = self.colour(torch.cat([self.feature(h), self.encode(directions, self.dir_freqs)], -1))
        return torch.cat([rgb, F.relu(self.density(h))], -1)


class SRCNN(nn.Module):
    """Dong et al. 2014: three convolutions (9-1-5) on a bicubically upsampled image."""

    def __init__(self, channels=1, n1=64, n2=32, kernels=(9, 1, 5)):
        super().__init__()
        k1, k2, k3 = kernels
        self.body = nn.Sequential(nn.Conv2d(channels, n1, k1, padding=k1 // 2), nn.ReLU(),
                                  nn.Conv2d(n1, n2, k2, padding=k2 // 2), nn.ReLU(),
                                  nn.Conv2d(n2, channels, k3, padding=k3 // 2))

    def forward(self, x):
        return self.body(x)


class ESPCN(nn.Module):
    """Shi et al. 2016: convolutions at low resolution, a sub-pixel (pixel shuffle) upscale."""

    def __init__(self, channels=1, scale=3, widths=(64, 32)):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(channels, widths[0], 5, padding=2), nn.Tanh(),
                                  nn.Conv2d(widths[0], widths[1], 3, padding=1), nn.Tanh(),
                                  nn.Conv2d(widths[1], channels * scale ** 2, 3, padding=1), nn.PixelShuffle(scale))

    def forward(self, x):
        return self.body(x)


class ResidualBlock(nn.Module):
    def __init__(self, width, scale):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.scale = scale

    def forward(self, x):
        return x + self.scale * self.conv2(F.relu(self.conv1(x)))


class EDSR(nn.Module):
    """Lim et al. 2017: residual blocks without batch norm, a global skip, pixel-shuffle upsampling."""

    def __init__(self, blocks=16, width=64, scale=2, res_scale=1.0):
        super().__init__()
        self.head = nn.Conv2d(3, width, 3, padding=1)
        self.body = nn.Sequential(*[ResidualBlock(width, res_scale) for _ in range(blocks)], nn.Conv2d(width, width, 3, padding=1))
        steps = [2] * (scale // 2) if scale in (2, 4) else [3]
        self.upsample = nn.Sequential(*[m for s in steps for m in (nn.Conv2d(width, width * s * s, 3, padding=1), nn.PixelShuffle(s))])
        self.tail = nn.Conv2d(width, 3, 3, padding=1)

    def forward(self, x):
        x = self.head(x)
        return self.tail(self.upsample(x + self.body(x)))


class LeNet5(nn.Module):
    """LeCun et al. 1998: two convolution + subsampling stages, three fully connected layers."""

    def __init__(self, classes=10, activation=nn.Tanh, pool=nn.AvgPool2d):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 5), activation(), pool(2), nn.Conv2d(6, 16, 5), activation(), pool(2))
        self.head = nn.Sequential(nn.Linear(400, 120), activation(), nn.Linear(120, 84), activation(), nn.Linear(84, classes))

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class Siamese(nn.Module):
    """Koch et al. 2015: one convolutional tower applied to both images, the L1 distance of their
    embeddings scored by a linear layer."""

    def __init__(self, widths=(64, 128, 128, 256), embedding=4096, size=105):
        super().__init__()
        layers, cin = [], 1
        for i, (w, k) in enumerate(zip(widths, (10, 7, 4, 4))):
            layers += [nn.Conv2d(cin, w, k), nn.ReLU()] + ([nn.MaxPool2d(2)] if i < len(widths) - 1 else [])
            cin = w
        self.tower = nn.Sequential(*layers)
        side = size
        for i, k in enumerate((10, 7, 4, 4)):
            side = side - k + 1
            side = side // 2 if i < 3 else side
        self.embed = nn.Sequential(nn.Linear(widths[-1] * side * side, embedding), nn.Sigmoid())
        self.score = nn.Linear(embedding, 1)

    def forward(self, a, b):
        ea, eb = self.embed(self.tower(a).flatten(1)), self.embed(self.tower(b).flatten(1))
        return torch.sigmoid(self.score(torch.abs(ea - eb)))


class AtariDQN(nn.Module):
    """Mnih et al. 2015: three convolutions on 4 stacked 84x84 frames, one value per action;
    `dueling` splits the head into a state value and action advantages (Wang et al. 2016)."""

    def __init__(self, actions=6, dueling=False):
        super().__init__()
        self.dueling = dueling
        self.features = nn.Sequential(nn.Conv2d(4, 32, 8, 4), nn.ReLU(), nn.Conv2d(32, 64, 4, 2), nn.ReLU(),
                                      nn.Conv2d(64, 64, 3, 1), nn.ReLU())
        self.value = nn.Sequential(nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 1 if dueling else actions))
        self.advantage = nn.Sequential(nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, actions)) if dueling else None

    def forward(self, frames):
        h = self.features(frames).flatten(1)
        if not self.dueling:
            return self.value(h)
        advantage = self.advantage(h)
        return self.value(h) + advantage - advantage.mean(1, keepdim=True)


class MLPPolicy(nn.Module):
    """A plain multilayer perceptron (`critic=False`, ReLU: the textbook classifier), a value network (DQN on a state vector) or an actor-critic pair: an actor's action
    distribution and a critic's state value from separate MLPs (A2C / PPO style)."""

    def __init__(self, state=8, actions=4, hidden=(64, 64), critic=True, activation="tanh"):
        super().__init__()
        dims = [state, *hidden]
        act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]

        def mlp(out):
            return nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), act())], nn.Linear(dims[-1], out))

        self.actor = mlp(actions)
        self.critic = mlp(1) if critic else None

    def forward(self, state):
        logits = self.actor(state)
        if self.critic is None:
            return logits
        return torch.softmax(logits, -1), self.critic(state)
