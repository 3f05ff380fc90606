"""The independent count that nar's sizes are checked against (tests and benchmarks/bench_sizes.py).

- **MACs**: torch's own FLOP counter (`torch.utils.flop_counter.FlopCounterMode`, which counts
  convolutions and matrix products from their shapes) halved, except inside each
  `scaled_dot_product_attention` call, which counts q·kᵀ and attention·v from q, k and v's shapes
  instead of what the counter saw (on CPU in torch 2.13 SDPA is one op counted as zero; on meta it
  decomposes into `bmm`s, with a mask into more than the two products).
- **Parameters**: `sum(p.numel() for p in module.parameters())`: every parameter the module holds,
  shared tensors once, whether or not forward uses it.

A forward that reads values (`.item()`, `nonzero`) on meta gets the answers nar's tracer gives
(`MetaAnswers`): the branch taken is the same for both counts, so only the counting is compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Count:
    macs: int
    params: int
    attention_macs: int = 0  # the attention products among `macs`
    attention_added: int = 0  # what that changed against the FLOP counter alone
    value_reads: int = 0  # values the forward read, answered as nar's tracer does
    top_ops: list = field(default_factory=list)


def count_module(module, inputs: list) -> Count:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils.flop_counter import FlopCounterMode

    from narcli.trace.torch_tracer import MetaAnswers, _masks_select_everything

    counter = FlopCounterMode(display=False)
    attention, missed = [0], [0]

    class AttentionProducts(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is not F.scaled_dot_product_attention:
                return func(*args, **kwargs)
            q, k, v = args[0], args[1], args[2]
            products = q.shape[:-2].numel() * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])
            before = counter.get_total_flops()
            out = func(*args, **kwargs)
            seen = counter.get_total_flops() - before  # 0 on CPU (one op), its decomposition's on meta
            attention[0] += products
            missed[0] += products - seen / 2
            return out

    answers = MetaAnswers()
    with torch.no_grad(), counter, AttentionProducts(), answers, _masks_select_everything():
        module(*inputs)
    by_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return Count(int(counter.get_total_flops() // 2 + missed[0]), sum(p.numel() for p in module.parameters()),
                 attention[0], int(missed[0]), answers.guesses, sorted(by_op.items(), key=lambda kv: -kv[1])[:4])
