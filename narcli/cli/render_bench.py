"""Plain-text output of `nar bench`, `nar bench --zoo`, `nar calibrate` and `nar eval calibration`."""

from __future__ import annotations

import os
from typing import Any

from narcli.cli.common import safe
from narcli.errors import printable


def print_bench(result: Any, warnings: Any) -> None:
    """One measurement: median and IQR, the machine, whether it was stored, and how quiet the machine
    was (on `warnings`, the stderr console, when it was busy)."""
    from narcli.bench.runner import describe_device

    print(f"{printable(result.name)}: median {result.median_ms:.3g} ms (IQR {result.iqr_ms:.2g} ms) at batch {result.batch}, "
          f"{result.runs} runs after {result.warmup} warm-up runs")
    if result.inputs:
        print(inputs_line(result.inputs, result.batch, result.assumed))
    pinned = f", pinned to CPU {','.join(map(str, result.pinned))}" if 0 < len(result.pinned) < (os.cpu_count() or 1) else ""
    print(f"on {describe_device(result)}{pinned}; "
          + (f"stored under graph {result.graph_hash[:12]}" if result.stored else "not stored"))
    if result.quiet:
        verdict = bench_verdict(result.quiet, result.stored)
        (warnings.print(f"[yellow]warning:[/] {safe(verdict)}") if result.busy else print(verdict))
    if result.disturbed:
        line = attempts_line(result.disturbed, result.busy)
        (warnings.print(f"[yellow]warning:[/] {safe(line)}") if result.busy else print(line))


def inputs_line(inputs: list[dict[str, Any]], batch: int, assumed: str | None) -> str:
    """The inputs a timing was taken at (a latency says little without them), and whether they were
    guessed: a file's model timed without --input-shape runs at what the scan assumed."""
    from narcli.trace.inputs import InputSpec

    shown = ", ".join(str(InputSpec.from_json(i)) for i in inputs)
    line = f"input {shown}" + (f" (batch {batch} in the timing)" if batch != 1 else "")
    if assumed:
        line += f"; assumed: {assumed}: give --input-shape to time it at another size"
    return printable(line)


def attempts_line(disturbed: list[dict[str, Any]], busy: bool) -> str:
    """What the measurements other than the one shown were: disturbed, taken again (`runner.bench_target`;
    when all were busy, the one shown is the fastest, `runner.least_disturbed`)."""
    medians = ", ".join(f"{d['median_ms']:.3g}" for d in disturbed)
    if busy:
        return (f"busy in all {len(disturbed) + 1} measurements; the fastest is shown "
                f"(the other {'median' if len(disturbed) == 1 else 'medians'} {medians} ms)")
    first = next((r for d in disturbed for r in d.get("reasons", [])), "")
    which = "the first measurement was" if len(disturbed) == 1 else f"the first {len(disturbed)} measurements were"
    many = "median" if len(disturbed) == 1 else "medians"
    return f"measured again: {which} disturbed ({many} {medians} ms" + (f"; {first})" if first else ")")


def bench_verdict(quiet: dict, stored: bool) -> str:
    """One line on the machine while timing: quiet, or busy and why (and what to do)."""
    from narcli.bench.quiet import Quietness, slowed_from_outside, threads_beside_others

    line = Quietness(**quiet).describe()
    if quiet.get("busy"):
        # a core slowed from outside this machine is nothing the user can close: only waiting helps
        advice = "measure again later" if slowed_from_outside(quiet) else "close what runs beside it and measure again"
        fewer = threads_beside_others(quiet)
        if fewer:
            advice += f", or measure at --threads {fewer} to leave its cores to it"
        line += (" — stored anyway (--allow-busy)" if stored else
                 f" — this timing is not to be trusted and was not stored; {advice} (--allow-busy keeps it)")
    return line


def print_reference_summary(summary: dict[str, Any]) -> None:
    busy = f", {summary['busy']:,} timings not stored (machine busy)" if summary.get("busy") else ""
    print(f"measured {summary['measured']:,}, failed {summary['failed']:,}, skipped for memory {summary['skipped']:,}{busy} "
          f"in {summary['seconds']:.0f} s; {summary['stored']:,} of {summary['candidates']:,} reference models stored")


def print_timings(timings: dict[str, Any] | None) -> None:
    """Where a calibration's times came from, when some were reused from the store: when they were
    taken, and, when they may not be this machine's speed now, how to time them again."""
    from narcli.bench.timing_records import stale_timings

    if not timings or not timings.get("reused"):
        return
    total = timings["reused"] + timings.get("taken_now", 0)
    span = timings.get("reused_from"), timings.get("reused_to")
    when = "" if not span[0] else f" (taken {span[0]})" if span[0] == span[1] else f" (taken {span[0]} to {span[1]})"
    why = stale_timings(timings)
    print(f"{timings['reused']} of {total} timings reused from the store{when}"
          + (f"; {why}: --fresh times them all again" if why else ""))


