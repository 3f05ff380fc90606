"""nar zoo source `classics`: textbook designs no library ships, written here from their papers,
each in a few honest size variants (the sizes the papers and common tutorials use).

Family = the design (`lstm`, `seq2seq`, `tcn`, `unet`, `dcgan`, `vae`, ...); the coarse class
comes from the traced structure, like any family not in nar's reviewed table.
"""

from __future__ import annotations

from narcli import hookimpl
from narcli.sources import BuiltModel, ZooEntry, ZooSource

# name -> (family, task, builder, kwargs, inputs); an input is (shape, dtype) with dtype "long" for ids
TOKENS, VECTOR = "long", "float"


def _catalogue() -> dict[str, tuple]:
    from nar_classics import cifar, generative, imaging, other, points, sequence, translation, vision

    out: dict[str, tuple] = {}
    for cell in ("lstm", "gru", "rnn"):
        family = cell if cell != "rnn" else "elman-rnn"
        for size, (embed, hidden, layers) in {"small": (200, 200, 2), "medium": (650, 650, 2), "large": (1500, 1500, 2)}.items():
            if cell == "rnn" and size == "large":
                continue
            out[f"{cell}_lm_{size}"] = (family, "text-generation", sequence.RecurrentLM,
                                         {"cell": cell, "embed": embed, "hidden": hidden, "layers": layers}, [((1, 35), TOKENS)])
        for name, kwargs in {"bi": {"bidirectional": True}, "uni": {"bidirectional": False, "hidden": 256, "layers": 2}}.items():
            out[f"{cell}_classifier_{name}"] = (family, "text-classification", sequence.RecurrentClassifier,
                                                 {"cell": cell, **kwargs}, [((1, 128), TOKENS)])
        for name, kwargs in {"small": {"hidden": 32, "layers": 1}, "base": {}, "large": {"hidden": 256, "layers": 3, "features": 21}}.items():
            features = kwargs.get("features", 8)
            out[f"{cell}_forecaster_{name}"] = (family, "time-series-forecasting", sequence.RecurrentForecaster,
                                                 {"cell": cell, **kwargs}, [((1, 96, features), VECTOR)])
    for cell in ("gru", "lstm"):
        for attention in (False, True):
            for size, kwargs in {"base": {}, "deep": {"layers": 2, "hidden": 1000, "embed": 620}}.items():
                name = f"seq2seq_{cell}{'_attention' if attention else ''}_{size}"
                out[name] = ("seq2seq", "translation", sequence.Seq2Seq, {"cell": cell, "attention": attention, **kwargs},
                             [((1, 24), TOKENS), ((1, 24), TOKENS)])
    # decoders stepped token by token with attention at every step, as the papers define them
    for name, kwargs in {"seq2seq_bahdanau_rnnsearch": {}, "seq2seq_bahdanau_small": {"vocab": 8000, "embed": 256,
                         "hidden": 512, "align": 512, "maxout": 256}}.items():
        out[name] = ("seq2seq", "translation", translation.BahdanauSeq2Seq, kwargs, [((1, 24), TOKENS), ((1, 24), TOKENS)])
    for name, kwargs in {"seq2seq_luong_wmt": {}, "seq2seq_luong_small": {"vocab": 8000, "embed": 512, "hidden": 512,
                                                                           "layers": 2}}.items():
        out[name] = ("seq2seq", "translation", translation.LuongSeq2Seq, kwargs, [((1, 24), TOKENS), ((1, 24), TOKENS)])
    for name, kwargs, shape in (("tcn_seq_mnist", {"inputs": 1, "channels": 25, "levels": 8, "kernel": 7}, (1, 1, 784)),
                                ("tcn_char_lm", {"inputs": 100, "channels": 450, "levels": 3, "kernel": 3, "outputs": 100}, (1, 100, 400)),
                                ("tcn_forecast", {"inputs": 8, "channels": 64, "levels": 5, "kernel": 3, "outputs": 12}, (1, 8, 168))):
        out[name] = ("tcn", "time-series-forecasting" if "forecast" in name else "sequence-classification",
                     sequence.TCN, kwargs, [(shape, VECTOR)])
    for name, kwargs in {"wavenet_base": {}, "wavenet_small": {"layers": 8, "stacks": 2, "residual": 16, "skip": 128},
                         "wavenet_large": {"layers": 10, "stacks": 4, "residual": 64, "skip": 512}}.items():
        out[name] = ("wavenet", "audio-generation", sequence.WaveNet, kwargs, [((1, 256, 2048), VECTOR)])

    for size, ngf in ((32, 64), (64, 64), (64, 128), (128, 64)):
        out[f"dcgan_generator_{size}px_{ngf}"] = ("dcgan", "image-generation", vision.DCGANGenerator,
                                                  {"ngf": ngf, "size": size}, [((1, 100, 1, 1), VECTOR)])
        out[f"dcgan_discriminator_{size}px_{ngf}"] = ("dcgan", "image-discrimination", vision.DCGANDiscriminator,
                                                      {"ndf": ngf, "size": size}, [((1, 3, size, size), VECTOR)])
    for size in (32, 64):  # resize-convolutions in place of the transposed ones (Odena et al. 2016)
        out[f"dcgan_generator_{size}px_64_resize"] = ("dcgan", "image-generation", vision.DCGANGenerator,
                                                      {"size": size, "resize": True}, [((1, 100, 1, 1), VECTOR)])
    for name, kwargs, shape in (("mnist28", {}, (1, 1, 28, 28)), ("cifar32", {"channels": 3, "widths": (32, 64, 128)},
                                                                   (1, 3, 32, 32))):
        out[f"autoencoder_pool_{name}"] = ("autoencoder", "representation-learning", vision.PoolingAutoencoder, kwargs,
                                           [(shape, VECTOR)])
    for size in (32, 64):
        out[f"wgan_critic_{size}px"] = ("dcgan", "image-discrimination", vision.DCGANDiscriminator,
                                        {"size": size, "critic": True}, [((1, 3, size, size), VECTOR)])
    for name, kwargs in {"mnist": {}, "mnist_deep": {"hidden": (512, 256), "latent": 32},
                         "mnist_tiny": {"hidden": (256,), "latent": 2}}.items():
        out[f"vae_dense_{name}"] = ("vae", "image-generation", vision.DenseVAE, kwargs, [((1, 784), VECTOR)])
        out[f"autoencoder_dense_{name}"] = ("autoencoder", "representation-learning", vision.DenseVAE,
                                            {**kwargs, "variational": False}, [((1, 784), VECTOR)])
    for name, kwargs, shape in (("celeba64", {}, (1, 3, 64, 64)),
                                ("cifar32", {"size": 32, "widths": (32, 64, 128), "latent": 64}, (1, 3, 32, 32)),
                                ("mnist28", {"channels": 1, "size": 32, "widths": (32, 64), "latent": 16}, (1, 1, 32, 32))):
        out[f"vae_conv_{name}"] = ("vae", "image-generation", vision.ConvVAE, kwargs, [(shape, VECTOR)])
        out[f"autoencoder_conv_{name}"] = ("autoencoder", "representation-learning", vision.ConvVAE,
                                           {**kwargs, "variational": False}, [(shape, VECTOR)])
    for name, kwargs, shape in (("unet_original", {}, (1, 1, 256, 256)),
                                ("unet_bn_rgb", {"channels": 3, "batch_norm": True}, (1, 3, 256, 256)),
                                ("unet_bilinear", {"channels": 3, "bilinear": True, "batch_norm": True, "classes": 1}, (1, 3, 256, 256)),
                                ("unet_small", {"base": 32, "depth": 3, "batch_norm": True}, (1, 1, 128, 128)),
                                ("unet_deep", {"base": 32, "depth": 5, "batch_norm": True, "channels": 3}, (1, 3, 256, 256))):
        out[name] = ("unet", "image-segmentation", vision.UNet, kwargs, [(shape, VECTOR)])

    for name, kwargs in {"pointnet_cls": {}, "pointnet_cls_vanilla": {"transforms": False},
                         "pointnet_seg": {"segment": True, "classes": 50}, "pointnet_seg_vanilla": {"segment": True, "classes": 13, "transforms": False}}.items():
        out[name] = ("pointnet", "point-cloud-segmentation" if "seg" in name else "point-cloud-classification",
                     other.PointNet, kwargs, [((2, 3, 1024), VECTOR)])
    for name, kwargs in {"pointnet2_cls_ssg": {}, "pointnet2_cls_msg": {"grouping": "msg"},
                         "pointnet2_partseg_ssg": {"segment": True, "classes": 50}}.items():
        out[name] = ("pointnet", "point-cloud-segmentation" if "seg" in name else "point-cloud-classification",
                     points.PointNet2, kwargs, [((2, 3, 1024), VECTOR)])
    for name, kwargs in {"nerf": {}, "nerf_small": {"depth": 4, "width": 128, "skip": 2}, "nerf_wide": {"width": 512}}.items():
        out[name] = ("nerf", "novel-view-synthesis", other.NeRF, kwargs, [((4096, 3), VECTOR), ((4096, 3), VECTOR)])
    for name, kwargs in {"srcnn_915": {}, "srcnn_955": {"kernels": (9, 5, 5)}, "srcnn_rgb": {"channels": 3}}.items():
        out[name] = ("srcnn", "super-resolution", other.SRCNN, kwargs, [((1, kwargs.get("channels", 1), 128, 128), VECTOR)])
    for scale in (2, 3, 4):
        out[f"espcn_x{scale}"] = ("espcn", "super-resolution", other.ESPCN, {"scale": scale}, [((1, 1, 64, 64), VECTOR)])
    for name, kwargs in {"edsr_baseline_x2": {}, "edsr_baseline_x4": {"scale": 4},
                         "edsr_x2": {"blocks": 32, "width": 256, "res_scale": 0.1}}.items():
        out[name] = ("edsr", "super-resolution", other.EDSR, kwargs, [((1, 3, 48, 48), VECTOR)])
    for name, kwargs in {"mlp_mnist_1x256": {"state": 784, "actions": 10, "hidden": (256,)},
                         "mlp_mnist_2x512": {"state": 784, "actions": 10, "hidden": (512, 512)},
                         "mlp_tabular_3x128": {"state": 64, "actions": 10, "hidden": (128, 128, 128)},
                         "mlp_tabular_2x64": {"state": 16, "actions": 2, "hidden": (64, 64)}}.items():
        out[name] = ("mlp", "classification", other.MLPPolicy, {**kwargs, "critic": False, "activation": "relu"},
                     [((1, kwargs["state"]), VECTOR)])
    out["lenet5"] = ("lenet", "image-classification", other.LeNet5, {}, [((1, 1, 32, 32), VECTOR)])
    out["lenet5_relu_maxpool"] = ("lenet", "image-classification", other.LeNet5,
                                  {"activation": __import__("torch").nn.ReLU, "pool": __import__("torch").nn.MaxPool2d}, [((1, 1, 32, 32), VECTOR)])
    out["siamese_omniglot"] = ("siamese", "image-similarity", other.Siamese, {}, [((1, 1, 105, 105), VECTOR)] * 2)
    out["siamese_small"] = ("siamese", "image-similarity", other.Siamese, {"widths": (32, 64, 64, 128), "embedding": 1024},
                            [((1, 1, 105, 105), VECTOR)] * 2)
    out["dqn_atari"] = ("dqn", "reinforcement-learning", other.AtariDQN, {}, [((1, 4, 84, 84), VECTOR)])
    out["dqn_atari_dueling"] = ("dqn", "reinforcement-learning", other.AtariDQN, {"dueling": True}, [((1, 4, 84, 84), VECTOR)])
    for name, kwargs in {"dqn_mlp_lunar": {"critic": False}, "dqn_mlp_cartpole": {"state": 4, "actions": 2, "hidden": (128, 128), "critic": False}}.items():
        # a value network on a state vector is an MLP: its family is the architecture, not the use
        out[name] = ("mlp", "reinforcement-learning", other.MLPPolicy, kwargs, [((1, kwargs.get("state", 8)), VECTOR)])
    for name, kwargs in {"actor_critic_lunar": {}, "actor_critic_bipedal": {"state": 24, "actions": 4, "hidden": (256, 256)},
                         "actor_critic_cartpole": {"state": 4, "actions": 2, "hidden": (32,)}}.items():
        out[name] = ("actor-critic", "reinforcement-learning", other.MLPPolicy, kwargs, [((1, kwargs.get("state", 8)), VECTOR)])
    for name, kwargs in {"pix2pix_patchgan_70": {}, "pix2pix_patchgan_16": {"layers": 1},
                         "pix2pix_patchgan_286": {"layers": 5}, "pix2pix_pixelgan": {"layers": 0},
                         "cyclegan_patchgan_70": {"channels": 3, "norm": "instance"}}.items():
        out[name] = ("patchgan", "image-discrimination", imaging.PatchGAN, kwargs,
                     [((1, kwargs.get("channels", 6), 256, 256), VECTOR)])
    for name, kwargs, side in (("vnet_prostate", {}, (64, 128, 128)), ("vnet_small", {"base": 8}, (64, 64, 64)),
                               ("vnet_bn_elu", {"act": "elu", "norm": True}, (64, 128, 128))):
        out[name] = ("vnet", "image-segmentation", imaging.VNet, kwargs, [((1, 1, *side), VECTOR)])
    for name, kwargs, shape in (("attention_unet_ct", {}, (1, 1, 64, 128, 128)),
                                ("attention_unet_2d", {"dims": 2, "base": 64, "channels": 3}, (1, 3, 256, 256))):
        out[name] = ("attention-unet", "image-segmentation", imaging.AttentionUNet, kwargs, [(shape, VECTOR)])
    for name, (width, depth, heads, patch) in {"dit_s_2": (384, 12, 6, 2), "dit_s_8": (384, 12, 6, 8),
                                               "dit_b_4": (768, 12, 12, 4), "dit_xl_2": (1152, 28, 16, 2)}.items():
        # the latent of a 256-pixel image, a float timestep and a class label
        out[name] = ("dit", "image-generation", generative.DiT,
                     {"width": width, "depth": depth, "heads": heads, "patch": patch},
                     [((1, 4, 32, 32), VECTOR), ((1,), VECTOR), ((1,), TOKENS)])
    for name, kwargs, shape in (("vqvae_imagenet128", {}, (1, 3, 128, 128)),
                                ("vqvae_cifar32", {"dim": 10}, (1, 3, 32, 32)),
                                ("vqvae_cifar32_small", {"hidden": 128, "residual_hidden": 32}, (1, 3, 32, 32))):
        out[name] = ("vq-vae", "image-generation", generative.VQVAE, kwargs, [(shape, VECTOR)])
    for side in (128, 64):  # an encoder-decoder with a bottleneck: the autoencoder family, trained to inpaint
        out[f"context_encoder_{side}"] = ("autoencoder", "image-inpainting", generative.ContextEncoder,
                                          {"side": side}, [((1, 3, side, side), VECTOR)])
    return out | cifar.catalogue(VECTOR)


class ClassicsSource(ZooSource):
    name = "classics"
    description = ("textbook designs written from their papers: RNNs, seq2seq (Bahdanau, Luong), TCN, WaveNet, GANs, VAEs, U-Net, "
                   "PointNet, PointNet++, NeRF, SR, RL, PatchGAN, V-Net, Attention U-Net, DiT, VQ-VAE, Context Encoder, and CIFAR classifiers "
                   "(ResNet-20..110, WRN, ResNeXt-29, DenseNet-BC)")
    rank = 40

    def list_models(self) -> list[ZooEntry]:
        return [ZooEntry(name, family, task) for name, (family, task, *_) in _catalogue().items()]

    def build(self, entry: ZooEntry) -> BuiltModel:
        import torch

        _, _, builder, kwargs, inputs = _catalogue()[entry.name]
        with torch.device("meta"):
            module = builder(**kwargs).eval()
        tensors = [torch.zeros(shape, dtype=torch.long, device="meta") if dtype == TOKENS else
                   torch.empty(shape, device="meta") for shape, dtype in inputs]
        return BuiltModel(module, tensors)


@hookimpl
def nar_zoo_sources() -> list[ZooSource]:
    return [ClassicsSource()]
