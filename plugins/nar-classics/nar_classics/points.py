"""PointNet++ (Qi et al., NeurIPS 2017): hierarchical set abstraction over point clouds.

Each set-abstraction level samples centroids by farthest-point sampling, groups the points within a
radius of each centroid (ball query, at most K of them), runs a shared MLP over every group's
points in the centroid's frame and max-pools each group. Classification stacks two levels and a
global one; segmentation propagates features back to every point by inverse-distance interpolation
from the three nearest centroids. Written from the paper's description, with its sizes (SSG and MSG
classification on ModelNet40, SSG part segmentation on ShapeNet).
"""

from __future__ import annotations

import torch
from torch import nn

from nar_classics.other import _shared_mlp


def farthest_points(xyz, count):
    """Indices (B, count) of `count` points of `xyz` (B, N, 3), each the farthest from those before."""
    batch, points, _ = xyz.shape
    chosen = torch.zeros(batch, count, dtype=torch.long, device=xyz.device)
    distance = torch.full((batch, points), float("inf"), device=xyz.device)
    farthest = torch.zeros(batch, dtype=torch.long, device=xyz.device)
    rows = torch.arange(batch, device=xyz.device)
    for i in range(count):
        chosen[:, i] = farthest
        centre = xyz[rows, farthest].unsqueeze(1)
        distance = torch.minimum(distance, ((xyz - centre) ** 2).sum(-1))
        farthest = distance.argmax(-1)
    return chosen


def gather_points(values, index):
    """values (B, N, C) at index (B, ...) -> (B, ..., C)."""
    rows = torch.arange(values.shape[0], device=values.device).view(-1, *([1] * (index.dim() - 1)))
    return values[rows, index]


def ball_query(xyz, centres, radius, limit):
    """For each centre, the first `limit` points within `radius` (in index order), padded with the first found."""
    points = xyz.shape[1]
    squared = torch.cdist(centres, xyz) ** 2
    order = torch.arange(points, device=xyz.device).expand_as(squared)
    order = torch.where(squared > radius ** 2, torch.full_like(order, points), order)
    nearest = order.sort(-1).values[..., :limit]
    first = nearest[..., :1].expand_as(nearest)
    return torch.where(nearest == points, first, nearest)


def _mlp2d(widths):
    """PointNet's shared MLP (`other._shared_mlp`) over groups of points: (B, C, K, groups)."""
    return nn.Sequential(*[m for a, b in zip(widths, widths[1:]) for m in (nn.Conv2d(a, b, 1), nn.BatchNorm2d(b), nn.ReLU())])


class SetAbstraction(nn.Module):
    """One level: `centroids` sampled, one group per (radius, limit) scale (several: multi-scale
    grouping), each scale's shared MLP, its groups max-pooled, the scales' features concatenated.
    `centroids=None` groups every point around the origin (the global level)."""

    def __init__(self, centroids, scales, features, widths):
        super().__init__()
        self.centroids, self.scales = centroids, scales
        self.mlps = nn.ModuleList(_mlp2d([features + 3, *w]) for w in widths)

    def forward(self, xyz, features):
        if self.centroids is None:
            grouped = torch.cat([xyz, features], -1) if features is not None else xyz
            pooled = [mlp(grouped.unsqueeze(1).permute(0, 3, 2, 1)).amax(2) for mlp in self.mlps]
            return xyz.new_zeros(xyz.shape[0], 1, 3), torch.cat(pooled, 1).transpose(1, 2)
        centres = gather_points(xyz, farthest_points(xyz, self.centroids))
        pooled = []
        for (radius, limit), mlp in zip(self.scales, self.mlps):
            index = ball_query(xyz, centres, radius, limit)
            grouped = gather_points(xyz, index) - centres.unsqueeze(2)  # each group in its centroid's frame
            if features is not None:
                grouped = torch.cat([grouped, gather_points(features, index)], -1)
            pooled.append(mlp(grouped.permute(0, 3, 2, 1)).amax(2))  # (B, C, centroids)
        return centres, torch.cat(pooled, 1).transpose(1, 2)


class FeaturePropagation(nn.Module):
    """Features of the coarse level interpolated to the fine level's points (weights 1 / d², the
    paper's p = 2, over the three nearest), concatenated with the fine level's own, through a unit
    PointNet."""

    def __init__(self, widths):
        super().__init__()
        self.mlp = _shared_mlp(widths)

    def forward(self, fine_xyz, coarse_xyz, fine_features, coarse_features):
        if coarse_xyz.shape[1] == 1:
            spread = coarse_features.expand(-1, fine_xyz.shape[1], -1)
        else:
            distance, index = torch.cdist(fine_xyz, coarse_xyz).topk(3, -1, largest=False)
            weight = 1.0 / (distance ** 2 + 1e-8)
            weight = weight / weight.sum(-1, keepdim=True)
            spread = (gather_points(coarse_features, index) * weight.unsqueeze(-1)).sum(2)
        joined = torch.cat([fine_features, spread], -1) if fine_features is not None else spread
        return self.mlp(joined.transpose(1, 2)).transpose(1, 2)


SSG = [(512, [(0.2, 32)], [[64, 64, 128]]), (128, [(0.4, 64)], [[128, 128, 256]])]
MSG = [(512, [(0.1, 16), (0.2, 32), (0.4, 128)], [[32, 32, 64], [64, 64, 128], [64, 96, 128]]),
       (128, [(0.2, 32), (0.4, 64), (0.8, 128)], [[64, 64, 128], [128, 128, 256], [128, 128, 256]])]


class PointNet2(nn.Module):
    """Points (B, 3, N) in; class scores (B, classes), or per-point scores (B, classes, N) with `segment`."""

    def __init__(self, classes=40, grouping="ssg", segment=False):
        super().__init__()
        self.segment = segment
        levels, widths = [], [0]  # widths: the features each level hands on (the points themselves: none)
        for centroids, scales, mlps in (SSG if grouping == "ssg" else MSG):
            levels.append(SetAbstraction(centroids, scales, widths[-1], mlps))
            widths.append(sum(w[-1] for w in mlps))
        levels.append(SetAbstraction(None, None, widths[-1], [[256, 512, 1024]]))
        self.levels = nn.ModuleList(levels)
        if segment:
            self.propagate = nn.ModuleList([FeaturePropagation([1024 + widths[2], 256, 256]),
                                            FeaturePropagation([256 + widths[1], 256, 128]),
                                            FeaturePropagation([128, 128, 128, 128])])
            self.head = nn.Sequential(nn.Conv1d(128, 128, 1), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5),
                                      nn.Conv1d(128, classes, 1))
        else:
            self.head = nn.Sequential(nn.Linear(1024, 512), nn.BatchNorm1d(512), nn.ReLU(), nn.Dropout(0.5),
                                      nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.5),
                                      nn.Linear(256, classes))

    def forward(self, points):
        xyz, features = points.transpose(1, 2), None
        stack = [(xyz, features)]
        for level in self.levels:
            xyz, features = level(xyz, features)
            stack.append((xyz, features))
        if not self.segment:
            return self.head(features.squeeze(1))
        for propagate, (fine_xyz, fine_features) in zip(self.propagate, reversed(stack[:-1])):
            features = propagate(fine_xyz, xyz, fine_features, features)
            xyz = fine_xyz
        return self.head(features.transpose(1, 2))
