"""A feature-pyramid segmentation network (Kirillov et al.'s panoptic FPN head, the layout
segmentation libraries ship as "FPN"), written for nar's breadth set: a ResNet-34 encoder; a
top-down pyramid of 256 channels (1x1 lateral convolutions added to the 2x-upsampled level above);
each of P5..P2 through 3x3 convolution, group norm and ReLU blocks with 2x upsampling until stride 4
(three blocks for P5, two for P4, one for P3 and P2), the four summed, dropout, a 3x3 classifier
and 4x bilinear upsampling."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.n1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.n2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) \
            if (stride, cin) != (1, cout) else nn.Identity()

    def forward(self, x):
        return F.relu(self.n2(self.c2(F.relu(self.n1(self.c1(x))))) + self.proj(x))


class SegmentationBlock(nn.Module):
    def __init__(self, cin, cout, upsamplings):
        super().__init__()
        layers = []
        for i in range(max(upsamplings, 1)):
            layers += [nn.Conv2d(cin if i == 0 else cout, cout, 3, padding=1, bias=False), nn.GroupNorm(32, cout),
                       nn.ReLU(inplace=True)]
            if upsamplings:
                layers.append(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class FPNSegmentation(nn.Module):
    def __init__(self, classes=1, pyramid=256, segmentation=128):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.stages = nn.ModuleList()
        cin = 64
        for cout, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            self.stages.append(nn.Sequential(*[Basic(cin if i == 0 else cout, cout, stride if i == 0 else 1)
                                               for i in range(blocks)]))
            cin = cout
        self.top = nn.Conv2d(512, pyramid, 1)
        self.lateral = nn.ModuleList([nn.Conv2d(c, pyramid, 1) for c in (256, 128, 64)])
        self.blocks = nn.ModuleList([SegmentationBlock(pyramid, segmentation, n) for n in (3, 2, 1, 0)])
        self.dropout = nn.Dropout2d(0.2)
        self.classifier = nn.Conv2d(segmentation, classes, 3, padding=1)

    def forward(self, x):
        x = self.stem(x)
        c = []
        for stage in self.stages:
            x = stage(x)
            c.append(x)
        levels = [self.top(c[3])]
        for lateral, feature in zip(self.lateral, (c[2], c[1], c[0])):
            levels.append(F.interpolate(levels[-1], scale_factor=2, mode="nearest") + lateral(feature))
        merged = sum(block(p) for block, p in zip(self.blocks, levels))
        logits = self.classifier(self.dropout(merged))
        return F.interpolate(logits, scale_factor=4, mode="bilinear", align_corners=True)
