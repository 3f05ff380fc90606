"""The reference latency head's network in torch, for training only (`latency_training.fit`); the
shipped head runs its numpy twin (`latency.node_cost_terms`, `latency.graph_log_latency`)."""

from __future__ import annotations

import math
from typing import Any

from narcli.predict.latency import GLOBAL_FEATURES, GLOBAL_SPREAD, NUMERIC, SLICE_CALL_MS, SPREAD, fixed_call_indices


def network(op_count: int, config: Any) -> Any:
    """The node-cost network (`config`: a `latency_training.Config`), the torch twin of
    `latency.node_cost_terms` and `latency.graph_log_latency`."""
    import torch
    from torch import nn

    class NodeCost(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # an operation's embedding is its kind's (convolution, element-wise, recurrent…) plus its
            # own offset: a rarely measured operation keeps close to its kind's rates, not to wild ones
            self.kind_embed = nn.Embedding(len(KIND_NAMES), config.embed)
            nn.init.normal_(self.kind_embed.weight, 0, 0.05)
            self.register_buffer("kind_of", torch.tensor(op_kinds(op_count)))
            self.register_buffer("fixed_calls", torch.from_numpy(fixed_call_indices()))  # a fixed dispatch each
            self.embed = nn.Embedding(op_count, config.embed)
            nn.init.normal_(self.embed.weight, 0, 0.01)  # an operation never trained on stays its kind's
            self.layers = nn.ModuleList([nn.Linear(config.embed + NUMERIC, config.hidden),
                                         nn.Linear(config.hidden, config.hidden), nn.Linear(config.hidden, 3)])
            nn.init.zeros_(self.layers[-1].weight)
            nn.init.zeros_(self.layers[-1].bias)
            # 50 GMACs/s, 1 G elements/s, 5 µs a call: where a CPU thread starts
            self.base = nn.Parameter(torch.tensor([math.log(1 / 50e6), math.log(1 / 1e6), math.log(5e-3)]))
            self.overhead = nn.Parameter(torch.tensor([math.log(0.02)]))
            # a bounded whole-graph correction (how a library's Python around the kernels behaves)
            self.global_mean = nn.Parameter(torch.zeros(GLOBAL_FEATURES), requires_grad=False)
            self.global_std = nn.Parameter(torch.ones(GLOBAL_FEATURES), requires_grad=False)
            self.whole = nn.ModuleList([nn.Linear(GLOBAL_FEATURES, 32), nn.Linear(32, 1)])
            nn.init.zeros_(self.whole[-1].weight)
            nn.init.zeros_(self.whole[-1].bias)

        def forward(self, ops: Any, numeric: Any, work: Any, count: Any, owner: Any, graphs: int,
                    figures: Any) -> Any:
            x = torch.cat([self.op_embedding()[ops], numeric], 1)
            for i, layer in enumerate(self.layers):
                x = layer(x)
                if i < len(self.layers) - 1:
                    x = torch.nn.functional.silu(x)
            rates = torch.exp(self.base + SPREAD * torch.tanh(x / SPREAD))
            calls = torch.where(torch.isin(ops, self.fixed_calls), torch.full_like(rates[:, 2], SLICE_CALL_MS), rates[:, 2])
            costs = work[:, 0] * rates[:, 0] + work[:, 1] * rates[:, 1] + count * calls
            total = torch.zeros(graphs, dtype=costs.dtype, device=costs.device).index_add(0, owner, costs)
            z = (figures - self.global_mean) / self.global_std
            correction = self.whole[1](torch.nn.functional.silu(self.whole[0](z)))[:, 0]
            return torch.log(total + torch.exp(self.overhead)) + GLOBAL_SPREAD * torch.tanh(correction / GLOBAL_SPREAD)

        def op_embedding(self) -> Any:
            return self.kind_embed(self.kind_of) + self.embed.weight

    return NodeCost()


KIND_NAMES = ("convolution", "linear", "normalization", "activation", "elementwise", "reduction", "pooling",
              "structure", "recurrent", "io", "other")


def op_kinds(op_count: int) -> list[int]:
    """Each operation index's kind index (KIND_NAMES)."""
    from narcli.encode.features import OP_INDEX
    from narcli.graph.vocab import OPS

    kinds = [KIND_NAMES.index("other")] * op_count
    for op, index in OP_INDEX.items():
        if index < op_count:
            kind = OPS.get(op, "other")
            kinds[index] = KIND_NAMES.index(kind if kind in KIND_NAMES else "other")
    return kinds
