"""Choose the weights of the retrieval embedding's parts on validation queries only.

    python benchmarks/tune_readout.py [--epochs 40] [--seed 0] [--out FILE]

Only the zoo's random training part is used (never its test part, never the real-client or breadth
sets). It is split again as in `tune_wl_mix.py`: 10 % of its families held out whole (unseen-family
queries) and the rest 90/10 by family (known-family queries). NAR trains once on what is left with
the shipped recipe (edited variants included; resumable). Three kinds of validation query search
the whole training part:

- known families: a held-out architecture of a family the model trained on;
- unseen families: one of a family it never saw;
- rewritten: an edited copy (`encode.augment`: one to three of CIFAR stem, another activation,
  width, resolution, head) of a known-family query, standing in for a design someone wrote again
  by hand. The architecture it was made from is withheld from its candidates: a first version
  left it in, and on it the chosen mix dropped the real-client set's nearest-family top-1 from
  0.786 to 0.671 (an edited copy finds its own original too easily to tell the mixes apart).
- other library: a known-family query whose family another zoo source also lists (a ResNet of
  timm when MONAI and torchvision have ResNets too), searched against the architectures that no
  source of its own lists: the design as another library's authors wrote it, the closest the zoo
  comes to code a user writes (2026-11-29; `--kinds 3` scores without it, as before).

The retrieval vector joins four unit parts, cosine = w_learned x learned + w_width x width sketch
+ w_robust x robust sketch + w_decoder x decoder sketch (weights sum to 1). Every mix on a grid is
scored by MAP@20 and MRR@20 on the four query kinds; the chosen mix has the highest mean of those
eight figures. Then the search's second stage (`encode.family_rank`: candidates re-ordered by their
family's share of the ten nearest's vote, the nearest 0, 1 or 2 left in front in cosine order) is
scored at several weights on the chosen mix, by the same criterion; the gentlest stage within 0.005
of the best mean is chosen (smallest weight, then most left in cosine order). Writes
benchmarks/results/readout.json (or --out), with every mix's and every weight's scores.

`--composite-only` skips the grid and scores, on the shipped mix and second stage, queries that read
their parts with other weights than the rows they search: composite queries (a decoder part after
the deepest feature map, or any upsampling) with a larger decoder weight, the rest with a smaller
one (2026-12-02, `readout-composite.json`: no setting beat the shipped read-out by more than 0.004).
`--blocks-only` scores the shipped mix and second stage with each query's blocks and decoder read
as `nar similar` reads a scanned file's (`family_rank.family_order`'s `blocks`; an edited copy read
as the architecture it was made from, whose blocks its edits keep), against the same with nothing
read: how the second stage's handling of a renamed family does on validation queries.
`--tie-only` scores the second stage's tie band (`family_rank.TIE_BAND`: candidates within it of the
nearest's cosine are ordered by the family score, a near-tie broken by the vote) on the shipped mix,
weight and front, with blocks and decoder read; the gentlest band within 0.001 of the best mean is
chosen (2026-12-06, `readout-tie-band.json`).
`--hard-families X` trains with that share of each batch's families drawn as near families
(`TrainConfig.hard_families`; `readout-hard-families.json` at 0.5, against the run at 0 in
`readout-composite.json`).
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from common import machine
from tune_wl_mix import validation_split  # the same validation queries as the WL-mix choice

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PARTS = ("learned", "width", "robust", "decoder")
STEP = 0.1  # the grid; the best mix's neighbours at half this step are tried after it
AT = ("MRR@20", "MAP@20")
QUERIES = ("known families", "unseen families", "rewritten", "other library")
RERANK_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0)
KEEPS = (0, 1, 2)  # nearest candidates left in cosine order in front of the re-ordered rest
RERANK_TOLERANCE = 0.005  # the chosen stage is the gentlest whose mean is within this of the best


def part_vectors(model, graphs: list) -> dict[str, np.ndarray]:
    """Each part of the retrieval vector as unit rows, unweighted."""
    import torch

    from narcli.encode.encoder import collate, node_batches

    model.eval()
    out: dict[str, list[np.ndarray]] = {p: [] for p in PARTS}
    for group in node_batches(graphs, 40_000):
        batch = collate(group, "ops+width", robust=True, decoder=True)
        with torch.no_grad():
            for name, value in model.retrieval_parts(batch).items():
                out[name].append(value.numpy())
    return {name: np.concatenate(rows).astype(np.float32) for name, rows in out.items()}


def other_library_groups(pool: list, queries: list[int], searched: np.ndarray) -> list[tuple[list[int], np.ndarray]]:
    """The known-family queries whose family a zoo source other than their own lists, grouped by the
    sources that list them, each group with its candidates: the searched rows none of those lists."""
    from narcli.search.family import by_listing, other_sources
    from narcli.zoo.store import Zoo

    with Zoo() as zoo:
        listed = zoo.sources_by_hash([item.graph_hash for item in pool])
    sources = [listed.get(item.graph_hash, frozenset()) for item in pool]
    out = []
    for own, members in by_listing(sources, queries):
        mask = searched.copy()
        mask[len(pool):] = False  # edited copies are no other library's version
        mask[:len(pool)] &= other_sources(sources, own)
        families = {pool[r].family for r in np.flatnonzero(mask[:len(pool)])}
        members = [q for q in members if pool[q].family in families]
        if members:
            out.append((members, mask))
    return out


def mixes(step: float = STEP) -> list[dict[str, float]]:
    """Every weighting of the parts on a grid of `step`, the learned part at least 0.3."""
    n = round(1 / step)
    return [mix(width * step, robust * step, decoder * step)
            for width, robust, decoder in itertools.product(range(n + 1), repeat=3)
            if (n - width - robust - decoder) * step >= 0.3 - 1e-9]


def mix(width: float, robust: float, decoder: float) -> dict[str, float]:
    return {"learned": round(1 - width - robust - decoder, 3), "width": round(width, 3), "robust": round(robust, 3),
            "decoder": round(decoder, 3)}


def shipped_mix() -> dict[str, float]:
    """The bundled encoder's read-out mix, from its card."""
    from narcli.encode.weights import bundled_weights_path

    readout = json.loads(bundled_weights_path().with_suffix(".json").read_text())["readout"]
    return mix(round(1 - readout["wl_mix"], 3), readout["robust_mix"], readout["decoder_mix"])


