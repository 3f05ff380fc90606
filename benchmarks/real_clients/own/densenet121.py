# DenseNet-121 (ImageNet): growth rate 32, blocks of [6, 12, 24, 16] BN-ReLU-Conv1x1(4k)-BN-ReLU-Conv3x3(k)
# layers whose outputs are concatenated; transitions halve channels (compression 0.5) and 2x2 avg-pool.
# Own re-implementation from "Densely Connected Convolutional Networks" (Huang et al., 2016),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn
import torch.nn.functional as F


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bn_size=4):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, feats):
        x = torch.cat(feats, 1)
        x = self.conv1(F.relu(self.norm1(x)))
        x = self.conv2(F.relu(self.norm2(x)))
        return x


class DenseBlock(nn.Module):
    def __init__(self, n_layers, cin, growth):
        super().__init__()
        self.layers = nn.ModuleList([DenseLayer(cin + i * growth, growth) for i in range(n_layers)])

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(layer(feats))
        return torch.cat(feats, 1)


class Transition(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(
            nn.BatchNorm2d(cin),
            nn.ReLU(inplace=True),
            nn.Conv2d(cin, cout, 1, bias=False),
            nn.AvgPool2d(2, 2),
        )


class DenseNet121(nn.Module):
    def __init__(self, growth=32, block_config=(6, 12, 24, 16), init_features=64, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, init_features, 7, 2, 3, bias=False),
            nn.BatchNorm2d(init_features),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        body = []
        ch = init_features
        for i, n in enumerate(block_config):
            body.append(DenseBlock(n, ch, growth))
            ch += n * growth
            if i != len(block_config) - 1:
                body.append(Transition(ch, ch // 2))
                ch //= 2
        self.body = nn.Sequential(*body)
        self.final_norm = nn.BatchNorm2d(ch)
        self.classifier = nn.Linear(ch, num_classes)

    def forward(self, x):
        x = self.body(self.stem(x))
        x = F.relu(self.final_norm(x))
        x = F.adaptive_avg_pool2d(x, 1)
        return self.classifier(torch.flatten(x, 1))
