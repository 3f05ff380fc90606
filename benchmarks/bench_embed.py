"""Embedding throughput: canonical graph -> features (motifs, WL) -> encoder -> vector, on this CPU.

    python benchmarks/bench_embed.py [--sample 400] [--weights narcli/data/encoder.safetensors]

Prints a table and writes benchmarks/results/embed.json. Target (issue: the NAR encoder):
>= 100 architectures/s for zoo-sized graphs (median ~400 nodes), graph to vector. Also times one
100,000-node graph (a stack of blocks), which must embed within 30 s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import zlib
from pathlib import Path

from common import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def zoo_graphs(db: Path) -> list:
    import sqlite3

    from narcli.graph.arch_graph import ArchGraph

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    return [ArchGraph.from_json(zlib.decompress(blob).decode()) for (blob,) in conn.execute("select data from graphs")]


def embed_graphs(model, graphs: list) -> float:
    """Seconds to go from canonical graphs to normalised vectors."""
    from narcli.encode.features import encode_graph
    from narcli.encode.training import embed_items

    began = time.perf_counter()
    embed_items(model, [encode_graph(g) for g in graphs])
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=400, help="zoo graphs nearest the median size to time")
    parser.add_argument("--db", type=Path, default=ROOT / "narcli" / "data" / "zoo.db")
    parser.add_argument("--weights", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch

    from narcli.encode.weights import load_encoder

    torch.set_num_threads(args.threads)
    model, card = load_encoder(args.weights)
    graphs = zoo_graphs(args.db)
    sizes = sorted(g.num_nodes for g in graphs)
    median = statistics.median(sizes)
    typical = sorted(graphs, key=lambda g: abs(g.num_nodes - median))[:args.sample]
    random.Random(0).shuffle(typical)
    embed_graphs(model, typical[:20])  # warm up
    seconds = embed_graphs(model, typical)
    whole_zoo = embed_graphs(model, graphs)

    from narcli.graph.synthetic import residual_stack

    big = residual_stack(100_000)
    big_seconds = embed_graphs(model, [big])
    results = {
        "machine": machine(), "threads": args.threads, "encoder": card.get("date"),
        "zoo_median_nodes": median,
        "typical": {"graphs": len(typical), "mean_nodes": statistics.mean(g.num_nodes for g in typical),
                    "seconds": seconds, "per_second": len(typical) / seconds},
        "whole_zoo": {"graphs": len(graphs), "seconds": whole_zoo, "per_second": len(graphs) / whole_zoo},
        "graph_100k_nodes": {"nodes": big.num_nodes, "seconds": big_seconds},
        "target_per_second": 100,
    }
    print(f"zoo median graph: {median:.0f} nodes")
    print(f"{len(typical)} median-sized graphs: {results['typical']['per_second']:.0f} architectures/s (target >= 100)")
    print(f"whole zoo ({len(graphs)} graphs): {results['whole_zoo']['per_second']:.0f} architectures/s")
    print(f"one {big.num_nodes:,}-node graph: {big_seconds:.1f} s (target <= 30 s)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "embed.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