def stand_ins_line(count: int) -> str:
    """What `calibrate.measured_with_replacements` did, for the summaries of both calibration commands."""
    return (f"{count} stand-in{'s' * (count != 1)} from further down the calibration order timed in place of "
            "models the machine left out")


def print_calibrated(name: str, head: dict[str, Any]) -> None:
    device = head["device"]
    print(f"calibrated {name!r} on {len(head['models'])} zoo models at {device['threads']} thread"
          f"{'s' * (device['threads'] != 1)}; wrote {head['path']}; 90 % interval ±{head['half_width_pct']:.0f} %; "
          f"use `nar predict MODEL --device {name}`")
    import math

    from narcli.bench.transfer import FIT_COLUMNS
    from narcli.predict.latency_parts import DISPATCH_ELEMENTS, DISPATCH_MS, PARTS

    scales = head.get("scales") or []
    if len(scales) in (len(FIT_COLUMNS), len(PARTS)):  # a one-thread head, or one over one thread (`transfer`)
        *work, dispatch = scales if len(scales) == len(FIT_COLUMNS) else (*scales, None)
        against = ", ".join(f"{part} ×{math.exp(scale):.2f}" for part, scale in zip(FIT_COLUMNS, work))
        print(f"at 1 thread against the reference machine's times: {against}"
              + (f"; plus {math.exp(dispatch) * DISPATCH_MS * 1000:.0f} µs per operation call on a large output "
                 f"(half that on {DISPATCH_ELEMENTS:,} numbers, next to nothing on a few hundred)"
                 if dispatch is not None else ""))
    if head.get("thread_factors"):  # `transfer.fit_over_one_thread`
        from narcli.bench.transfer import LEGACY_PARTS
        from narcli.predict.latency_parts import THREAD_PARTS

        names = THREAD_PARTS if head.get("thread_scales") else LEGACY_PARTS  # before 2026-12-05: per work part
        factors = ", ".join(f"{part} ×{factor:.2f}" for part, factor in zip(names, head["thread_factors"]))
        pooled = head.get("factors_half")  # since 2026-12-07: the factors' own spread pooled with many days'
        factors_text = f"±{(math.exp(pooled) - 1) * 100:.0f} %, their own ±{head['own_half_width_pct']:.0f} % " \
            "pooled with their spread over many days" if pooled else f"±{head['own_half_width_pct']:.0f} %"
        print(f"at {device['threads']} threads against 1 (the same models timed at both): {factors}; "
              f"interval the wider of the thread factors' ({factors_text}) and the 1-thread "
              f"head's (±{(math.exp(head['one_thread_half']) - 1) * 100:.0f} %)")
    elif head.get("prior_half_width_pct") is not None:
        from narcli.bench.transfer import PRIOR_MODELS

        count = len(head["models"])
        print(f"interval: this machine's spread over {count} model{'s' * (count != 1)} "
              f"(±{head['own_half_width_pct']:.0f} %) pooled with the reference head's on designs new to it "
              f"(±{head['prior_half_width_pct']:.0f} %, "
              f"counted as {PRIOR_MODELS} models)"
              + ("; calibrating with more models (--models 20) makes it more this machine's own"
                 if count < 2 * PRIOR_MODELS else ""))
    print_timings(head.get("timings"))
    if head.get("stand_ins"):
        print(stand_ins_line(head["stand_ins"]))
    missing = head.get("asked", 0) - len(head["models"])
    if missing > 0:  # busy timings (or a spent budget) left models out: the head is weaker than asked for
        print(f"note: {missing} of the {head['asked']} models asked for were not measured (the machine was busy "
              "while timing them, or the budget ran out); run the same command again when the machine is quiet "
              "to add them — what was measured is kept")


def print_calibration_evaluation(result: dict[str, Any]) -> None:
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(result["kinds"].items(), key=lambda kv: -kv[1]))
    print(f"held-out: {len(result['held_out'])} zoo models ({kinds}; {result['new_families']} of families the "
          f"reference head never fitted), {result['gmacs_range'][0]}–{result['gmacs_range'][1]} GMACs, "
          f"{result['device']['threads']} thread{'s' * (result['device']['threads'] != 1)}")
    print(f"{'K':>3}  {'calibrated MAPE / ±10 %':>24}  {'Spearman':>8}  {'coverage':>8}  {'±interval':>9}"
          f"  {'previous head':>14}  {'MACs-only':>10}  {'rescaled':>9}")
    for row in result["results"]:
        c, p, m, n = row["calibrated"], row["previous_head"], row["macs_linear"], row["reference_rescaled"]
        print(f"{row['k']:>3}  {c['mape']:>11.1f} % / {c['within10']:>5.1f} %  {c['spearman']:>8.3f}  "
              f"{c['coverage90']:>6.0f} %  {c['half_width_pct']:>7.0f} %  {p['mape']:>12.1f} %  {m['mape']:>8.1f} %"
              f"  {n['mape']:>7.1f} %")
    if result.get("stand_ins"):
        print(f"calibration: {stand_ins_line(result['stand_ins'])} (never a held-out model)")
    print_timings(result.get("timings"))
