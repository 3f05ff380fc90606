# SE-ResNet-50: ResNet-50 bottlenecks with a squeeze-and-excitation unit (reduction 16,
# implemented with Linear layers) applied to the residual branch before the addition.
# Own re-implementation from "Squeeze-and-Excitation Networks" (Hu et al., 2017),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=16):
        super().__init__()
        self.fc1 = nn.Linear(channels, channels // reduction)
        self.fc2 = nn.Linear(channels // reduction, channels)

    def forward(self, x):
        b, c, _, _ = x.shape
        s = x.view(b, c, -1).mean(-1)
        s = torch.relu(self.fc1(s))
        s = torch.sigmoid(self.fc2(s))
        return x * s.view(b, c, 1, 1)


class SEBottleneck(nn.Module):
    def __init__(self, inp, planes, stride=1):
        super().__init__()
        outp = planes * 4
        self.conv1 = nn.Conv2d(inp, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, outp, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(outp)
        self.se = SqueezeExcite(outp)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or inp != outp:
            self.down = nn.Sequential(nn.Conv2d(inp, outp, 1, stride, bias=False), nn.BatchNorm2d(outp))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out = self.se(out)
        return self.relu(out + idt)


class SEResNet50(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.layer0 = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1))
        inp = 64
        stages = []
        for planes, n, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            blocks = []
            for i in range(n):
                blocks.append(SEBottleneck(inp, planes, stride if i == 0 else 1))
                inp = planes * 4
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AvgPool2d(7, stride=1)
        self.last_linear = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = self.layer0(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        return self.last_linear(x.view(x.size(0), -1))
