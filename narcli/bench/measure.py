"""The measuring protocol: warm up, then R timed runs; median and interquartile range of the runs no
probe beside them saw a slowed core (`quiet.slowed_runs`; more runs are timed to make up for them).
CPU threads are pinned (and reported), CUDA is synchronised around every run. The timer is a
parameter, so tests run it with a fake clock."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from narcli.errors import NarError, UsageError

WARMUP_RUNS = 3
WARMUP_SECONDS = 0.5  # keep warming up until this long has passed (allocator, caches, clocks)


@dataclass
class Measurement:
    median_ms: float
    iqr_ms: float
    runs: int
    warmup: int
    times_ms: list[float]
    warmup_ms: float = 0.0  # time spent warming up (what a run costs beyond the timed runs is the rest)
    quiet: dict | None = None  # `quiet.Quietness` of the timed runs, when they were watched
    left_out: list[int] = field(default_factory=list)  # runs beside a slowed core, not in the median

    def to_dict(self) -> dict:
        return asdict(self)


def check_repeat(repeat: int) -> None:
    if not 1 <= repeat <= 100_000:
        raise UsageError(f"--repeat must be between 1 and 100,000, not {repeat}")


def time_runs(run: Callable[[], None], repeat: int, timer: Callable[[], float] = time.perf_counter,
              sync: Callable[[], None] = lambda: None, warmup_runs: int = WARMUP_RUNS,
              warmup_seconds: float = WARMUP_SECONDS, max_seconds: float | None = None,
              min_repeat: int = 5, watch_threads: int | None = None,
              compute_probe: Callable[[], float] | None = None) -> Measurement:
    """Warm up (at least `warmup_runs` runs and `warmup_seconds`), then time `repeat` runs — or,
    with `max_seconds`, stop early once that much timed running is done and `min_repeat` runs are
    in (the reference dataset's protocol: a slow model gets fewer runs, never fewer than five).
    With `watch_threads` (the CPU threads the runs were given; 0 for a GPU), the machine is watched
    around the timed runs and the verdict (`quiet.assess`) comes with the measurement;
    `compute_probe` (ms of a fixed matrix product at those threads) is timed beside the loop probe.
    Runs beside a slowed probe are left out of the median while they are few enough
    (`quiet.too_slowed`), and watched runs go on (up to 4x `repeat` and 3 s) until `repeat` of them
    ran at full speed, as far as the probes taken by then tell."""
    from narcli.bench import quiet

    check_repeat(repeat)
    warmup, began = 0, timer()
    while warmup < warmup_runs or timer() - began < warmup_seconds:
        run()
        sync()
        warmup += 1
        if warmup >= 50:
            break
    warmed = (timer() - began) * 1000
    times: list[float] = []
    watched = watch_threads is not None
    probes: list[float] = []
    computed: list[float] = []  # the matrix product's, at the same points
    probed_at: list[int] = []  # how many timed runs came before each probe
    since_probe = float("inf")  # ms of timing since the last probe
    # and at least MEDIAN_RUNS probes over the asked runs: with a probe before and after 20 runs of
    # a 1 ms model, the slower of two products (10-20 % apart on a quiet core) condemned all 20
    probe_runs = max(1, repeat // (quiet.MEDIAN_RUNS - 1))

    def timed() -> None:
        nonlocal since_probe
        # the core's speed between runs (every PROBE_EVERY s of timing), outside the timed span
        if watched and (since_probe >= quiet.PROBE_EVERY * 1000 or len(times) - probed_at[-1] >= probe_runs):
            take_probes()
            since_probe = 0.0
        start = timer()
        run()
        sync()
        times.append((timer() - start) * 1000)
        since_probe += times[-1]

    def take_probes() -> None:
        probes.append(quiet.probe(timer))
        if compute_probe is not None:
            computed.append(compute_probe())
        probed_at.append(len(times))

    def slowed_now() -> list[int]:  # the runs a probe beside them saw slowed, by either probe
        return sorted(set(quiet.slowed_runs(probes, probed_at, len(times)))
                      | set(quiet.slowed_runs(computed, probed_at, len(times), quiet.COMPUTE_DRIFT)))

    judged = {"probes": -1, "slowed": set()}  # slowed runs as of the last probe: only a probe changes them

    def clean_times() -> list[float]:
        if judged["probes"] != len(probes):
            judged["probes"], judged["slowed"] = len(probes), set(slowed_now())
        return _without(times, judged["slowed"])

    def short_of_full_speed_runs() -> bool:  # fewer than `repeat` runs no probe beside them saw a slowed
        clean = len(clean_times())  # core, or too many that one did
        return clean < repeat or quiet.too_slowed(len(times) - clean, len(times))

    before = quiet.sample() if watched else None
    for _ in range(repeat):
        timed()
        if max_seconds is not None and len(times) >= min_repeat and sum(times) >= max_seconds * 1000:
            break
    # watched runs go on, up to 4x as many runs and 3 s, while they jitter (a small model at several
    # threads) or a slowed core took some of them, so that their median steadies
    while watched and max_seconds is None and len(times) < 4 * repeat and sum(times) < 3000 \
            and (_spread(clean_times()) > quiet.SPREAD_LIMIT or short_of_full_speed_runs()):
        timed()
    if watched:
        take_probes()
    after = quiet.sample() if before is not None else None
    slowed = slowed_now()
    # runs beside a slowed core (a neighbour's burst on the shared physical core) are left out of
    # the median; too many of them (`too_slowed`) make the machine busy (assess), and all are kept
    # a median of MEDIAN_RUNS clean runs is enough: a slow model asked for 20 runs (`nar calibrate`)
    # cannot time more within 3 s, and four of 20 left out made it busy three times over
    needed = min(min_repeat, repeat, quiet.MEDIAN_RUNS)
    left_out = slowed if slowed and not quiet.too_slowed(len(slowed), len(times), needed) else []
    counted = _without(times, set(left_out))
    median, iqr = _median_iqr(counted)
    verdict = None
    if before is not None and after is not None:
        spread = iqr / median if median > 0 and len(counted) >= 5 else 0.0
        verdict = quiet.assess(before, after, watch_threads or 0, spread, probes=probes,
                               slowed=(len(slowed), len(times)) if len(probes) >= 2 else None,
                               compute_probes=computed, needed=needed).to_dict()
    return Measurement(median, iqr, len(times), warmup, times, warmed, verdict, left_out)


def _without(times: list[float], dropped: set[int]) -> list[float]:
    return [t for i, t in enumerate(times) if i not in dropped]


def _median_iqr(times: list[float]) -> tuple[float, float]:
    quartiles = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return statistics.median(times), quartiles[2] - quartiles[0]


def _spread(times: list[float]) -> float:
    if len(times) < 5:
        return 0.0
    quartiles = statistics.quantiles(times, n=4)
    return (quartiles[2] - quartiles[0]) / max(statistics.median(times), 1e-12)


def required_bytes(params: int, activations: int, batch: int) -> int:
    """What running the model needs, roughly: fp32 weights, plus every activation of the batch
    (inference frees most of them early; counting all keeps the check on the safe side)."""
    return 4 * params + 4 * activations * batch


def check_fits(params: int, activations: int, batch: int, available: int) -> None:
    needed = required_bytes(params, activations, batch)
    if needed > available:
        raise NarError(f"the model would need about {needed / 2**30:.1f} GiB at batch {batch} "
                       f"({params:,} parameters, {activations:,} activations per sample); "
                       f"{available / 2**30:.1f} GiB is available — refused before allocating")
