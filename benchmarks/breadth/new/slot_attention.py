"""Slot Attention (Locatello et al. arXiv:2006.15055) over a CNN's feature map, written for nar's
breadth set: slots drawn from a learned Gaussian, three iterations of attention normalised over the
slots, a GRU cell update and a residual MLP."""
import torch
import torch.nn as nn


class SlotAttention(nn.Module):
    def __init__(self, slots=5, dim=64, iterations=3, hidden=128):
        super().__init__()
        self.slots, self.iterations, self.scale = slots, iterations, dim ** -0.5
        self.mu, self.log_sigma = nn.Parameter(torch.randn(1, 1, dim)), nn.Parameter(torch.zeros(1, 1, dim))
        self.norm_inputs, self.norm_slots, self.norm_mlp = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.k, self.v = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.gru = nn.GRUCell(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))

    def forward(self, inputs):
        b, _, d = inputs.shape
        inputs = self.norm_inputs(inputs)
        k, v = self.k(inputs), self.v(inputs)
        slots = self.mu + self.log_sigma.exp() * torch.zeros(b, self.slots, d, device=inputs.device)
        for _ in range(self.iterations):
            previous = slots
            q = self.q(self.norm_slots(slots))
            attn = torch.softmax(torch.einsum("bid,bjd->bij", k, q) * self.scale, dim=-1) + 1e-8
            attn = attn / attn.sum(dim=1, keepdim=True)
            updates = torch.einsum("bij,bid->bjd", attn, v)
            slots = self.gru(updates.reshape(-1, d), previous.reshape(-1, d)).reshape(b, -1, d)
            slots = slots + self.mlp(self.norm_mlp(slots))
        return slots


class SlotAttentionEncoder(nn.Module):
    def __init__(self, dim=64, slots=5):
        super().__init__()
        self.cnn = nn.Sequential(*(m for i in range(4) for m in (nn.Conv2d(3 if i == 0 else dim, dim, 5, padding=2), nn.ReLU())))
        self.position = nn.Linear(4, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.slot_attention = SlotAttention(slots, dim)

    def forward(self, image):
        features = self.cnn(image)
        b, c, h, w = features.shape
        ys, xs = torch.linspace(0, 1, h, device=image.device), torch.linspace(0, 1, w, device=image.device)
        grid = torch.stack(torch.meshgrid(ys, xs, indexing="ij"), dim=-1).reshape(1, h * w, 2)
        grid = torch.cat([grid, 1 - grid], dim=-1)
        tokens = features.flatten(2).transpose(1, 2) + self.position(grid)
        return self.slot_attention(self.mlp(tokens))
