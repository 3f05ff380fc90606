"""DeepLabV3 (Chen et al. arXiv:1706.05587), written for nar's breadth set: a ResNet-50 with the
last two stages dilated (output stride 8), atrous spatial pyramid pooling (a 1x1 branch, three 3x3
branches at rates 12, 24, 36 and an image-level pooling branch), a 3x3 convolution and a 1x1
classifier, upsampled bilinearly to the input."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn_relu(cin, cout, kernel, stride=1, dilation=1):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, dilation * (kernel // 2), dilation, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Block(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride, dilation):
        super().__init__()
        out = planes * self.expansion
        self.branch = nn.Sequential(conv_bn_relu(cin, planes, 1), conv_bn_relu(planes, planes, 3, stride, dilation),
                                    nn.Conv2d(planes, out, 1, bias=False), nn.BatchNorm2d(out))
        self.shortcut = nn.Identity() if (stride == 1 and cin == out) else nn.Sequential(
            nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        return F.relu(self.branch(x) + self.shortcut(x))


class ASPP(nn.Module):
    def __init__(self, cin, cout=256, rates=(12, 24, 36)):
        super().__init__()
        self.branches = nn.ModuleList([conv_bn_relu(cin, cout, 1)] + [conv_bn_relu(cin, cout, 3, 1, r) for r in rates])
        self.image = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout),
                                   nn.ReLU(inplace=True))
        self.project = nn.Sequential(conv_bn_relu(cout * (len(rates) + 2), cout, 1), nn.Dropout(0.5))

    def forward(self, x):
        pooled = F.interpolate(self.image(x), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return self.project(torch.cat([b(x) for b in self.branches] + [pooled], dim=1))


class DeepLabV3(nn.Module):
    def __init__(self, classes=21):
        super().__init__()
        layers = [conv_bn_relu(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for planes, blocks, stride, dilation in ((64, 3, 1, 1), (128, 4, 2, 1), (256, 6, 1, 2), (512, 3, 1, 4)):
            for i in range(blocks):
                layers.append(Block(cin, planes, stride if i == 0 else 1, dilation))
                cin = planes * 4
        self.encoder = nn.Sequential(*layers)
        self.aspp = ASPP(2048)
        self.classifier = nn.Sequential(conv_bn_relu(256, 256, 3), nn.Conv2d(256, classes, 1))

    def forward(self, x):
        logits = self.classifier(self.aspp(self.encoder(x)))
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)
