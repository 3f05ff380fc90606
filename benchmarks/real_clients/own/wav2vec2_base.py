# wav2vec 2.0 BASE encoder (fine-tuning/inference graph, no quantiser): 7-layer conv feature
# encoder on the raw waveform (512 channels, kernels 10,3,3,3,3,2,2, strides 5,2,2,2,2,2,2, GroupNorm
# after the first layer, GELU), feature projection (LN + Linear 512->768), convolutional relative
# positional embedding (kernel 128, 16 groups, weight norm), 12 post-LN transformer layers
# (768 dim, 12 heads, FFN 3072) and a CTC head.
# Own re-implementation from "wav2vec 2.0: A Framework for Self-Supervised Learning of Speech
# Representations" (Baevski et al., 2020), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
#
# input: raw 16 kHz waveform, --input-shape 1,16000
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrizations


class FeatureEncoder(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        spec = [(10, 5)] + [(3, 2)] * 4 + [(2, 2)] * 2
        self.convs = nn.ModuleList()
        cin = 1
        for k, s in spec:
            self.convs.append(nn.Conv1d(cin, dim, k, stride=s, bias=False))
            cin = dim
        self.group_norm = nn.GroupNorm(dim, dim)

    def forward(self, wav):
        x = wav.unsqueeze(1)
        for i, conv in enumerate(self.convs):
            x = conv(x)
            if i == 0:
                x = self.group_norm(x)
            x = F.gelu(x)
        return x


class PositionalConv(nn.Module):
    def __init__(self, dim=768, kernel=128, groups=16):
        super().__init__()
        conv = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=groups)
        self.conv = parametrizations.weight_norm(conv, name="weight", dim=2)
        self.remove = 1 if kernel % 2 == 0 else 0

    def forward(self, x):  # x: B, T, C
        y = self.conv(x.transpose(1, 2))
        if self.remove:
            y = y[:, :, :-self.remove]
        return F.gelu(y).transpose(1, 2)


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads, ff, p=0.1):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)
        self.dropout = nn.Dropout(p)
        self.layer_norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, ff)
        self.fc2 = nn.Linear(ff, dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def attention(self, x):
        B, T, C = x.shape
        hd = C // self.heads
        q = self.q_proj(x).reshape(B, T, self.heads, hd).transpose(1, 2) * hd ** -0.5
        k = self.k_proj(x).reshape(B, T, self.heads, hd).transpose(1, 2)
        v = self.v_proj(x).reshape(B, T, self.heads, hd).transpose(1, 2)
        w = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        w = self.dropout(w)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = self.layer_norm(x + self.dropout(self.attention(x)))
        y = self.fc2(self.dropout(F.gelu(self.fc1(x))))
        return self.final_layer_norm(x + self.dropout(y))


class Wav2Vec2(nn.Module):
    def __init__(self, conv_dim=512, dim=768, layers=12, heads=12, ff=3072, vocab=32):
        super().__init__()
        self.feature_extractor = FeatureEncoder(conv_dim)
        self.feat_norm = nn.LayerNorm(conv_dim)
        self.post_extract_proj = nn.Linear(conv_dim, dim)
        self.pos_conv = PositionalConv(dim)
        self.enc_norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([EncoderLayer(dim, heads, ff) for _ in range(layers)])
        self.dropout = nn.Dropout(0.1)
        self.ctc_head = nn.Linear(dim, vocab)

    def forward(self, wav):
        feats = self.feature_extractor(wav).transpose(1, 2)
        x = self.post_extract_proj(self.feat_norm(feats))
        x = x + self.pos_conv(x)
        x = self.dropout(self.enc_norm(x))
        for layer in self.layers:
            x = layer(x)
        return self.ctc_head(x)
