# Swin-T (224x224, window 7): 4x4 patch partition + linear embedding (conv) + LN, four stages of
# [2, 2, 6, 2] Swin blocks (dims 96..768, heads 3/6/12/24) alternating regular and shifted window
# multi-head self-attention with a learned relative position bias, patch merging (2x2 concat ->
# LN -> Linear 4C->2C) between stages, final LN, token average pool, linear head.
# Own re-implementation from "Swin Transformer: Hierarchical Vision Transformer using Shifted
# Windows" (Liu et al., 2021), written for the nar validation set.
# Licence: Apache-2.0 (same as this repository)
import torch
import torch.nn as nn


def to_windows(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, ws * ws, C)


def from_windows(w, ws, B, H, W):
    C = w.shape[-1]
    x = w.view(B, H // ws, W // ws, ws, ws, C).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(B, H, W, C)


def relative_index(ws):
    coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")).flatten(1)
    rel = coords[:, :, None] - coords[:, None, :]
    rel = rel.permute(1, 2, 0) + (ws - 1)
    return rel[..., 0] * (2 * ws - 1) + rel[..., 1]


class WindowAttention(nn.Module):
    def __init__(self, dim, ws, heads):
        super().__init__()
        self.heads = heads
        self.ws = ws
        self.scale = (dim // heads) ** -0.5
        self.bias_table = nn.Parameter(torch.zeros((2 * ws - 1) ** 2, heads))
        self.register_buffer("rel_index", relative_index(ws), persistent=False)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        Bw, N, C = x.shape
        qkv = self.qkv(x).reshape(Bw, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        bias = self.bias_table[self.rel_index.view(-1)].view(N, N, -1).permute(2, 0, 1)
        attn = attn + bias.unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(Bw // nw, nw, self.heads, N, N) + mask[None, :, None]
            attn = attn.view(-1, self.heads, N, N)
        attn = attn.softmax(-1)
        out = (attn @ v).transpose(1, 2).reshape(Bw, N, C)
        return self.proj(out)


class SwinBlock(nn.Module):
    def __init__(self, dim, resolution, heads, ws=7, shift=0, mlp_ratio=4.0):
        super().__init__()
        self.res = resolution
        if min(resolution) <= ws:
            ws, shift = min(resolution), 0
        self.ws, self.shift = ws, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, int(dim * mlp_ratio)), nn.GELU(), nn.Linear(int(dim * mlp_ratio), dim))
        if shift > 0:
            H, W = resolution
            img = torch.zeros(1, H, W, 1)
            cnt = 0
            for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                    img[:, hs, wsl, :] = cnt
                    cnt += 1
            mw = to_windows(img, ws).squeeze(-1)
            mask = mw.unsqueeze(1) - mw.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        else:
            mask = None
        self.register_buffer("attn_mask", mask, persistent=False)

    def forward(self, x):
        H, W = self.res
        B, L, C = x.shape
        shortcut = x
        x = self.norm1(x).view(B, H, W, C)
        if self.shift:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        w = self.attn(to_windows(x, self.ws), self.attn_mask)
        x = from_windows(w, self.ws, B, H, W)
        if self.shift:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + x.reshape(B, L, C)
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim, resolution):
        super().__init__()
        self.res = resolution
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        H, W = self.res
        B, L, C = x.shape
        x = x.view(B, H, W, C)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        x = x.view(B, -1, 4 * C)
        return self.reduction(self.norm(x))


class SwinTransformer(nn.Module):
    def __init__(self, img_size=224, patch=4, embed_dim=96, depths=(2, 2, 6, 2), heads=(3, 6, 12, 24),
                 window=7, num_classes=1000):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, embed_dim, patch, patch)
        self.patch_norm = nn.LayerNorm(embed_dim)
        res = img_size // patch
        dim = embed_dim
        layers = []
        for i, (d, h) in enumerate(zip(depths, heads)):
            blocks = [SwinBlock(dim, (res, res), h, window, 0 if j % 2 == 0 else window // 2) for j in range(d)]
            if i < len(depths) - 1:
                blocks.append(PatchMerging(dim, (res, res)))
                dim *= 2
                res //= 2
            layers.append(nn.Sequential(*blocks))
        self.layers = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = self.patch_norm(x)
        x = self.layers(x)
        x = self.norm(x)
        return self.head(x.mean(1))


if __name__ == "__main__":
    print(SwinTransformer()(torch.randn(1, 3, 224, 224)).shape)
