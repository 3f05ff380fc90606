# ResNet-34 (ImageNet layout): 7x7/2 stem + 3x3/2 max-pool, basic blocks [3, 4, 6, 3],
# projection shortcuts only where the shape changes (option B), 1000-way classifier.
# Own re-implementation from "Deep Residual Learning for Image Recognition" (He et al., 2015),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn


class Residual(nn.Module):
    def __init__(self, in_ch, out_ch, downsample):
        super(Residual, self).__init__()
        stride = 2 if downsample else 1
        self.body = nn.Sequential(
            nn.Conv2d(in_ch, out_ch, kernel_size=3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(out_ch),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_ch, out_ch, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_ch),
        )
        if downsample or in_ch != out_ch:
            self.skip = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(out_ch),
            )
        else:
            self.skip = nn.Identity()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.body(x) + self.skip(x))


class ResNet34(nn.Module):
    cfg = [(64, 3), (128, 4), (256, 6), (512, 3)]

    def __init__(self, n_classes=1000):
        super(ResNet34, self).__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        layers = []
        prev = 64
        for idx, (ch, reps) in enumerate(self.cfg):
            for r in range(reps):
                layers.append(Residual(prev, ch, downsample=(r == 0 and idx != 0)))
                prev = ch
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(512, n_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.features(x)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, (1, 1)), 1)
        return self.fc(x)
