"""A tiny zoo source for tests: small models in two families, plus models that misbehave."""

import os
import signal
import time

from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource


class FakeSource(ZooSource):
    name = "fake"
    prefix = "fk"
    description = "models for nar's tests"
    rank = 5

    def __init__(self, names=None):
        self.names = names

    def list_models(self):
        entries = [
            ZooEntry("mlp_small", "mlp", "classification", {"width": 8}),
            ZooEntry("mlp_wide", "mlp", "classification", {"width": 32}),
            ZooEntry("mlp_small_copy", "mlp", "classification", {"width": 8}),  # same graph as mlp_small
            ZooEntry("cnn_tiny", "convnet", "image-classification", {"channels": 4}),
            ZooEntry("cnn_base", "convnet", "image-classification", {"channels": 8}),
            ZooEntry("resnet50", "convnet", "image-classification", {"channels": 16}),
            ZooEntry("broken", "convnet", "image-classification", {"fail": "build"}),
            ZooEntry("untraceable", "convnet", "image-classification", {"fail": "trace"}),
            ZooEntry("hangs", "mlp", "classification", {"fail": "hang"}),
            ZooEntry("crashes", "mlp", "classification", {"fail": "crash"}),
        ]
        return [e for e in entries if self.names is None or e.name in self.names]

    def build(self, entry):
        import torch
        from torch import nn

        fail = entry.extra.get("fail")
        if fail == "build":
            raise ValueError("this model cannot be built")
        if fail == "hang":
            time.sleep(600)
        if fail == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if "width" in entry.extra:
            w = entry.extra["width"]
            with torch.device("meta"):
                model = nn.Sequential(nn.Linear(4, w), nn.ReLU(), nn.Linear(w, 2))
            return BuiltModel(model, [torch.empty(1, 4, device="meta")])
        c = entry.extra.get("channels", 4)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(3, c, 3, padding=1)
                self.conv2 = nn.Conv2d(c, c, 3, padding=1)
                self.conv3 = nn.Conv2d(c, c, 3, padding=1)
                self.head = nn.Linear(c, 10)

            def forward(self, x):
                if fail == "trace":
                    raise RuntimeError("forward does not work")
                x = self.conv3(self.conv2(self.conv1(x).relu()).relu() + x.mean(1, keepdim=True))
                return self.head(x.mean((2, 3)))

        with torch.device("meta"):
            model = Net()
        side = entry.extra.get("side", 16)
        return BuiltModel(model, [torch.empty(1, 3, side, side, device="meta")])


class OtherSource(FakeSource):
    """A second source with a model also called resnet50, ranked after the first."""

    name = "other"
    prefix = "ot"
    rank = 7

    def list_models(self):
        return [ZooEntry("resnet50", "convnet", "image-classification", {"channels": 32}),
                ZooEntry("resnet101", "convnet", "image-classification", {"channels": 12})]


@hookimpl
def nar_zoo_sources():
    return [FakeSource(), OtherSource()]
