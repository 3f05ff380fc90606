# ConvMixer-768/32 (patch size 7, kernel 7): patch embedding by a strided conv, then 32 blocks of
# residual depthwise conv (GELU + BN) followed by pointwise conv (GELU + BN), global pool, Linear.
# Own re-implementation from "Patches Are All You Need?" (Trockman & Kolter, 2022),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# --model: ConvMixer(dim=768, depth=32, kernel_size=7, patch_size=7)
import torch.nn as nn


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class ConvMixer(nn.Sequential):
    def __init__(self, dim=768, depth=32, kernel_size=7, patch_size=7, n_classes=1000):
        layers = [nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size), nn.GELU(), nn.BatchNorm2d(dim)]
        for _ in range(depth):
            layers.append(nn.Sequential(
                Residual(nn.Sequential(
                    nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"),
                    nn.GELU(),
                    nn.BatchNorm2d(dim),
                )),
                nn.Conv2d(dim, dim, kernel_size=1),
                nn.GELU(),
                nn.BatchNorm2d(dim),
            ))
        layers += [nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(dim, n_classes)]
        super().__init__(*layers)
