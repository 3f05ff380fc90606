"""Lineage: which design a zoo family derives from, read from transformers' own modular files."""

from pathlib import Path

from narcli.search.family import predict_family
from narcli.search.text import prediction_line
from narcli.zoo.lineage import design, family_parents, lineage_table, parents_from_source


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_parent_is_the_model_a_modular_file_imports_most_from(tmp_path):
    write(tmp_path / "helium" / "modular_helium.py",
          "from ..gemma.modeling_gemma import GemmaRMSNorm\n"
          "from ..llama.modeling_llama import (\n    LlamaAttention,\n    LlamaMLP,\n    LlamaModel,\n)\n"
          "from ..helium.configuration_helium import HeliumConfig\n")
    write(tmp_path / "tiny" / "modeling_tiny.py",
          "# Copied from transformers.models.bert.modeling_bert.BertSelfOutput\n" * 3 +
          "# Copied from transformers.models.roberta.modeling_roberta.RobertaPooler\n")
    write(tmp_path / "rare" / "modeling_rare.py", "# Copied from transformers.models.bert.modeling_bert.X\n")
    write(tmp_path / "llama" / "modeling_llama.py", "class LlamaModel: ...\n")
    parents = parents_from_source(tmp_path)
    assert parents == {"helium": "llama", "tiny": "bert"}  # one comment is not a lineage; llama has none


def test_folder_lineage_is_lifted_to_families_through_the_family_table():
    table = {("transformers", "helium"): ("helium", "transformer"), ("transformers", "llama"): ("llama", "transformer"),
             ("transformers", "wav2vec2-bert"): ("wav2vec2-bert", "hybrid"),
             ("transformers", "wav2vec2"): ("wav2vec2", "transformer"), ("timm", "llama"): ("other", "x")}
    parents = family_parents({"helium": "llama", "wav2vec2_bert": "wav2vec2", "unknown": "llama"}, table)
    assert parents == {"helium": "llama", "wav2vec2-bert": "wav2vec2"}


def test_design_follows_parents_to_the_end_and_stops_on_a_cycle():
    parents = {"a": "b", "b": "c", "x": "y", "y": "x"}
    assert design("a", parents) == "c"
    assert design("c", parents) == "c"
    assert design("x", parents) == "y"
    assert design(None, parents) is None


def test_the_shipped_table_knows_llama_designs():
    table = lineage_table()
    assert len(table) > 100
    assert design("helium") == design("mistral") == "llama"
    assert design("resnet") == "resnet"  # timm families have no lineage: their own design


def test_a_family_prediction_names_its_design_and_pools_the_vote_of_that_design():
    neighbours = [("helium", "transformer", 0.95), ("mistral", "transformer", 0.949), ("bert", "transformer", 0.90)]
    prediction = predict_family(None, neighbours, threshold=0.7)
    assert prediction.design == "llama"
    assert prediction.design_confidence > prediction.family_confidence
    assert "design [bold]llama[/]" in prediction_line(prediction)
    assert prediction.to_json()["design"] == "llama"
    plain = predict_family(None, [("llama", "transformer", 0.95)], threshold=0.7)
    assert plain.design is None and "design" not in prediction_line(plain)


def test_the_design_is_the_one_with_the_most_pooled_vote_not_only_the_top_familys():
    # one family of another design first, two of the Llama design close behind
    neighbours = [("bert", "transformer", 0.95), ("helium", "transformer", 0.948), ("mistral", "transformer", 0.947)]
    prediction = predict_family(None, neighbours, threshold=0.7)
    assert prediction.family == "bert"
    assert prediction.design == "llama" and prediction.design_confidence > prediction.family_confidence
