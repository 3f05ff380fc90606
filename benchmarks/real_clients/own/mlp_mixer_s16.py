# MLP-Mixer S/16 (224x224): per-patch linear embedding (strided conv), 8 Mixer layers with
# token-mixing MLP (256 hidden) and channel-mixing MLP (2048 hidden), dim 512, pre-LayerNorm,
# global average pooling over tokens, linear head.
# Own re-implementation from "MLP-Mixer: An all-MLP Architecture for Vision" (Tolstikhin et al., 2021),
# written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch.nn as nn
import torch.nn.functional as F


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.dense1 = nn.Linear(dim, hidden)
        self.dense2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.dense2(F.gelu(self.dense1(x)))


class MixerLayer(nn.Module):
    def __init__(self, num_tokens, dim, token_hidden, channel_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.token_mixing = MlpBlock(num_tokens, token_hidden)
        self.norm2 = nn.LayerNorm(dim)
        self.channel_mixing = MlpBlock(dim, channel_hidden)

    def forward(self, x):  # x: (B, tokens, channels)
        y = self.norm1(x).transpose(1, 2)
        y = self.token_mixing(y).transpose(1, 2)
        x = x + y
        return x + self.channel_mixing(self.norm2(x))


class MlpMixer(nn.Module):
    def __init__(self, image_size=224, patch_size=16, dim=512, depth=8,
                 token_hidden=256, channel_hidden=2048, num_classes=1000):
        super().__init__()
        tokens = (image_size // patch_size) ** 2
        self.stem = nn.Conv2d(3, dim, patch_size, stride=patch_size)
        self.layers = nn.ModuleList(
            [MixerLayer(tokens, dim, token_hidden, channel_hidden) for _ in range(depth)])
        self.pre_head_norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.stem(x)
        b, c, h, w = x.shape
        x = x.reshape(b, c, h * w).permute(0, 2, 1)
        for layer in self.layers:
            x = layer(x)
        x = self.pre_head_norm(x)
        return self.head(x.mean(dim=1))
