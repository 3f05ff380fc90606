"""The breadth sources (issue 32): `classics` (textbook designs written from their papers) and `pyg`
(torch_geometric's GNNs) list and build every model, each traces to a graph with the coarse class
its design has, and a recurrent or graph model outside the zoo gets the right coarse class."""

import pytest

from narcli.zoo import plugins
from narcli.zoo.build import BuildOptions, build_zoo
from narcli.zoo.store import Zoo

classics = pytest.importorskip("nar_classics")

EXPECTED_COARSE = {"lstm": "recurrent", "gru": "recurrent", "elman-rnn": "recurrent", "seq2seq": "recurrent",
                   "tcn": "convolutional", "wavenet": "convolutional", "dcgan": "convolutional",
                   "unet": "convolutional", "edsr": "convolutional", "espcn": "convolutional",
                   "lenet": "convolutional", "nerf": "mlp", "mlp": "mlp", "actor-critic": "mlp",
                   "gcn": "graph", "graphsage": "graph", "gin": "graph", "gat": "graph"}


@pytest.fixture(scope="module")
def breadth_zoo(tmp_path_factory):
    db = tmp_path_factory.mktemp("zoo") / "zoo.db"
    sources = ["classics"] + (["pyg"] if "pyg" in plugins.zoo_sources() else [])
    build_zoo(BuildOptions(db=db, sources=sources, jobs=1, timeout=120))
    with Zoo([db]) as zoo:
        yield list(zoo.models()) + list(zoo.models(failed=True))


def test_every_classic_design_traces(breadth_zoo):
    mine = [m for m in breadth_zoo if m.source == "classics"]
    assert len(mine) == len(classics.ClassicsSource().list_models()) >= 90
    assert [m.id for m in mine if m.status != "ok"] == []
    assert len({m.graph_hash for m in mine}) == len(mine)  # every size variant is its own architecture


def test_designs_have_their_coarse_class(breadth_zoo):
    wrong = [(m.id, m.coarse) for m in breadth_zoo
             if m.status == "ok" and m.family in EXPECTED_COARSE and m.coarse != EXPECTED_COARSE[m.family]]
    assert wrong == []


def test_recurrent_designs_have_their_macs(breadth_zoo):
    lm = next(m for m in breadth_zoo if m.id == "classics/lstm_lm_small")
    # 2 LSTM layers of 200 over 35 tokens, then the 10,000-word projection
    assert lm.macs == 35 * 2 * (4 * 200 * (200 + 200)) + 35 * 200 * 10000


def test_pyg_models_trace_except_what_needs_missing_libraries(breadth_zoo):
    mine = [m for m in breadth_zoo if m.source == "pyg"]
    if not mine:
        pytest.skip("torch_geometric's plugin is not installed")
    failed = [m for m in mine if m.status != "ok"]
    assert len(mine) - len(failed) >= 0.9 * len(mine), [(m.id, m.message) for m in failed]
    assert all("pyg-lib" in (m.message or "") or "torch_cluster" in (m.message or "") for m in failed)


def test_diffusers_networks_trace_with_their_published_shapes(tmp_path):
    pytest.importorskip("diffusers")
    pytest.importorskip("nar_diffusers")
    db = tmp_path / "zoo.db"
    wanted = ["ddpm_cifar10_unet", "sd15_unet", "autoencoder_kl_small", "dit_b_2"]
    build_zoo(BuildOptions(db=db, sources=["diffusers"], patterns=wanted, jobs=1, timeout=300))
    with Zoo([db]) as zoo:
        models = {m.name: m for m in zoo.models()}
    assert sorted(models) == sorted(wanted)
    assert models["sd15_unet"].params == 859_520_964  # Stable Diffusion 1.5's U-Net, as published
    assert models["sd15_unet"].family == "unet-2d-condition" and models["dit_b_2"].coarse == "transformer"
