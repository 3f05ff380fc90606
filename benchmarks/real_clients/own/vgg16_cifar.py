# VGG-16 (configuration D) with batch norm, adapted to CIFAR-10: 13 3x3 conv layers in five
# max-pooled groups, a single Linear(512, 10) classifier as is common for 32x32 inputs.
# Own re-implementation from "Very Deep Convolutional Networks for Large-Scale Image Recognition"
# (Simonyan & Zisserman, 2014), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch.nn as nn

CFG_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class VGG(nn.Module):
    def __init__(self, cfg=CFG_D, num_classes=10):
        super().__init__()
        layers = []
        c = 3
        for v in cfg:
            if v == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(c, v, kernel_size=3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x):
        out = self.features(x)
        out = out.view(out.size(0), -1)
        return self.classifier(out)
