"""Was the machine quiet while we timed? A timing taken beside a compiler or a browser can be 2-30x
the quiet figure and still look perfectly stable (two torch threads waiting on a core they cannot
have run slowly but evenly), so the spread of the runs alone proves nothing. Like pyperf, we look
at the system around the timed runs, in the process that runs them:

- other processes' CPU: the machine's busy time (/proc/stat) over the timed runs, less our own
  CPU time (getrusage), in cores;
- hypervisor steal time (a VM's neighbour taking the physical core), in cores;
- our own CPU time against the wall time: one thread that got 70 % of the wall clock waited for a
  core;
- involuntary context switches per second (we were preempted);
- the runs' spread (interquartile range over the median);
- CPU frequency where the kernel exposes it (a clock that moved is reported);
- the core's speed itself: a fixed pure-Python loop timed between runs. On a VM whose vCPU shares a
  physical core with another guest, the core runs at about half speed for seconds at a time while
  /proc shows nothing (no steal, no other process): the probe loop took 0.55 ms and 1.1 ms in turn
  on this project's 2-vCPU VM, and a model's median moved 1.5x between two "quiet" runs. Each run
  is judged by the probes on either side of it (`slowed_runs`): up to half of the runs beside
  a slowed core are left out of the median (the runs go on until enough ran at full speed); more
  make the timing busy. Another VM's short bursts (one slow probe in ten, on 2026-11-28) left the
  medians as they were, and made every measurement "busy" while one slow probe was enough. Beside
  the loop, the measuring child times a fixed matrix product at the measurement's thread count
  (`child.matmul_probe`): the same VM's neighbour slowed two-thread arithmetic 10-35 % in episodes
  of seconds, and the one-thread loop saw only half of them. Other guests' memory traffic can slow
  the product (and the model) for a minute at a time, so evenly that nothing inside the measurement
  stands out: its median is also held against the speed this machine reaches at that thread count,
  the fastest tenth of its recent measurements (`compute_against_best`).

`assess` turns two samples into a verdict with reasons. Where /proc is not there (macOS, Windows)
only what getrusage and the runs themselves tell is used, and the verdict says so.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OTHER_CPU_LIMIT = 0.15  # cores other processes may use while we time (a quiet machine: ~0.01)
STEAL_LIMIT = 0.10  # cores the hypervisor may take
OWN_CPU_FLOOR = 0.80  # one thread must get at least this share of the wall clock
SWITCH_LIMIT = 100.0  # involuntary context switches per second of timing
SPREAD_LIMIT = 0.10  # interquartile range / median of the timed runs
FREQUENCY_DRIFT = 0.10  # a CPU clock that moved by more than this during the runs
SPEED_DRIFT = 0.25  # a probe this much slower than the measurement's full speed (`typical_fast`) saw a slowed core
# share of the timed runs beside a slowed core above which the timing is busy; below it, those runs
# are left out of the median (a neighbour's short bursts on a shared physical core, which left most
# runs alone, made every measurement "busy" on 2026-11-28)
SLOWED_SHARE_LIMIT = 0.5
MEDIAN_RUNS = 5  # clean runs a median needs at least (fewer, or fewer than asked for when that is less: busy)
ATTEMPTS = 3  # measurements `nar bench` takes at most while the machine disturbs them
# a fixed matrix product at the measurement's thread count, timed beside the loop: the neighbour's
# bursts on 2026-11-28 slowed two-thread work by 10-35 % in episodes of seconds while the one-thread
# loop showed half of them (the product took 1.12-1.18 ms when quiet, 1.25-1.37 ms in a burst)
COMPUTE_DRIFT = 0.10
# slower than the machine's fastest probe for the whole measurement: a laptop's sustained clock sits
# 20-35 % below its first burst, which is not a busy machine; a shared core's half speed is
SLOWER_THAN_BEST = 0.5
# the matrix product's median over a measurement, slower than the speed this machine reaches at that
# thread count (the fastest tenth of its recent measurements, `store.usual_fast_probe`): other
# guests' memory traffic slowed it for minutes at a time on 2026-11-28 (two threads: product 0.57 ->
# 0.63 ms, resnet18 24.6 -> 29.0 ms for 48 s; one thread: 1.12 -> 1.14-1.20 ms, resnet18 45.5 ->
# 47-49 ms) while the loop probe, in the core's own cache, did not move; inside such a stretch every
# run is equally slow, so only the machine's own record tells
COMPUTE_SLOWER_THAN_BEST = 0.05
# a core that ran this much slower than the machine's fastest, all through a measurement, but less than
# SLOWER_THAN_BEST: not busy (a laptop's sustained clock), but said, so the figure is read with care
# (2026-12-04 here: an attention U-Net timed at 53 ms, its loop 38 % slower than the machine's best,
# where it took 24-28 ms before; the other 39 timings of that hour ran 0-24 % slower)
SLOW_CORE_NOTE = 0.25
PROBE_EVERY = 0.05  # seconds of timing between two probes
PROBE_LOOP = 20_000  # additions in the probe loop (0.55 ms at full speed on this project's VM)
SLOWED_CORE = "the core"  # how the probe's reasons begin: a slowing from outside this machine

_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class Sample:
    wall: float
    own_cpu: float  # seconds of CPU this process used (every thread)
    involuntary: int
    busy_ticks: int | None = None  # the whole machine's non-idle time, less steal
    steal_ticks: int | None = None
    mhz: tuple[float, ...] = ()


@dataclass
class Quietness:
    busy: bool  # another process, or the hypervisor, took CPU time from the measurement
    reasons: list[str] = field(default_factory=list)  # why busy
    unstable: list[str] = field(default_factory=list)  # quiet, but the runs jittered (preempted, spread)
    other_cpu: float | None = None  # cores
    steal: float | None = None  # cores
    own_cpu_share: float = 0.0  # our CPU seconds per wall second, per thread asked for
    switches_per_s: float = 0.0
    spread: float = 0.0
    mhz: list[float] = field(default_factory=list)  # min, max at the end, where readable
    probe_ms: list[float] = field(default_factory=list)  # the speed probe's fastest and slowest, where run
    compute_probe_ms: list[float] = field(default_factory=list)  # the matrix-product probe's, where run
    compute_probe_median: float | None = None  # its median over the measurement (`compute_against_best`)
    threads: int = 0  # the CPU threads measured (the matrix product's speed depends on them)
    slowed_runs: int = 0  # timed runs beside a probe that saw a slowed core (left out of the median when few)
    runs: int = 0  # timed runs, where the probes were matched to them
    seen: str = "proc"  # proc | rusage (no /proc/stat: other processes are not seen)
    # the first measurement at these threads on this machine (`runner.core_speed_checked`): a core
    # slowed all through it cannot be told from the machine's own speed yet
    first_on_machine: bool = False
    # that first measurement's other half (`runner.bench_target`): the median of the measurement it
    # was held against, taken right after it
    checked_against_ms: float | None = None
    # how much slower than the machine's fastest the core ran all through, when SLOW_CORE_NOTE or more
    slower_than_best: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        if self.busy:
            return "machine busy: " + "; ".join(self.reasons)
        others = f"other processes {self.other_cpu:.2f} cores, " if self.other_cpu is not None else ""
        if self.slowed_runs:
            others += f"{self.slowed_runs} of {self.runs} runs beside a slowed core left out, "
        at = f" at {self.threads} thread{'s' * (self.threads != 1)}" if self.threads else ""
        first = (f"; the first measurement{at} on this machine, so a core slowed all through it could not be "
                 "told — measure again at another time to check") if self.first_on_machine else ""
        if self.checked_against_ms:
            first = (f"; the first timing{at} on this machine, so measured twice and each held against the other's "
                     f"core speed (the other median {self.checked_against_ms:.3g} ms)")
        if self.slower_than_best:
            first += (f"; the core ran {self.slower_than_best * 100:.0f} % slower than the fastest this machine has "
                      "shown, all through (a lowered clock, or another VM on its physical core): measure again to check")
        if self.unstable:
            return (f"machine quiet ({others.rstrip(', ')}) but the runs were unstable: " + "; ".join(self.unstable)
                    + f" (more runs, --repeat, steady the median){first}")
        return f"machine quiet ({others}spread {self.spread * 100:.1f} %){first}"


def _proc_ticks() -> tuple[int, int] | tuple[None, None]:
    try:
        fields = _STAT.read_text().split("\n", 1)[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    except (OSError, ValueError):
        return None, None
    return user + nice + system + irq + softirq, steal


def _frequencies() -> tuple[float, ...]:
    out = []
    for path in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))[:256]:
        try:
            out.append(int(path.read_text()) / 1000)
        except (OSError, ValueError):
            continue
    return tuple(out)


def sample() -> Sample:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    busy, steal = _proc_ticks()
    return Sample(time.perf_counter(), usage.ru_utime + usage.ru_stime, usage.ru_nivcsw, busy, steal, _frequencies())


def _tick() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


def probe(timer=time.perf_counter) -> float:
    """ms of a fixed pure-Python loop, the faster of two tries: how fast the core runs right now."""
    best = float("inf")
    for _ in range(2):
        start = timer()
        total = 0
        for i in range(PROBE_LOOP):
            total += i
        best = min(best, timer() - start)
    return best * 1000


def slowed_runs(probes: list[float], probed_at: list[int], runs: int, drift: float = SPEED_DRIFT) -> list[int]:
    """The timed runs (indices) next to a probe that saw a slowed core: more than `drift` slower
    than the measurement's full speed (`typical_fast`). `probed_at[j]`: how many runs came before probe j (non-decreasing); a
    run is judged by the last probe before it and the first after it. One pass over runs and probes."""
    if len(probes) < 2 or min(probes) <= 0:
        return []
    limit = typical_fast(probes, drift) * (1 + drift)
    out, last = [], -1  # `last`: the last probe taken before the run
    for run in range(runs):
        while last + 1 < len(probes) and probed_at[last + 1] <= run:
            last += 1
        before = probes[last] if last >= 0 else 0.0
        after = probes[last + 1] if last + 1 < len(probes) else 0.0
        if before > limit or after > limit:
            out.append(run)
    return out


def typical_fast(probes: list[float], drift: float = SPEED_DRIFT) -> float:
    """What the core does at full speed in this measurement: the probes' lower quartile, unless the
    fastest probe is more than `drift` faster than even that (most of the measurement ran on a
    slowed core; the fastest shows full speed). Not the fastest always: at two threads one product
    in ten ran 5-10 % faster than the rest (thread wake-up), and against that one a quiet
    measurement's every other probe looked slowed (2026-11-28: fastest 0.56 ms, median 0.61)."""
    ordered = sorted(probes)
    quartile = ordered[len(ordered) // 4]
    return ordered[0] if quartile > ordered[0] * (1 + drift) else quartile


def too_slowed(count: int, total: int, needed: int = 0) -> bool:
    """Whether `count` of `total` runs beside a slowed core make the timing busy: more than
    SLOWED_SHARE_LIMIT of them, or too few left (`needed`) to take a median of."""
    return bool(count) and (count > SLOWED_SHARE_LIMIT * total or total - count < needed)


def assess(before: Sample, after: Sample, threads: int, spread: float, tick: int | None = None,
           probes: list[float] | None = None, slowed: tuple[int, int] | None = None,
           compute_probes: list[float] | None = None, needed: int = 0) -> Quietness:
    """The verdict on the interval between two samples, for a measurement that asked for `threads`
    CPU threads and whose timed runs spread by `spread` (IQR / median); `probes`: the speed probe's
    times (ms) taken between the runs, `compute_probes` the matrix product's; `slowed`: (runs beside a
    slowed core, timed runs), where the probes were matched to the runs (`slowed_runs`) — without
    it, the share of slow loop probes counts; `needed`: the runs a median must keep (`too_slowed`)."""
    wall = max(after.wall - before.wall, 1e-9)
    own = max(after.own_cpu - before.own_cpu, 0.0)
    quiet = Quietness(False, own_cpu_share=round(own / wall / max(threads, 1), 3), threads=threads,
                      switches_per_s=round((after.involuntary - before.involuntary) / wall, 1),
                      spread=round(spread, 4), mhz=[min(after.mhz), max(after.mhz)] if after.mhz else [])
    reasons = quiet.reasons
    if before.busy_ticks is not None and after.busy_ticks is not None:
        hz = tick or _tick()
        machine = (after.busy_ticks - before.busy_ticks) / hz / wall
        quiet.other_cpu = round(max(machine - own / wall, 0.0), 3)
        quiet.steal = round(max((after.steal_ticks or 0) - (before.steal_ticks or 0), 0) / hz / wall, 3)
        if quiet.other_cpu > OTHER_CPU_LIMIT:
            reasons.append(f"other processes used {quiet.other_cpu:.2f} CPU cores while timing")
        if quiet.steal > STEAL_LIMIT:
            reasons.append(f"the hypervisor took {quiet.steal:.2f} cores (steal time)")
    else:
        quiet.seen = "rusage"
    if threads == 1 and wall > 0.05 and quiet.own_cpu_share < OWN_CPU_FLOOR:
        reasons.append(f"the measuring thread ran only {quiet.own_cpu_share * 100:.0f} % of the time")
    # preemption and spread with nobody else on the CPU are the measurement's own jitter (threads
    # waiting on each other, a tiny model's runs): reported as unstable, not as a busy machine
    jitter = reasons if reasons or quiet.seen == "rusage" else quiet.unstable  # no /proc: jitter is all we see
    if quiet.switches_per_s > SWITCH_LIMIT:
        jitter.append(f"preempted {quiet.switches_per_s:.0f} times a second")
    if spread > SPREAD_LIMIT:
        jitter.append(f"runs spread {spread * 100:.0f} % (IQR over median)")
    if before.mhz and after.mhz and len(before.mhz) == len(after.mhz):
        drift = max(abs(a - b) / max(b, 1.0) for a, b in zip(after.mhz, before.mhz))
        if drift > FREQUENCY_DRIFT:
            reasons.append(f"a CPU clock moved {drift * 100:.0f} % during the runs")
    if probes and len(probes) >= 2 and min(probes) > 0:
        quiet.probe_ms = [round(min(probes), 3), round(max(probes), 3)]
        matched = slowed is not None
        if not matched:
            slowed = (sum(p > typical_fast(probes) * (1 + SPEED_DRIFT) for p in probes), len(probes))
        count, total = slowed
        product = ""
        if compute_probes and len(compute_probes) >= 2 and min(compute_probes) > 0:
            quiet.compute_probe_ms = [round(min(compute_probes), 3), round(max(compute_probes), 3)]
            if len(compute_probes) >= MEDIAN_RUNS:  # a median of two or three probes is not a figure to keep
                quiet.compute_probe_median = round(sorted(compute_probes)[len(compute_probes) // 2], 4)
            product = f", a matrix product {min(compute_probes):.2f} to {max(compute_probes):.2f} ms"
        if too_slowed(count, total, needed if matched else 0):
            reasons.append(f"{SLOWED_CORE}'s speed changed during the runs (a fixed loop took {min(probes):.2f} to "
                           f"{max(probes):.2f} ms{product}; {count} of {total} "
                           f"{'runs beside a slowed core' if matched else 'probes slow'}"
                           "): another VM on the same physical core, or a moving clock")
        elif count and matched:
            quiet.slowed_runs, quiet.runs = count, total
    quiet.busy = bool(reasons)
    return quiet


def against_best(verdict: dict[str, Any] | None, best_ms: float | None) -> dict[str, Any] | None:
    """The verdict, made busy when every probe of this measurement ran SLOWER_THAN_BEST slower than
    the fastest this machine has shown (`best_ms`): a core slowed for the whole measurement looks
    steady from inside it."""
    probes = (verdict or {}).get("probe_ms") or []
    if not probes or not best_ms or probes[0] / best_ms - 1 <= SLOWER_THAN_BEST:
        return verdict
    reason = (f"{SLOWED_CORE} ran at {best_ms / probes[0] * 100:.0f} % of the speed it has shown on this machine "
              f"(a fixed loop took {probes[0]:.2f} ms, at best {best_ms:.2f} ms): another VM on the same physical "
              "core, or a lowered clock")
    return verdict | {"busy": True, "reasons": [*verdict.get("reasons", []), reason]}


def note_slow_core(verdict: dict[str, Any] | None, best_ms: float | None) -> dict[str, Any] | None:
    """A quiet verdict whose fastest loop probe ran SLOW_CORE_NOTE or more slower than the machine's
    fastest (`best_ms`) says by how much (`slower_than_best`): not busy, but worth measuring again."""
    probes = (verdict or {}).get("probe_ms") or []
    if verdict is None or verdict.get("busy") or not probes or not best_ms \
            or probes[0] / best_ms - 1 < SLOW_CORE_NOTE:
        return verdict
    return verdict | {"slower_than_best": round(probes[0] / best_ms - 1, 3)}


# where the kernel exposes frequency scaling; without it (a VM: this project's, 2026-12-04) the
# guest's clock does not move, so a core slowed evenly is another guest on the physical core
CPUFREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq")


def clock_can_change() -> bool:
    """Whether this machine's CPU clock can move: a laptop's settles below its first burst, which
    slows the loop probe and the matrix product alike and is not a busy machine. Where it cannot,
    the same even slowing was measured on this VM beside runs 13 % slower than the quiet ones
    (2026-12-04, 1 thread: 53.3 ms beside 46.9 ms, all three called quiet), so no clock explains
    it away (`compute_against_best`'s `clock`)."""
    return CPUFREQ.exists()


def compute_against_best(verdict: dict[str, Any] | None, best_ms: float | None,
                         clock: float = 1.0, seen: int = 0, capped_over: float | None = None) -> dict[str, Any] | None:
    """The verdict, made busy when the matrix product's median over this measurement ran more than
    COMPUTE_SLOWER_THAN_BEST slower than the speed this machine reaches at the same thread count
    (`best_ms`: the fastest tenth of the `seen` measurements before it, or a ceiling over the lowest
    median it has shown, `capped_over`, when that is faster; with `seen` 0 that lowest), beyond what
    the core's own clock explains (`clock`: this measurement's fastest loop probe over the machine's
    fastest, >= 1). A laptop whose clock settles 20-35 % below
    its first burst slows both probes alike, which is not a busy machine (`SLOWER_THAN_BEST`);
    memory traffic from other VMs slows the product and leaves the loop alone."""
    typical = (verdict or {}).get("compute_probe_median")
    expected = (best_ms or 0.0) * max(clock, 1.0)
    if not typical or not expected or typical / expected - 1 <= COMPUTE_SLOWER_THAN_BEST:
        return verdict
    threads = verdict.get("threads") or "?"
    at = f"{threads} thread{'s' * (threads != 1)}{', allowing for the clock' if clock > 1.005 else ''}"
    if not seen:
        basis = f"at best {best_ms:.3f} ms at {at}"
    elif not capped_over:
        basis = f"the fastest tenth of its last {seen} measurements at {at} took {best_ms:.3f} ms or less"
    else:
        basis = (f"held against {best_ms:.3f} ms at {at}, {(best_ms / capped_over - 1) * 100:.0f} % over the fastest "
                 f"it has shown ({capped_over:.3f} ms): the fastest tenth of its last {seen} measurements ran slower")
    reason = (f"{SLOWED_CORE}'s arithmetic ran {(typical / expected - 1) * 100:.0f} % slower than it has on this "
              f"machine (a fixed matrix product took {typical:.3f} ms in the median; {basis}): "
              "other VMs' memory traffic, or a busy memory bus")
    return verdict | {"busy": True, "reasons": [*verdict.get("reasons", []), reason]}


def slowed_from_outside(verdict: dict[str, Any]) -> bool:
    """Whether every reason a verdict is busy is the core's speed: nothing on this machine to close."""
    reasons = verdict.get("reasons") or []
    return all(reason.startswith(SLOWED_CORE) for reason in reasons)


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity where the OS has one, else every core)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_beside_others(quiet: dict[str, Any], cores: int | None = None) -> int | None:
    """A thread count that leaves other processes their cores (of `cores`, default `usable_cores`),
    for a timing at several threads they disturbed: beside one busy process on a 16-core host, 16
    torch threads ran resnet18 at 60x its quiet time (2026-12-04; one thread waits on the shared core
    and the rest wait for it at every step). None at one thread, when no other process was seen, or
    when no cores would be left."""
    threads, other = quiet.get("threads") or 0, quiet.get("other_cpu")
    if threads <= 1 or other is None or other <= OTHER_CPU_LIMIT:
        return None
    cores = usable_cores() if cores is None else cores
    left = min(threads, cores) - max(1, math.ceil(other - OTHER_CPU_LIMIT))
    return left if left >= 1 else None


def pin(threads: int) -> list[int]:
    """Pin this process to `threads` of the CPUs it may use, the highest-numbered first (CPU 0
    takes most interrupts); nothing when it may use no more than that. Returns the CPUs kept."""
    if not hasattr(os, "sched_setaffinity"):
        return []
    allowed = sorted(os.sched_getaffinity(0))
    if threads >= len(allowed):
        return allowed
    chosen = allowed[-threads:]
    try:
        os.sched_setaffinity(0, chosen)
    except OSError:
        return allowed
    return chosen


def other_cpu_now(window: float = 1.0, sleep=time.sleep) -> float | None:
    """Cores other processes use over the next `window` seconds while this one sleeps; None
    where /proc/stat is not there."""
    before = sample()
    sleep(window)
    after = sample()
    if before.busy_ticks is None or after.busy_ticks is None:
        return None
    own = max(after.own_cpu - before.own_cpu, 0.0)
    return max((after.busy_ticks - before.busy_ticks) / _tick() - own, 0.0) / max(after.wall - before.wall, 1e-9)


def wait_for_quiet(limit: float = 300.0, report=lambda line: None, window: float = 2.0, sleep=time.sleep) -> bool:
    """Wait (at most `limit` seconds) until other processes use less than OTHER_CPU_LIMIT cores
    over a whole `window`; True once they do (or where it cannot be seen), False at the limit."""
    began = time.monotonic()
    said = False
    while True:
        others = other_cpu_now(window, sleep)
        if others is None or others <= OTHER_CPU_LIMIT:
            return True
        if time.monotonic() - began >= limit:
            return False
        if not said:
            report(f"waiting for the machine to be quiet (other processes use {others:.2f} cores)")
            said = True
