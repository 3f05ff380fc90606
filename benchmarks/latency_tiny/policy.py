"""A small Gaussian policy for continuous control, as RL code writes it: tanh-squashed actions and
their log-probabilities computed by hand."""
import math
import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self, obs=17, act=6, hidden=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.mu = nn.Linear(hidden, act)
        self.log_std = nn.Linear(hidden, act)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        mu = self.mu(h)
        log_std = torch.clamp(self.log_std(h), -20.0, 2.0)
        std = torch.exp(log_std)
        noise = torch.zeros_like(mu)
        pre = mu + std * noise
        action = torch.tanh(pre)
        log_prob = -0.5 * (noise * noise) - log_std - 0.5 * math.log(2 * math.pi)
        log_prob = log_prob - torch.log(1.0 - action * action + 1e-6)
        return action, log_prob.sum(-1), self.value(h)
