import pytest

from narcli.errors import LoadError, NoModelError, UsageError
from narcli.trace.loader import build_models, parse_model_spec

MODELS = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.fc = nn.Linear(dim, dim)

        def forward(self, x):
            return torch.relu(self.fc(x))

    class Net(nn.Module):
        def __init__(self, depth=2):
            super().__init__()
            self.blocks = nn.Sequential(*[Block() for _ in range(depth)])

        def forward(self, x):
            return self.blocks(x)

    class Wide(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc = nn.Linear(4, width)

        def forward(self, x):
            return self.fc(x)

    def make_wide() -> nn.Module:
        return Wide(16)

    def helper():
        return 3
"""


def test_parse_model_spec():
    assert parse_model_spec("Net") == ("Net", (), {})
    assert parse_model_spec("resnet(depth=18, widths=[1, 2])") == ("resnet", (), {"depth": 18, "widths": [1, 2]})
    assert parse_model_spec(" Wide(16) ") == ("Wide", (16,), {})
    for bad in ("Net(", "a.b()", "Net(x=open('f'))", "1 + 2"):
        with pytest.raises(UsageError):
            parse_model_spec(bad)


def test_collects_top_level_models_and_factories_not_blocks_or_helpers(write):
    path = write("models.py", MODELS)
    built = dict(build_models(path, None))
    assert set(built) == {"Net", "make_wide"}
    assert all(p.device.type == "meta" for m in built.values() for p in m.parameters())


def test_model_spec_with_arguments(write):
    path = write("models.py", MODELS)
    [(name, model)] = build_models(path, "Net(depth=5)")
    assert name == "Net(depth=5)" and len(model.blocks) == 5
    [(_, wide)] = build_models(path, "Wide(width=3)")
    assert wide.fc.out_features == 3


def test_unknown_model_name_lists_what_exists(write):
    path = write("models.py", MODELS)
    with pytest.raises(LoadError, match="no 'Nett'.*Net"):
        build_models(path, "Nett")


def test_constructor_needing_arguments_explains_model_option(write):
    path = write("wide.py", """
        from torch import nn
        class Wide(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.fc = nn.Linear(4, width)
    """)
    with pytest.raises(LoadError, match=r"Wide\(width\).*--model"):
        build_models(path, None)


def test_no_module_raises_no_model_error(write):
    path = write("util.py", "import torch\nX = 1\n")
    with pytest.raises(NoModelError):
        build_models(path, None)


def test_sibling_modules_import(write):
    write("pkg/blocks.py", """
        from torch import nn
        def block():
            return nn.Linear(4, 4)
    """)
    path = write("pkg/net.py", """
        from torch import nn
        from blocks import block
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = block()
            def forward(self, x):
                return self.body(x)
    """)
    assert [n for n, _ in build_models(path, None)] == ["Net"]


def test_constructor_that_needs_real_tensors_still_builds(write):
    path = write("drop.py", """
        import torch
        from torch import nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                rates = [x.item() for x in torch.linspace(0, 0.1, 3)]  # fails on meta tensors
                self.fc = nn.Linear(4, 4)
                self.rates = rates
            def forward(self, x):
                return self.fc(x)
    """)
    [(_, model)] = build_models(path, None)
    assert model.fc.weight.device.type == "meta"
