"""nar zoo source `pyg`: torch_geometric's graph neural networks (`torch_geometric.nn.models`),
for node classification and, with a global pool, graph classification, in a few widths and depths.

Inputs are a synthetic graph: `x` [nodes, features] and `edge_index` [2, edges] (and `batch`
for graph classification). Models are built on `meta`; the few whose forward reads the edge
indices' values (`GraphUNet`'s sparse products, `SchNet`'s radius graph, PNA's degree histogram) are built on the CPU at
their small default sizes, with a fixed random graph.
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource

BASIC = {"GCN": "gcn", "GraphSAGE": "graphsage", "GIN": "gin", "GAT": "gat", "PNA": "pna", "EdgeCNN": "edgecnn"}
SIZES = {"small": (64, 2), "base": (128, 3), "deep": (128, 6), "wide": (256, 3)}
NODES, EDGES, FEATURES, CLASSES = 200, 800, 32, 8


def _entries() -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for cls, family in BASIC.items():
        for size, (hidden, layers) in SIZES.items():
            for task in ("node-classification", "graph-classification"):
                suffix = "graph" if task == "graph-classification" else "node"
                # PNA's degree histogram is read as values at construction: built on the CPU
                out[f"{family}_{size}_{suffix}"] = (family, task, {"cls": cls, "hidden": hidden, "layers": layers,
                                                                   "data": cls == "PNA"})
    for size, (hidden, layers) in {"small": (64, 2), "base": (128, 3)}.items():
        out[f"gatv2_{size}_node"] = ("gatv2", "node-classification", {"cls": "GAT", "hidden": hidden, "layers": layers, "v2": True})
        out[f"gin_jk_{size}_graph"] = ("gin", "graph-classification", {"cls": "GIN", "hidden": hidden, "layers": layers, "jk": "cat"})
    out["attentivefp_base"] = ("attentivefp", "molecular-property", {"cls": "AttentiveFP"})
    out["attentivefp_small"] = ("attentivefp", "molecular-property", {"cls": "AttentiveFP", "hidden": 64, "layers": 2})
    out["linkx_base"] = ("linkx", "node-classification", {"cls": "LINKX"})
    out["graph_unet_base"] = ("graph-unet", "node-classification", {"cls": "GraphUNet", "data": True})
    out["schnet_base"] = ("schnet", "molecular-property", {"cls": "SchNet", "data": True})
    return out


def graph_model(gnn, hidden, classes):
    """A BasicGNN with a graph-level read-out (mean pool, then a linear classifier)."""
    import torch
    from torch_geometric.nn import global_mean_pool

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gnn = gnn
            self.head = torch.nn.Linear(hidden, classes)

        def forward(self, x, edge_index, batch):
            return self.head(global_mean_pool(self.gnn(x, edge_index), batch))

    return Pooled()


class PygSource(ZooSource):
    name = "pyg"
    description = "torch_geometric.nn.models: GCN, GraphSAGE, GIN, GAT(v2), PNA, EdgeCNN, AttentiveFP, ..."
    rank = 45
    library = "torch_geometric"

    def list_models(self) -> list[ZooEntry]:
        return [ZooEntry(name, family, task) for name, (family, task, _) in _entries().items()]

    def build(self, entry: ZooEntry) -> BuiltModel:
        import torch
        from torch_geometric.nn import models

        _, task, spec = _entries()[entry.name]
        data = spec.get("data", False)
        device = "cpu" if data else "meta"
        torch.manual_seed(0)
        x = torch.randn(NODES, FEATURES, device=device)
        edge_index = torch.randint(0, NODES, (2, EDGES), device=device)
        cls, hidden, layers = spec["cls"], spec.get("hidden", 128), spec.get("layers", 3)
        with torch.device(device):
            if cls in ("GCN", "GraphSAGE", "GIN", "GAT", "PNA", "EdgeCNN"):
                kwargs = {"jk": spec["jk"]} if "jk" in spec else {}
                if spec.get("v2"):
                    kwargs["v2"] = True
                if cls == "PNA":
                    kwargs.update(aggregators=["mean", "min", "max", "std"],
                                  scalers=["identity", "amplification", "attenuation"],
                                  deg=torch.tensor([0, 40, 80, 40], device=device))
                readout = task == "graph-classification"
                gnn = getattr(models, cls)(FEATURES, hidden, layers, None if readout else CLASSES, **kwargs)
                module = graph_model(gnn, gnn.out_channels, CLASSES) if readout else gnn
            elif cls == "AttentiveFP":
                module = models.AttentiveFP(FEATURES, hidden, 1, edge_dim=8, num_layers=layers, num_timesteps=2)
            elif cls == "LINKX":
                module = models.LINKX(NODES, FEATURES, hidden, CLASSES, num_layers=2)
            elif cls == "GraphUNet":
                module = models.GraphUNet(FEATURES, hidden, CLASSES, depth=3)
            else:
                module = models.SchNet()
        module.eval()
        if task == "graph-classification":
            inputs = [x, edge_index, torch.zeros(NODES, dtype=torch.long, device=device)]
        elif cls == "AttentiveFP":
            inputs = [x, edge_index, torch.randn(EDGES, 8, device=device), torch.zeros(NODES, dtype=torch.long, device=device)]
        elif cls == "SchNet":
            inputs = [torch.randint(1, 10, (NODES,), device=device), torch.randn(NODES, 3, device=device)]
        else:
            inputs = [x, edge_index]
        return BuiltModel(module, inputs)


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [PygSource()]
