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
                   "gcn": "graph", "graphsage": "graph", "gin": "graph", "gat": "graph",
                   "patchgan": "convolutional", "vnet": "convolutional", "attention-unet": "convolutional",
                   "dit": "transformer", "vq-vae": "convolutional"}


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


def test_patchgans_have_the_published_sizes(breadth_zoo):
    # the parameter counts pytorch-CycleGAN-and-pix2pix prints for its "basic" discriminator:
    # 2.769 M for pix2pix (6 channels, batch norm), 2.765 M for CycleGAN (3 channels, instance norm)
    models = {m.name: m for m in breadth_zoo if m.source == "classics" and m.family == "patchgan"}
    assert round(models["pix2pix_patchgan_70"].params / 1e6, 3) == 2.769
    assert round(models["cyclegan_patchgan_70"].params / 1e6, 3) == 2.765
    # a 4x4 convolution costs 16 multiply-adds per weight per output position: the 70x70 one's
    # first layer alone (6 -> 64 channels onto 128x128) is 6*64*16*128*128
    assert models["pix2pix_patchgan_70"].macs > 6 * 64 * 16 * 128 * 128


def test_vnet_and_attention_unet_keep_the_volume(breadth_zoo):
    import torch

    from nar_classics import imaging

    for module in (imaging.VNet(base=4), imaging.AttentionUNet(base=4, depth=3)):
        with torch.no_grad():
            out = module.eval()(torch.randn(1, 1, 16, 32, 32))
        assert out.shape == (1, 2, 16, 32, 32)
    vnets = {m.name: m for m in breadth_zoo if m.source == "classics" and m.family == "vnet"}
    assert set(vnets) == {"vnet_prostate", "vnet_small", "vnet_bn_elu"} and all(m.status == "ok" for m in vnets.values())


def test_resize_convolution_variants_keep_the_image_size():
    import torch
    from torch import nn

    from nar_classics import vision

    for size in (32, 64):
        plain, resize = vision.DCGANGenerator(size=size), vision.DCGANGenerator(size=size, resize=True)
        z = torch.randn(2, 100, 1, 1)
        with torch.no_grad():
            assert plain.eval()(z).shape == resize.eval()(z).shape == (2, 3, size, size)
        # only the projection of the 1x1 latent stays transposed; every upsampling step is resized
        assert sum(isinstance(m, nn.ConvTranspose2d) for m in resize.modules()) == 1
        assert sum(isinstance(m, nn.Upsample) for m in resize.modules()) == {32: 3, 64: 4}[size]
    autoencoder = vision.PoolingAutoencoder(channels=3, widths=(8, 16, 32)).eval()
    image = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        out = autoencoder(image)
    assert out.shape == image.shape and float(out.min()) >= 0 and float(out.max()) <= 1


def test_dits_have_the_published_sizes(breadth_zoo):
    # Peebles & Xie 2023, table 1 and 4: parameters (M) and Gflops (multiply-adds) of a 256-pixel image
    published = {"dit_s_2": (33, 6.06), "dit_b_4": (130, 5.56), "dit_xl_2": (675, 118.6)}
    models = {m.name: m for m in breadth_zoo if m.source == "classics" and m.family == "dit"}
    for name, (params, gmacs) in published.items():
        assert round(models[name].params / 1e6) == params
        assert abs(models[name].macs / 1e9 - gmacs) / gmacs < 0.01


def test_dit_is_conditioned_on_timestep_and_class():
    import torch

    from nar_classics import generative

    torch.manual_seed(0)
    dit = generative.DiT(width=64, depth=2, heads=4, patch=4, classes=10).eval()
    x = torch.randn(1, 4, 32, 32)
    with torch.no_grad():
        base = dit(x, torch.tensor([10.0]), torch.tensor([3]))
        other_t = dit(x, torch.tensor([500.0]), torch.tensor([3]))
        other_y = dit(x, torch.tensor([10.0]), torch.tensor([7]))
    assert base.shape == (1, 8, 32, 32)  # noise and variance for each latent channel
    assert not torch.allclose(base, other_t) and not torch.allclose(base, other_y)


