# VGG-11 (configuration A, no batch norm) for ImageNet: 8 conv layers, three fully connected
# layers 4096-4096-1000 with dropout, 224x224 input.
# Own re-implementation from "Very Deep Convolutional Networks for Large-Scale Image Recognition"
# (Simonyan & Zisserman, 2014), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
from torch import nn


def block(cin, cout, n):
    mods = []
    for i in range(n):
        mods.append(nn.Conv2d(cin if i == 0 else cout, cout, 3, padding=1))
        mods.append(nn.ReLU())
    mods.append(nn.MaxPool2d(2))
    return nn.Sequential(*mods)


class VGG11(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            block(3, 64, 1),
            block(64, 128, 1),
            block(128, 256, 2),
            block(256, 512, 2),
            block(512, 512, 2),
        )
        self.fc = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(4096, 1000),
        )

    def forward(self, img):
        feat = self.conv(img)
        return self.fc(feat.reshape(feat.shape[0], -1))
