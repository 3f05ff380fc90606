"""The encoder, its Ray actor and the latency head on CUDA, beside the CPU of the same machine.

    python benchmarks/bench_cuda.py [--jobs 16] [--epochs 3] [--out FILE]

Needs a GPU (CPU only: it says so and stops). Featurises the bundled zoo, then:
- embedding throughput (graphs/s) of `Embedder` on CPU and on CUDA, and the largest difference
  between the two sets of vectors;
- `EncoderActor` (what `nar zoo embed --engine ray` runs on a GPU node) on CUDA, against `Embedder`;
- encoder training (`train_encoder`, the shipped recipe for `--epochs` epochs) on each device;
- the latency head (`nar eval latency`'s protocol) trained on each device: seconds and held-out MAPE;
- `nar bench resnet50 --device cuda` through the CLI.
Writes benchmarks/results/cuda.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def timed(fn, *args, **kwargs):
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    began = time.perf_counter()
    value = fn(*args, **kwargs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return value, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cuda.json")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here; run this on a machine with a GPU")
        sys.exit(1)
    from narcli.encode.dataset import zoo_items
    from narcli.encode.embedder import Embedder
    from narcli.zoo.store import Zoo

    out: dict = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    with Zoo() as zoo:
        items, seconds = timed(zoo_items, zoo, False, args.jobs)
        blobs = [(item.graph_hash, zoo.graph_blob(item.graph_hash)) for item in items[:256]]
    out["featurise"] = {"graphs": len(items), "seconds": round(seconds, 1), "jobs": args.jobs}
    encoded = [item.encoded for item in items]
    vectors = {}
    for device in ("cpu", "cuda"):
        embedder = Embedder(device=device)
        embedder.embed_encoded(encoded[:64])  # warm-up (CUDA context, kernels)
        (vectors[device], _), seconds = timed(embedder.embed_encoded, encoded)
        out[f"embed_{device}"] = {"graphs_per_second": round(len(encoded) / seconds, 1), "seconds": round(seconds, 2)}
        print(device, out[f"embed_{device}"], flush=True)
    out["embed_max_abs_difference"] = float(np.abs(vectors["cpu"] - vectors["cuda"]).max())

    from narcli.encode.weights import bundled_weights_path
    from narcli.encode.zoo_embed import EncoderActor

    weights = bundled_weights_path()
    actor = EncoderActor(weights.read_bytes(), weights.with_suffix(".json").read_bytes())
    rows, seconds = timed(actor.embed, blobs)
    position = {item.graph_hash: i for i, item in enumerate(items)}
    difference = max(float(np.abs(np.frombuffer(v, np.float32) - vectors["cuda"][position[h]]).max())
                     for h, v, _, _ in rows)
    out["encoder_actor"] = {"device": actor.describe()["device"], "graphs": len(rows), "seconds": round(seconds, 2),
                            "max_abs_difference_to_embedder": difference}
    print("actor", out["encoder_actor"], flush=True)

    from narcli.encode.dataset import split_random
    from narcli.encode.training import TrainConfig, train_encoder

    train, _ = split_random(items, seed=0)
    for device in ("cpu", "cuda"):
        config = TrainConfig(epochs=args.epochs, device=device)
        _, seconds = timed(train_encoder, items, train, config)
        out[f"train_encoder_{device}"] = {"epochs": args.epochs, "seconds": round(seconds, 1),
                                          "seconds_per_epoch": round(seconds / args.epochs, 2)}
        print("train", device, out[f"train_encoder_{device}"], flush=True)

    from narcli.predict.latency_training import Config, evaluate

    for device in ("cpu", "cuda"):
        result, seconds = timed(evaluate, None, Config(device=device), 0)
        out[f"latency_head_{device}"] = {"seconds": round(seconds, 1), **result["overall"]["head"]}
        print("latency head", device, out[f"latency_head_{device}"], flush=True)

    bench = subprocess.run([sys.executable, "-m", "narcli", "bench", "resnet50", "--device", "cuda", "--json"],
                           capture_output=True, text=True)
    out["nar_bench_cuda"] = json.loads(bench.stdout) if bench.returncode == 0 else {"error": bench.stderr[-400:]}
    print("bench", out["nar_bench_cuda"], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