def test_vq_vae_decodes_from_codebook_entries_and_context_encoder_paints_the_centre():
    import torch

    from nar_classics import generative

    vq = generative.VQVAE(hidden=32, codes=16, dim=8).eval()
    image = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        z = vq.to_codes(vq.encoder(image))
        quantized = vq.quantize(z)
        assert vq(image).shape == image.shape and z.shape == (2, 8, 8, 8)
        rows = quantized.permute(0, 2, 3, 1).reshape(-1, 8)
        # every latent vector is one of the 16 codes, the nearest one
        distance = torch.cdist(rows, vq.quantize.codebook.weight)
        assert torch.allclose(distance.min(1).values, torch.zeros(len(rows)), atol=1e-4)
        nearest = torch.cdist(z.permute(0, 2, 3, 1).reshape(-1, 8), vq.quantize.codebook.weight).argmin(1)
        assert torch.equal(distance.argmin(1), nearest)
    for side in (64, 128):
        encoder = generative.ContextEncoder(side=side, bottleneck=32, widths=(8, 8, 16, 16, 32)).eval()
        with torch.no_grad():
            out = encoder(torch.randn(1, 3, side, side))
        assert out.shape == (1, 3, side // 2, side // 2) and float(out.abs().max()) <= 1


def test_stepped_attention_decoders_are_one_step_with_every_steps_macs(breadth_zoo):
    models = {m.name: m for m in breadth_zoo if m.source == "classics" and m.family == "seq2seq"}
    small = models["seq2seq_bahdanau_small"]
    assert small.nodes < 60  # 24 decoder steps folded to one (IR 13), not 24 copies
    # RNNsearch at vocabulary 8,000, embeddings 256, states 512, 24 source and 24 target tokens:
    # the bidirectional GRU encoder, s0, the keys once, then per target step the query, the
    # energies, the maxout layer, the output projection and the GRU cell
    encoder = 2 * 24 * 3 * 512 * (256 + 512)
    step = 512 * 512 + 24 * 512 + (512 + 256 + 1024) * 512 + 256 * 8000 + 3 * 512 * (256 + 1024 + 512)
    assert small.macs == encoder + 512 * 512 + 24 * 1024 * 512 + 24 * step
    assert models["seq2seq_luong_small"].nodes < 60 and models["seq2seq_luong_wmt"].params > 200e6


def test_pointnet2_samples_the_farthest_points_and_groups_within_the_radius():
    import torch

    from nar_classics import points

    line = torch.tensor([[[float(i), 0.0, 0.0] for i in range(11)]])
    # from the first point: the far end, then the middle
    assert points.farthest_points(line, 3).tolist() == [[0, 10, 5]]
    centres = torch.tensor([[[0.0, 0.0, 0.0], [10.0, 0.0, 0.0]]])
    index = points.ball_query(line, centres, radius=2.5, limit=4)
    # at most 4 points within 2.5, in index order, padded with the first found
    assert index.tolist() == [[[0, 1, 2, 0], [8, 9, 10, 8]]]
    torch.manual_seed(0)
    cloud = torch.rand(2, 3, 256)
    with torch.no_grad():
        assert points.PointNet2(classes=10).eval()(cloud).shape == (2, 10)
        assert points.PointNet2(classes=5, grouping="msg", segment=True).eval()(cloud).shape == (2, 5, 256)


def test_pointnet2_sampling_loop_is_folded_in_the_zoo(breadth_zoo):
    models = {m.name: m for m in breadth_zoo if m.source == "classics" and m.name.startswith("pointnet2")}
    assert set(models) == {"pointnet2_cls_ssg", "pointnet2_cls_msg", "pointnet2_partseg_ssg"}
    # two levels of 512 and 128 farthest-point steps would be thousands of nodes written out
    assert all(m.nodes < 300 for m in models.values())
    assert all(m.coarse == "convolutional" for m in models.values())


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


def _params(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_smp_decoders_trace_over_native_and_timm_encoders(tmp_path):
    smp_source = pytest.importorskip("nar_smp")
    if smp_source.SmpSource().missing():
        pytest.skip("segmentation-models-pytorch is not installed")
    db = tmp_path / "zoo.db"
    wanted = ["unet_resnet34", "fpn_timm-convnext_atto", "segformer_mit_b0", "deeplabv3_vgg16"]
    build_zoo(BuildOptions(db=db, sources=["smp"], patterns=wanted, jobs=1, timeout=300))
    with Zoo([db]) as zoo:
        models = {m.name: m for m in zoo.models()}
    assert sorted(models) == sorted(wanted[:3])
    import sqlite3

    with sqlite3.connect(db) as connection:  # a combination smp refuses is listed, and skipped with smp's reason
        refused = connection.execute("select status, reason from models where name = 'deeplabv3_vgg16'").fetchone()
    assert refused[0] == "skipped" and "dilat" in refused[1]
    unet = models["unet_resnet34"]
    assert (unet.status, unet.family, unet.task, unet.coarse) == ("ok", "unet", "semantic-segmentation", "convolutional")
    source = smp_source.SmpSource()
    entry = next(e for e in source.list_models() if e.name == "unet_resnet34")
    assert unet.params == _params(source.build(entry).module)  # the parameters smp builds, every one counted
    assert models["segformer_mit_b0"].coarse == "hybrid"  # Mix Transformer encoder, convolutional decoder


def test_monai_networks_trace_in_2d_and_3d(tmp_path):
    monai_source = pytest.importorskip("nar_monai")
    if monai_source.MonaiSource().missing():
        pytest.skip("monai is not installed")
    db = tmp_path / "zoo.db"
    wanted = ["basic_unet_2d", "basic_unet_3d", "unetr_f16_h768_3d", "dynunet_5_3d"]
    build_zoo(BuildOptions(db=db, sources=["monai"], patterns=wanted, jobs=1, timeout=300))
    with Zoo([db]) as zoo:
        models = {m.name: m for m in zoo.models()}
    assert sorted(models) == sorted(wanted)
    assert models["basic_unet_2d"].graph_hash != models["basic_unet_3d"].graph_hash
    # the same network in 3D: 3x3x3 kernels where 2D has 3x3, so 3x the weights of each convolution
    assert models["basic_unet_3d"].params > 2.5 * models["basic_unet_2d"].params
    assert models["unetr_f16_h768_3d"].coarse == "hybrid" and models["dynunet_5_3d"].family == "dynunet"
    source = monai_source.MonaiSource()
    entry = next(e for e in source.list_models() if e.name == "unetr_f16_h768_3d")
    assert models["unetr_f16_h768_3d"].params == _params(source.build(entry).module)


def test_torchaudio_models_trace_beside_a_cpu_torch(tmp_path):
    audio_source = pytest.importorskip("nar_torchaudio")
    if audio_source.TorchaudioSource().missing():
        pytest.skip("torchaudio is not installed")
    db = tmp_path / "zoo.db"
    wanted = ["wav2vec2_base", "conformer_small", "deepspeech"]
    build_zoo(BuildOptions(db=db, sources=["torchaudio"], patterns=wanted, jobs=1, timeout=300))
    with Zoo([db]) as zoo:
        models = {m.name: m for m in zoo.models()}
    assert sorted(models) == sorted(wanted)
    assert models["deepspeech"].coarse == "recurrent" and models["wav2vec2_base"].family == "wav2vec2"
    source = audio_source.TorchaudioSource()
    entry = next(e for e in source.list_models() if e.name == "conformer_small")
    built = source.build(entry)
    assert models["conformer_small"].params == _params(built.module.conformer)  # the shim adds no weights


def test_a_torchaudio_whose_extension_cannot_load_still_imports(tmp_path):
    """A torchaudio wheel linked against CUDA, beside a CPU torch, fails in `_extension` on import;
    the compat guard lets its pure-Python models import (stand-in package, so no torchaudio needed)."""
    import subprocess
    import sys
    import textwrap

    package = tmp_path / "torchaudio"
    (package / "_extension").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import _extension\nfrom . import models\n")
    (package / "_extension" / "__init__.py").write_text(
        "raise OSError('Could not load this library: _torchaudio.abi3.so')\n")
    (package / "models.py").write_text(
        "from torchaudio._extension import _IS_TORCHAUDIO_EXT_AVAILABLE\nclass Wav2Letter: pass\n")
    script = textwrap.dedent("""
        from narcli.trace.compat import ensure_torchvision_importable
        ensure_torchvision_importable()
        import torchaudio.models
        print(torchaudio.models.Wav2Letter.__name__, torchaudio.models._IS_TORCHAUDIO_EXT_AVAILABLE)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.split() == ["Wav2Letter", "False"]
