# AlexNet (single-tower variant): five conv layers (11x11/4, 5x5, 3x3 x3) with overlapping
# 3x3/2 max-pooling and local response normalisation, then 4096-4096-1000 FC layers with dropout.
# Own re-implementation from "ImageNet Classification with Deep Convolutional Neural Networks"
# (Krizhevsky et al., 2012), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


class AlexNet(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 96, 11, stride=4, padding=2)
        self.conv2 = nn.Conv2d(96, 256, 5, padding=2)
        self.conv3 = nn.Conv2d(256, 384, 3, padding=1)
        self.conv4 = nn.Conv2d(384, 384, 3, padding=1)
        self.conv5 = nn.Conv2d(384, 256, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0)
        self.fc6 = nn.Linear(256 * 6 * 6, 4096)
        self.fc7 = nn.Linear(4096, 4096)
        self.fc8 = nn.Linear(4096, num_classes)

    def forward(self, x):
        x = F.max_pool2d(self.lrn(F.relu(self.conv1(x))), 3, 2)
        x = F.max_pool2d(self.lrn(F.relu(self.conv2(x))), 3, 2)
        x = F.relu(self.conv3(x))
        x = F.relu(self.conv4(x))
        x = F.max_pool2d(F.relu(self.conv5(x)), 3, 2)
        x = torch.flatten(x, 1)
        x = F.dropout(F.relu(self.fc6(x)), 0.5, self.training)
        x = F.dropout(F.relu(self.fc7(x)), 0.5, self.training)
        return self.fc8(x)
