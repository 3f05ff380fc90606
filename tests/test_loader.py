import pytest

from narcli.errors import LoadError, NoModelError, UsageError
from narcli.trace.loader import SpecCall, build_models, parse_model_spec

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
    assert parse_model_spec("GPT(GPTConfig(n_layer=2), dropout=0.0)") == (
        "GPT", (SpecCall("GPTConfig", (), {"n_layer": 2}),), {"dropout": 0.0})
    for bad in ("Net(", "a.b()", "Net(x=a.b)", "1 + 2", "Net(x=lambda: 1)", "Net(x=2 * 3)", "Net(x=y)",
                "Tiny(**{'a': 1})", "-" * 50_000 + "1"):
        with pytest.raises(UsageError):
            parse_model_spec(bad)


CONFIG_MODEL = """
    from dataclasses import dataclass
    import torch
    from torch import nn
    from torch.nn import Linear

    @dataclass
    class GPTConfig:
        n_layer: int = 3
        n_embd: int = 16

    class GPT(nn.Module):
        def __init__(self, config: GPTConfig):
            super().__init__()
            self.blocks = nn.Sequential(*[nn.Linear(config.n_embd, config.n_embd) for _ in range(config.n_layer)])

        def forward(self, x):
            return self.blocks(x)
"""


def test_a_model_built_from_a_config_object(write):
    path = write("gpt.py", CONFIG_MODEL)
    [(name, model)] = build_models(path, "GPT(GPTConfig(n_layer=5))")
    assert name == "GPT(GPTConfig(n_layer=5))" and len(model.blocks) == 5
    [(name, model)] = build_models(path, "GPT(config=GPTConfig())")
    assert len(model.blocks) == 3


def test_a_config_that_constructs_with_defaults_is_assumed_and_named(write):
    path = write("gpt.py", CONFIG_MODEL)
    [(name, model)] = build_models(path, None)
    assert name == "GPT(GPTConfig())" and len(model.blocks) == 3


def test_only_names_defined_in_the_file_may_be_called(write):
    path = write("gpt.py", CONFIG_MODEL)
    for spec in ("GPT(Linear(2, 2))", "Linear(2, 2)", "GPT(open('f'))"):
        with pytest.raises(UsageError, match="defined in gpt.py|no 'open'"):
            build_models(path, spec)


def test_a_config_whose_defaults_fail_gives_its_own_error(write):
    path = write("bad_config.py", """
        from torch import nn
        class Config:
            def __init__(self, width=4):
                raise ValueError("width must be set in the environment")
        class Net(nn.Module):
            def __init__(self, config: Config):
                super().__init__()
    """)
    with pytest.raises(LoadError, match="ValueError: width must be set in the environment"):
        build_models(path, "Net(Config())")


def test_collects_top_level_models_and_factories_not_blocks_or_helpers(write):
    path = write("models.py", MODELS)
    built = dict(build_models(path, None))
    assert set(built) == {"Net", "make_wide"}
    assert all(p.device.type == "meta" for m in built.values() for p in m.parameters())


def test_a_module_class_without_forward_is_a_helper_not_a_model(write, cli):
    """Issue 43 item 7: one model and a container class without `forward` failed as a whole, with
    a hint about --input-shape; the container is a helper, so the model alone is scanned."""
    path = write("two.py", """
import torch
from torch import nn

class Layers(nn.ModuleDict):
    def __init__(self):
        super().__init__({"a": nn.Linear(4, 4)})

class Backbone(nn.Module):  # holds layers for another project; never called
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
""")
    assert [name for name, _ in build_models(path, None)] == ["Net"]
    result = cli("scan", str(path))
    assert result.exit_code == 0, result.output


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


def test_a_module_without_weights_is_a_helper_beside_models_that_need_arguments(write):
    """kuangliu/pytorch-cifar's shufflenetv2.py: `ShuffleNetV2(net_size)` needs an argument and the
    only class that built, a weightless channel shuffle, was scanned as the model and failed with
    "cannot guess the model's input"; the models needing arguments are named instead."""
    path = write("shuffle.py", """
        from torch import nn
        class ShuffleBlock(nn.Module):
            def __init__(self, groups=2):
                super().__init__()
                self.groups = groups
            def forward(self, x):
                return x
        class Shuffle(nn.Module):
            def __init__(self, net_size):
                super().__init__()
                self.fc = nn.Linear(4, net_size)
                self.shuffle = ShuffleBlock()
            def forward(self, x):
                return self.shuffle(self.fc(x))
    """)
    with pytest.raises(LoadError, match=r"Shuffle\(net_size\).*--model"):
        build_models(path, None)
    # beside a model that builds, a weightless module nothing contains is left out too
    with_model = write("with_model.py", path.read_text() + "\nclass Net(Shuffle):\n    def __init__(self):\n"
                                                             "        super().__init__(8)\n")
    assert [name for name, _ in build_models(with_model, None)] == ["Net"]
    # alone, a weightless module is still what the file holds
    alone = write("alone.py", "from torch import nn\nclass Flip(nn.Module):\n    def forward(self, x):\n"
                              "        return -x\n")
    assert [name for name, _ in build_models(alone, None)] == ["Flip"]


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
