"""RetinaNet (Lin et al. arXiv:1708.02002), written for nar's breadth set: a ResNet-50 backbone, a
feature pyramid over its last three stages with two extra levels (P6 from C5 by a strided 3x3
convolution, P7 from P6 after a ReLU), and the two shared heads applied to every level: four 3x3
convolutions with ReLU then a 3x3 convolution giving 9 anchors x classes scores, and the same for 9 x 4
box offsets. Returns the raw outputs of every level concatenated (no anchor decoding or NMS)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        out = 4 * width
        self.convs = nn.Sequential(nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(True),
                                   nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width),
                                   nn.ReLU(True), nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out))
        self.down = None if stride == 1 and cin == out else nn.Sequential(
            nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        return F.relu(self.convs(x) + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(True),
                                  nn.MaxPool2d(3, 2, 1))
        self.stages = nn.ModuleList()
        cin = 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            self.stages.append(nn.Sequential(*[Bottleneck(cin if i == 0 else 4 * width, width, stride if i == 0 else 1)
                                               for i in range(blocks)]))
            cin = 4 * width

    def forward(self, x):
        x = self.stem(x)
        outs = []
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs[1:]  # C3, C4, C5


class FPN(nn.Module):
    def __init__(self, channels=(512, 1024, 2048), out=256):
        super().__init__()
        self.lateral = nn.ModuleList([nn.Conv2d(c, out, 1) for c in channels])
        self.smooth = nn.ModuleList([nn.Conv2d(out, out, 3, padding=1) for _ in channels])
        self.p6 = nn.Conv2d(channels[-1], out, 3, 2, 1)
        self.p7 = nn.Conv2d(out, out, 3, 2, 1)

    def forward(self, feats):
        c3, c4, c5 = feats
        p5 = self.lateral[2](c5)
        p4 = self.lateral[1](c4) + F.interpolate(p5, size=c4.shape[-2:], mode="nearest")
        p3 = self.lateral[0](c3) + F.interpolate(p4, size=c3.shape[-2:], mode="nearest")
        p6 = self.p6(c5)
        p7 = self.p7(F.relu(p6))
        return [self.smooth[0](p3), self.smooth[1](p4), self.smooth[2](p5), p6, p7]


def head(out_per_anchor, anchors=9, channels=256):
    layers = []
    for _ in range(4):
        layers += [nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(True)]
    return nn.Sequential(*layers, nn.Conv2d(channels, anchors * out_per_anchor, 3, padding=1))


class RetinaNet(nn.Module):
    def __init__(self, classes=80):
        super().__init__()
        self.classes = classes
        self.backbone, self.fpn = ResNet50(), FPN()
        self.cls_head, self.box_head = head(classes), head(4)

    def forward(self, images):
        levels = self.fpn(self.backbone(images))
        n = images.shape[0]
        scores = torch.cat([self.cls_head(p).permute(0, 2, 3, 1).reshape(n, -1, self.classes) for p in levels], 1)
        boxes = torch.cat([self.box_head(p).permute(0, 2, 3, 1).reshape(n, -1, 4) for p in levels], 1)
        return scores, boxes
