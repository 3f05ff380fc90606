"""FCN (Long et al. arXiv:1411.4038) in its common modern form, written for nar's breadth set: a
ResNet-50 whose last two stages trade stride for dilation (output stride 8), a head of one 3x3
convolution, batch norm, ReLU, dropout and a 1x1 classifier, and a bilinear upsampling back to the
input's size."""
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride=1, dilation=1):
        super().__init__()
        cout = width * 4
        self.c1 = nn.Conv2d(cin, width, 1, bias=False)
        self.b1 = nn.BatchNorm2d(width)
        self.c2 = nn.Conv2d(width, width, 3, stride, dilation, dilation, bias=False)
        self.b2 = nn.BatchNorm2d(width)
        self.c3 = nn.Conv2d(width, cout, 1, bias=False)
        self.b3 = nn.BatchNorm2d(cout)
        self.project = None
        if stride != 1 or cin != cout:
            self.project = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return F.relu(y + (x if self.project is None else self.project(x)))


class DilatedResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        stages, cin = [], 64
        for width, blocks, stride, dilation in ((64, 3, 1, 1), (128, 4, 2, 1), (256, 6, 1, 2), (512, 3, 1, 4)):
            layers = []
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1, dilation))
                cin = width * 4
            stages.append(nn.Sequential(*layers))
        self.stages = nn.Sequential(*stages)

    def forward(self, x):
        return self.stages(self.stem(x))


class FCN(nn.Module):
    def __init__(self, classes=21):
        super().__init__()
        self.backbone = DilatedResNet50()
        self.head = nn.Sequential(nn.Conv2d(2048, 512, 3, padding=1, bias=False), nn.BatchNorm2d(512), nn.ReLU(),
                                  nn.Dropout(0.1), nn.Conv2d(512, classes, 1))

    def forward(self, x):
        size = x.shape[-2:]
        return F.interpolate(self.head(self.backbone(x)), size=size, mode="bilinear", align_corners=False)