def with_decoder(weights: dict[str, float], decoder: float) -> dict[str, float]:
    """`weights` with the decoder part at `decoder`, the difference taken from the learned share."""
    return weights | {"decoder": decoder, "learned": round(1 - weights["width"] - weights["robust"] - decoder, 3)}


def neighbours(best: dict[str, float], step: float = STEP / 2) -> list[dict[str, float]]:
    """The mixes a half step from `best` in any of the three sketch weights."""
    out = []
    for dw, dr, dd in itertools.product((-step, 0, step), repeat=3):
        w, r, d = best["width"] + dw, best["robust"] + dr, best["decoder"] + dd
        if min(w, r, d) >= -1e-9 and 1 - w - r - d >= 0.3 - 1e-9 and (dw, dr, dd) != (0, 0, 0):
            out.append(mix(max(w, 0), max(r, 0), max(d, 0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--out", type=Path, default=RESULTS / "readout.json")
    parser.add_argument("--hard-families", type=float, default=None,
                        help="train with this share of each batch's families drawn as near families "
                             "(TrainConfig.hard_families; default: the shipped recipe's)")
    parser.add_argument("--vote-only", action="store_true",
                        help="score only the family vote's temperature, on the shipped mix and second stage")
    parser.add_argument("--composite-only", action="store_true",
                        help="score only the composite queries' decoder weight, on the shipped mix and second stage")
    parser.add_argument("--blocks-only", action="store_true",
                        help="score only the second stage with each query's blocks and decoder read, on the shipped mix")
    parser.add_argument("--tie-only", action="store_true",
                        help="score only the second stage's tie band, on the shipped mix, blocks and decoder read")
    parser.add_argument("--kinds", type=int, choices=(3, 4), default=4,
                        help="query kinds in the criterion: 3 leaves out 'other library' (the choice before 2026-11-29)")
    args = parser.parse_args()
    kinds = QUERIES[:args.kinds]

    from narcli.encode.dataset import augmented_items, original_hash, split_random, zoo_items
    from narcli.encode.evaluation import retrieval_metrics
    from narcli.encode.retrieval_eval import checkpoint_path
    from narcli.encode.training import TrainConfig, train_encoder

    items = zoo_items(progress=True)
    train, _ = split_random(items, seed=args.seed)  # the test part is left out from here on
    pool = [items[i] for i in train]
    fit, known, unseen = validation_split(pool, args.seed + 1)
    config = replace(TrainConfig(seed=args.seed, epochs=args.epochs, device=args.device),
                     **({} if args.hard_families is None else {"hard_families": args.hard_families}))
    extra = augmented_items(pool, fit, config.augment, args.seed, progress=True)
    fit_items, fit_index = pool + extra, fit + list(range(len(pool), len(pool) + len(extra)))
    print(f"training NAR on {len(fit)} architectures (+{len(extra)} edited variants)", flush=True)
    trained = train_encoder(fit_items, fit_index, config,
                            checkpoint=checkpoint_path("zoo-readout", config, fit_items, fit_index),
                            on_epoch=lambda e: print(f"  epoch {e['epoch']} {e['stage']} loss {e['loss']}", flush=True))
    # rewritten queries: one edited copy of each known-family query (a seed apart from training's)
    rewritten = augmented_items(pool, known, 1, args.seed + 101, progress=True)
    position = {item.graph_hash: i for i, item in enumerate(pool)}
    originals = [position[original_hash(item)] for item in rewritten]
    graphs = [item.encoded for item in pool] + [item.encoded for item in rewritten]
    family = [item.family for item in pool] + [item.family for item in rewritten]
    rewritten_queries = list(range(len(pool), len(graphs)))
    searched = np.zeros(len(graphs), bool)
    searched[:len(pool)] = True
    parts = part_vectors(trained.model.cpu(), graphs)
    other_library = other_library_groups(pool, known, searched)

    def score(weights: dict[str, float], rerank: float = 0.0, keep: int = 0,
              composite_weights: dict[str, float] | None = None, only: np.ndarray | None = None,
              composite: np.ndarray | None = None, other_weights: dict[str, float] | None = None,
              vote_temperature: float | None = None,
              blocks: dict[int, dict[str, str]] | None = None,
              tie_band: float | str | None = "shipped") -> dict[str, dict[str, float]]:
        vectors = np.concatenate([parts[p] * weights[p] ** 0.5 for p in PARTS], axis=1)
        searching = None
        # queries may read their parts with other weights than the rows they search (composite
        # queries with `composite_weights`, the rest with `other_weights`): a dot product with the
        # rows' vectors is then the sum of the parts' cosines under the query's weights
        if (composite_weights or other_weights) and composite is None:
            raise ValueError("query weights of their own need the composite rows")
        for rows, query_weights in ((composite, composite_weights), (None if composite is None else ~composite, other_weights)):
            if query_weights is None:
                continue
            searching = vectors.copy() if searching is None else searching
            searching[rows] = np.concatenate(
                [parts[p][rows] * (query_weights[p] / weights[p] ** 0.5 if weights[p] else 0.0)
                 for p in PARTS], axis=1)
        out = {}
        for kind, queries in zip(QUERIES, (known, unseen, rewritten_queries)):
            held = originals if kind == "rewritten" else None
            if only is not None:
                kept = [j for j, q in enumerate(queries) if only[q]]
                queries, held = [queries[j] for j in kept], None if held is None else [held[j] for j in kept]
            metrics = retrieval_metrics(vectors, family, queries, (20,), pool_mask=searched, withheld=held,
                                        rerank=rerank, keep=keep, query_embeddings=searching,
                                        vote_temperature=vote_temperature, tie_band=tie_band,
                                        blocks=None if blocks is None else [blocks.get(q) for q in queries])
            out[kind] = {m: round(metrics[m], 4) for m in AT} | {"queries": metrics["queries"]}
        # each group of queries listed by the same sources searches the rows none of them lists
        groups = other_library if only is None else [([q for q in queries if only[q]], mask)
                                                       for queries, mask in other_library]
        scored = [(retrieval_metrics(vectors, family, queries, (20,), pool_mask=mask, rerank=rerank, keep=keep,
                                     query_embeddings=searching, vote_temperature=vote_temperature,
                                     tie_band=tie_band, blocks=None if blocks is None else [blocks.get(q) for q in queries]))
                  for queries, mask in groups if queries]
        counted = sum(m["queries"] for m in scored)
        out["other library"] = {m: round(sum(row[m] * row["queries"] for row in scored) / max(counted, 1), 4) for m in AT}
        return out

    def mean(row: dict) -> float:
        return float(np.mean([row[kind][m] for kind in kinds for m in AT]))

    if args.vote_only:
        vote_step(args, parts, family, known, rewritten_queries, originals, searched, other_library, score, mean)
        return
    if args.blocks_only:
        reads = query_renamings(pool, fit, known, unseen, rewritten_queries, originals, parts, family, searched)
        blocks_step(args, score, mean, kinds, reads, {"known families": known, "unseen families": unseen,
                                                      "rewritten": rewritten_queries})
        return
    if args.tie_only:
        reads = query_renamings(pool, fit, known, unseen, rewritten_queries, originals, parts, family, searched)
        tie_step(args, score, mean, kinds, reads)
        return
    if args.composite_only:
        composite_step(args, score, mean, kinds, composite_rules(graphs), known, unseen, rewritten_queries)
        return
    rows = [{**weights, **score(weights)} for weights in mixes()]
    rows += [{**weights, **score(weights)} for weights in neighbours(max(rows, key=mean))]
    best = max(rows, key=mean)
    chosen_mix = {p: best[p] for p in PARTS}
    reranked = [{"weight": w, "keep": keep, **score(chosen_mix, w, keep)}
                for keep in KEEPS for w in RERANK_WEIGHTS if w or not keep]
    for row in reranked:
        row["mean"] = round(mean(row), 4)
    # the gentlest stage nearly as good as the best (smallest weight, then most candidates kept in
    # cosine order): a family's far member should not jump a much closer architecture of another
    # family for a last half-point of validation score
    top_mean = max(r["mean"] for r in reranked)
    best_rerank = min((r for r in reranked if r["mean"] >= top_mean - RERANK_TOLERANCE),
                      key=lambda r: (r["weight"], -r["keep"]))
    shipped = shipped_mix()
    previous = next((r for r in rows if all(abs(r[p] - shipped[p]) < 1e-9 for p in PARTS)), None) \
        or {**shipped, **score(shipped)}
    other_count = sum(len(queries) for queries, _ in other_library)
    three = max(rows, key=lambda row: float(np.mean([row[kind][m] for kind in QUERIES[:3] for m in AT])))
    print(f"{len(known)} known-family, {len(unseen)} unseen-family, {len(rewritten_queries)} rewritten and "
          f"{other_count} other-library validation queries against {len(pool)} training architectures; "
          f"MRR@20 / MAP@20; criterion: the mean over {', '.join(kinds)}")
    # the grid's best on three kinds (its half-step neighbours were tried around the four-kind best)
    print("best on the grid for the first three kinds: " + " ".join(f"{p} {three[p]:.2f}" for p in PARTS))
    for title, row in (("shipped mix", previous), ("chosen mix", best)):
        print(f"{title:<14} " + " ".join(f"{p} {row[p]:.2f}" for p in PARTS) + "  "
              + "  ".join(f"{kind}: {row[kind]['MRR@20']:.3f} / {row[kind]['MAP@20']:.3f}" for kind in QUERIES)
              + f"  mean {mean(row):.4f}")
    print("second stage (family re-rank) on the chosen mix:")
    for row in reranked:
        print(f"  weight {row['weight']:<5} keep {row['keep']} " + "  ".join(f"{kind}: {row[kind]['MRR@20']:.3f} / {row[kind]['MAP@20']:.3f}"
                                                   for kind in QUERIES) + f"  mean {row['mean']:.4f}"
              + ("  <- chosen" if row is best_rerank else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = {"fit": len(fit), "edited_variants_in_training": len(extra), "known_family_queries": len(known),
           "unseen_family_queries": len(unseen), "rewritten_queries": len(rewritten_queries),
           "other_library_queries": other_count, "epochs": args.epochs,
           "criterion": f"mean of MRR@20 and MAP@20 over {', '.join(kinds)}",
           "chosen_on_three_kinds": {p: three[p] for p in PARTS},
           "chosen": chosen_mix, "previous": previous, "mixes": rows,
           "rerank": {"chosen_weight": best_rerank["weight"], "chosen_keep": best_rerank["keep"], "tolerance": RERANK_TOLERANCE, "weights": reranked},
           "machine": machine()}
    args.out.write_text(json.dumps(out, indent=2) + "\n")


VOTE_TEMPERATURES = (0.005, 0.01, 0.02, 0.04)  # the family vote's temperatures tried (`family_rank.vote`)


def vote_accuracy(vectors: np.ndarray, family: list[str], queries: list[int], mask: np.ndarray,
                  temperature: float, withheld: list[int] | None = None) -> tuple[int, int]:
    """(right, counted): how often the ten nearest candidates' vote (`family_rank.vote` at
    `temperature`) names the query's family, over queries whose family a candidate has."""
    from narcli.encode.family_rank import VOTERS, vote

    labels = np.array(family)
    right = counted = 0
    for j, q in enumerate(queries):
        cosines = vectors[q] @ vectors.T
        cosines[~mask] = -np.inf
        cosines[q] = -np.inf
        if withheld is not None:
            cosines[withheld[j]] = -np.inf
        if not (np.isfinite(cosines) & (labels == labels[q])).any():
            continue
        top = np.argsort(-cosines)[:VOTERS]
        top = top[np.isfinite(cosines[top])]
        shares = vote(labels[top].tolist(), cosines[top].tolist(), temperature)
        counted += 1
        right += max(shares, key=shares.get) == labels[q]
    return right, counted


def vote_step(args, parts, family, known, rewritten, originals, searched, other_library, score, mean) -> None:
    """The family vote's temperature on validation: the vote's family accuracy on the known,
    rewritten and other-library queries, and the second stage's retrieval (which orders by the same
    vote) on the shipped mix."""
    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT, KEEP_NEAREST

    shipped = shipped_mix()
    vectors = np.concatenate([parts[p] * shipped[p] ** 0.5 for p in PARTS], axis=1)
    rows = []
    for temperature in VOTE_TEMPERATURES:
        accuracy = {"known families": vote_accuracy(vectors, family, known, searched, temperature),
                    "rewritten": vote_accuracy(vectors, family, rewritten, searched, temperature, originals)}
        pairs = [vote_accuracy(vectors, family, queries, mask, temperature) for queries, mask in other_library]
        accuracy["other library"] = (sum(a for a, _ in pairs), sum(b for _, b in pairs))
        # the second stage votes at this temperature too
        retrieval = score(shipped, FAMILY_RERANK_WEIGHT, KEEP_NEAREST, vote_temperature=temperature)
        shares = {kind: round(a / max(b, 1), 4) for kind, (a, b) in accuracy.items()}
        row = {"temperature": temperature, "vote_accuracy": shares, "vote_mean": round(float(np.mean(list(shares.values()))), 4),
               "retrieval": retrieval, "retrieval_mean": round(mean(retrieval), 4)}
        rows.append(row)
        print(f"vote temperature {temperature}: vote accuracy " + ", ".join(f"{k} {v:.3f}" for k, v in shares.items())
              + f" (mean {row['vote_mean']:.4f}); second stage mean {row['retrieval_mean']:.4f}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"shipped": shipped, "vote": rows, "machine": machine()}, indent=2) + "\n")


def composite_rules(graphs: list) -> dict[str, np.ndarray]:
    """Two rules for "composite": a decoder part after the deepest feature map (the decoder
    sketch's own), or any upsampling (what a stored prediction's decoder signature says without the
    graph)."""
    from narcli.encode.features import OP_INDEX, decoder_part
    from narcli.graph.decoder import UPSAMPLING

    upsampling = [OP_INDEX[op] for op in UPSAMPLING if op in OP_INDEX]
    return {"decoder part": np.array([decoder_part(graph) is not None for graph in graphs]),
            "upsamples": np.array([bool(np.isin(graph.ops, upsampling).any()) for graph in graphs])}


def query_renamings(pool: list, fit: list[int], known: list[int], unseen: list[int], rewritten: list[int],
                    originals: list[int], parts: dict[str, np.ndarray], family: list[str],
                    searched: np.ndarray) -> dict[int, dict[str, str]]:
    """Each validation query's renaming as `nar similar` reads it (`search.family.query_names`): its
    blocks, and its decoder against the decoders of the architectures NAR trained on where the
    ten nearest searched rows (shipped mix) vote for a decoder family. An edited copy is read as the
    architecture it was made from."""
    from narcli.encode.family_rank import VOTERS, vote
    from narcli.search.family import combine, query_names
    from narcli.search.query import graph_reads
    from narcli.zoo.composite import split_decoder_prototypes
    from narcli.zoo.store import Zoo

    fitted = {pool[row].graph_hash for row in fit}
    with Zoo() as zoo:
        decoders, other_decoders = split_decoder_prototypes(zoo, keep=lambda model: model.graph_hash in fitted)
        read = {row: graph_reads(zoo.graph(zoo.resolve(pool[row].name)))
                for row in sorted(set(known) | set(unseen) | set(originals))}
    shipped = shipped_mix()
    vectors = np.concatenate([parts[p] * shipped[p] ** 0.5 for p in PARTS], axis=1)
    out = {}
    for query, origin in [(q, q) for q in known + unseen] + list(zip(rewritten, originals)):
        cosines = vectors[searched] @ vectors[query]
        cosines[origin] = -np.inf  # itself, or the architecture an edited copy was made from
        top = np.argsort(-cosines)[:VOTERS]
        voted = combine(None, vote([family[i] for i in top], [float(cosines[i]) for i in top]))
        out[query] = query_names(read[origin], decoders, voted, other_decoders)
    return out


def blocks_step(args, score, mean, kinds, reads: dict[int, dict[str, str]], by_kind: dict[str, list[int]]) -> None:
    """The shipped mix and second stage with each query's renaming read and with none."""
    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT, KEEP_NEAREST

    shipped = shipped_mix()
    rows = {}
    for name, blocks in (("nothing read", None), ("blocks and decoder read", reads)):
        row = score(shipped, FAMILY_RERANK_WEIGHT, KEEP_NEAREST, blocks=blocks)
        rows[name] = row | {"mean": round(mean(row), 4)}
        print(f"{name:<24} " + "  ".join(f"{kind}: {row[kind]['MRR@20']:.4f} / {row[kind]['MAP@20']:.4f}"
                                         for kind in QUERIES) + f"  mean {mean(row):.4f}", flush=True)
    renamed = {kind: sum(bool(reads.get(q)) for q in queries) for kind, queries in by_kind.items()}
    print(f"queries renamed by their blocks or decoder: {renamed}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"shipped": shipped, "criterion": f"mean of MRR@20 and MAP@20 over {', '.join(kinds)}",
                                    "rerank_weight": FAMILY_RERANK_WEIGHT, "rerank_keep": KEEP_NEAREST,
                                    "queries_renamed": renamed, "queries": {kind: len(q) for kind, q in by_kind.items()}, "scores": rows,
                                    "machine": machine()}, indent=2) + "\n")


TIE_BANDS = (None, 0.0, 0.001, 0.002, 0.005, 0.01, 0.02)  # the second stage's tie bands tried
TIE_TOLERANCE = 0.001  # the gentlest band whose mean is within this of the best is chosen


def tie_step(args, score, mean, kinds, reads: dict[int, dict[str, str]]) -> None:
    """The second stage's tie band (`family_rank.TIE_BAND`) on the shipped mix, weight and front,
    each query's blocks and decoder read as the search reads them. Chosen: the gentlest band (None,
    then the narrowest) whose mean is within `TIE_TOLERANCE` of the best."""
    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT, KEEP_NEAREST

    shipped = shipped_mix()
    rows = []
    for band in TIE_BANDS:
        row = score(shipped, FAMILY_RERANK_WEIGHT, KEEP_NEAREST, blocks=reads, tie_band=band)
        rows.append({"tie_band": band, **row, "mean": round(mean(row), 4)})
        print(f"tie band {band!s:<6} " + "  ".join(f"{kind}: {row[kind]['MRR@20']:.4f} / {row[kind]['MAP@20']:.4f}"
                                                  for kind in QUERIES) + f"  mean {mean(row):.4f}", flush=True)
    top = max(r["mean"] for r in rows)
    chosen = next(r for r in rows if r["mean"] >= top - TIE_TOLERANCE)
    print(f"chosen tie band: {chosen['tie_band']} (mean {chosen['mean']:.4f}; best {top:.4f})", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"shipped": shipped, "criterion": f"mean of MRR@20 and MAP@20 over {', '.join(kinds)}",
                                    "rerank_weight": FAMILY_RERANK_WEIGHT, "rerank_keep": KEEP_NEAREST,
                                    "tolerance": TIE_TOLERANCE, "chosen_tie_band": chosen["tie_band"], "bands": rows,
                                    "machine": machine()}, indent=2) + "\n")


COMPOSITE_DECODER = (0.35, 0.45, 0.55, 0.65, 0.75)  # the composite queries' decoder weights tried
OTHER_DECODER = (0.25, 0.15, 0.05)  # and the other queries'


def composite_step(args, score, mean, kinds, rules, known, unseen, rewritten) -> None:
    """The decoder weight of composite queries (by each rule in `rules`), taken from the shipped
    mix's learned share, on the shipped mix and second stage."""
    from narcli.encode.family_rank import FAMILY_RERANK_WEIGHT, KEEP_NEAREST

    shipped = shipped_mix()
    rows = []
    composite = rules["decoder part"]
    for other in COMPOSITE_DECODER[:1] + OTHER_DECODER:
        for decoder in COMPOSITE_DECODER[:3]:
            weights, others = with_decoder(shipped, decoder), with_decoder(shipped, other)
            every = score(shipped, FAMILY_RERANK_WEIGHT, KEEP_NEAREST, weights, composite=composite, other_weights=others)
            rows.append({"rule": "decoder part", "composite_weights": weights, "other_weights": others, "all": every,
                         "mean": round(mean(every), 4)})
            print(f"decoder: composite {decoder:.2f} other {other:.2f}: " + "  ".join(
                f"{kind}: {every[kind]['MRR@20']:.3f} / {every[kind]['MAP@20']:.3f}" for kind in QUERIES)
                + f"  mean {mean(every):.4f}", flush=True)
    for rule, composite in rules.items():
        print(f"{rule}: composite rows {int(composite.sum())} of {len(composite)}; queries that are composite: "
              f"known {sum(composite[q] for q in known)}, unseen {sum(composite[q] for q in unseen)}, "
              f"rewritten {sum(composite[q] for q in rewritten)}", flush=True)
        for decoder in COMPOSITE_DECODER:
            weights = with_decoder(shipped, decoder)
            every = score(shipped, FAMILY_RERANK_WEIGHT, KEEP_NEAREST, weights, composite=composite)
            only = score(shipped, FAMILY_RERANK_WEIGHT, KEEP_NEAREST, weights, only=composite, composite=composite)
            rows.append({"rule": rule, "composite_weights": weights, "all": every, "composite_queries": only,
                         "mean": round(mean(every), 4), "composite_mean": round(mean(only), 4)})
            print(f"composite decoder {decoder:.2f}: " + "  ".join(
                f"{kind}: {every[kind]['MRR@20']:.3f} / {every[kind]['MAP@20']:.3f} (composite {only[kind]['MRR@20']:.3f} / "
                f"{only[kind]['MAP@20']:.3f})" for kind in QUERIES) + f"  mean {mean(every):.4f} composite {mean(only):.4f}",
                flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"shipped": shipped, "criterion": f"mean of MRR@20 and MAP@20 over {', '.join(kinds)}",
                                    "composite_decoder": rows, "machine": machine()}, indent=2) + "\n")


if __name__ == "__main__":
    main()
