"""The transformers source lists, beside each model type's default config, the published sizes of the
most-used families' small checkpoints and the pre-training heads (BertForPreTraining) no other task
lists, and the bundled zoo holds them under their family."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def source():
    pytest.importorskip("transformers")
    try:
        import nar_transformers
    except ImportError:  # the plugin is not installed by the test command: load it from its folder
        spec = importlib.util.spec_from_file_location("nar_transformers",
                                                      ROOT / "plugins" / "nar-transformers" / "nar_transformers.py")
        nar_transformers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(nar_transformers)
    return nar_transformers.TransformersSource()


def test_published_sizes_are_listed_under_their_family_and_head(source):
    sized = {e.name: e for e in source.list_models() if "config" in e.extra}
    assert {"smollm2-135m", "llama-3.2-1b", "qwen3-0.6b", "gpt2-medium", "bert-large-uncased"} <= set(sized)
    assert (sized["smollm2-135m"].family, sized["smollm2-135m"].task) == ("llama", "causal-lm")
    assert (sized["bert-mini"].family, sized["bert-mini"].task) == ("bert", "masked-lm")
    assert sized["llama-3.2-1b"].extra["class"] == "LlamaForCausalLM"


def test_pretraining_heads_are_listed_once(source):
    entries = source.list_models()
    by_name = {e.name: e for e in entries}
    assert by_name["bert/pretraining"].extra["class"] == "BertForPreTraining"
    assert by_name["bart-base"].task == "seq2seq-lm"
    # RoBERTa pre-trains with its masked-LM class, already listed under masked-lm: not a second row
    assert by_name["roberta/masked-lm"].extra["class"] == "RobertaForMaskedLM"
    assert "roberta/pretraining" not in by_name
    others = {(e.family, e.extra["class"]) for e in entries if e.task != "pretraining" and "config" not in e.extra}
    assert not [e.name for e in entries if e.task == "pretraining" and (e.family, e.extra["class"]) in others]


@pytest.mark.parametrize("name, params", [
    ("smollm2-135m", 134_515_008),  # as HuggingFaceTB/SmolLM2-135M's model card counts them
    ("bert-mini", 11_201_594),
])
def test_a_published_size_builds_with_its_parameter_count(source, name, params):
    entry = next(e for e in source.list_models() if e.name == name)
    built = source.build(entry)
    assert sum(p.numel() for p in (built.weights or built.module).parameters()) == params


def test_the_bundled_zoo_holds_the_published_sizes():
    from narcli.zoo.store import Zoo, bundled_zoo_path

    with Zoo([bundled_zoo_path()]) as zoo:
        models = {m.id: m for m in zoo.models(source="transformers")}
    assert models["hf/smollm2-135m"].family == "llama" and models["hf/qwen3-0.6b"].family == "qwen3"
    assert models["hf/smollm2-135m"].params == 134_515_008
    assert models["hf/llama-3.2-1b"].graph_hash != models["hf/llama/causal-lm"].graph_hash
    assert models["hf/bert/pretraining"].family == "bert" and models["hf/bart-base"].family == "bart"
