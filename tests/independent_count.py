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
    expert_macs: int = 0  # mixture-of-experts work counted by hand (see _expert_hooks)
    top_ops: list = field(default_factory=list)


def _expert_hooks(module, counter) -> dict:
    """A hand count where the FLOP counter cannot see the work: mixture-of-experts layers route each
    token by the router's values, which meta tensors do not have, so the counter sees no expert run.
    Experts held as stacked weights (transformers' `*Experts` modules: 3-D parameters, one slice
    per expert) called with the routing `top_k_index` (tokens × k) do k experts' work per token:
    tokens · k · (the weights of one expert). That replaces whatever the counter saw inside."""
    state = {"handles": [], "macs": 0, "added": 0.0}
    for sub in module.modules():
        stacked = [p for p in sub.parameters(recurse=False) if p.dim() == 3]
        if "expert" not in type(sub).__name__.lower() or not stacked or len({p.shape[0] for p in stacked}) != 1:
            continue
        per_expert = sum(p.numel() // p.shape[0] for p in stacked)

        def before(mod, args, kwargs, per_expert=per_expert):
            routes = [a for a in list(args) + list(kwargs.values())
                      if hasattr(a, "dtype") and not a.dtype.is_floating_point and a.dim() == 2]
            mod._counted = (counter.get_total_flops(), routes[0].shape if routes else None)

        def after(mod, args, kwargs, out, per_expert=per_expert):
            seen, routes = mod._counted
            if routes is not None:
                macs = routes[0] * routes[1] * per_expert
                state["macs"] += macs
                state["added"] += macs - (counter.get_total_flops() - seen) / 2
        state["handles"] += [sub.register_forward_pre_hook(before, with_kwargs=True),
                             sub.register_forward_hook(after, with_kwargs=True)]
    return state


def count_module(module, inputs: list) -> Count:
    try:
        return _count(module, inputs, tracked=True)
    except AssertionError as exc:  # the counter's module tracker fails on some custom autograd code
        if "gradient function" not in str(exc):  # (MRA): the same formulas, without the tracker
            raise
        return _count(module, inputs, tracked=False)


def _registry_counter():
    """FlopCounterMode's formulas (`flop_registry`) applied per op, without its module tracker."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class RegistryCounter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.counts = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            packet = func._overloadpacket
            if packet in flop_registry:
                self.counts[packet] += flop_registry[packet](*args, **(kwargs or {}), out_val=out)
            return out

        def get_total_flops(self):
            return sum(self.counts.values())

        def get_flop_counts(self):
            return {"Global": dict(self.counts)}

    return RegistryCounter()


def _count(module, inputs: list, tracked: bool) -> Count:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils.flop_counter import FlopCounterMode

    from narcli.trace.torch_tracer import MetaAnswers, _masks_select_everything

    counter = FlopCounterMode(display=False) if tracked else _registry_counter()
    attention, missed = [0], [0]

    class AttentionProducts(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is not F.scaled_dot_product_attention:
                return func(*args, **kwargs)
            q, k, v = (args[i] if len(args) > i else kwargs[name] for i, name in enumerate(("query", "key", "value")))
            products = q.shape[:-2].numel() * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])
            before = counter.get_total_flops()
            out = func(*args, **kwargs)
            seen = counter.get_total_flops() - before  # 0 on CPU (one op), its decomposition's on meta
            attention[0] += products
            missed[0] += products - seen / 2
            return out

    experts = _expert_hooks(module, counter)
    for parameter in module.parameters():  # the counter's module tracker trips over outputs that
        parameter.requires_grad_(False)  # require grad but have no grad function (timm's CaiT, PiT)
    answers = MetaAnswers()
    with torch.no_grad(), counter, AttentionProducts(), answers, _masks_select_everything():
        module(*inputs)
    for handle in experts["handles"]:
        handle.remove()
    by_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return Count(int(counter.get_total_flops() // 2 + missed[0] + experts["added"]), sum(p.numel() for p in module.parameters()),
                 attention[0], int(missed[0]), answers.guesses, int(experts['macs']), sorted(by_op.items(), key=lambda kv: -kv[1])[:4])
