"""Carrying the reference-CPU latency head to this machine and thread count from ~20 measurements.

The reference head predicts a model's latency on one thread of the reference CPU as a sum of its
operations' costs, so the prediction splits two ways (`LatencyHead.parts`). By kind of work:
convolutions and matrix products of a million MACs or more, and the rest, of which the head's
per-call terms are a part of their own. Another CPU runs each faster or slower by its own factor
(oneDNN's convolution kernels differ between CPUs more than matrix products do: the 2-vCPU VM of
2026-12-04 ran convolution nets 1.6-2.4x the reference machine's times and transformers 1.2-1.3x).
A last column counts the operation calls (`latency_parts.DISPATCH_MS` each, a call weighted by its
output's size: `latency_parts.dispatch_calls`), a cost per call at this machine's own rate, which the
reference head's per-call terms do not carry across: without it, small nets with many operations came
out 10-20 % faster than measured. So this machine's
one-thread latency is modelled as

    log t = log(s_conv * convolution + s_matrix * matrix + s_rest * (rest - calls) + s_calls * calls
                + s_dispatch * operations)

with positive scales fitted to the measured models (Gauss-Newton on a Huber loss of the log
error), shrunk towards one common scale by a ridge whose strength is chosen by leave-one-out error
on the same measurements (with 5 models the scales stay together; with 40 they can part). By how
the work spreads over threads: parallel, serial, calls, a recurrence's steps, pointwise convolutions
handed to oneDNN (`fit_over_one_thread`, for more than one
thread; its one-thread head scales the three work parts alone, without the calls and dispatch
columns, which made two-thread predictions worse: `THREADS_WORK_SPLIT`).

The parts a calibration is fitted on are rescaled to what the reference machine measured for
each model (`fitting_parts`, below), which removes most of the reference head's own error from
the fit; what is left is the part of a model's time that moves differently on this machine.

Why Huber: among 20 calibration models there are usually one or two the reference head gets badly
wrong (a large GRU at half its time, SEW-D at 3.4x), and one or two whose time moves unlike the rest. Squared error lets those set the common scale:
on a 2-vCPU VM (2026-11-25, K = 20) the fitted scale was 1.17 where the median ratio was 1.10,
and the calibrated head came out worse than the reference rescaled by that median. Beyond `HUBER` (10 % in log) an
error counts linearly, so one wild model moves the fit little; below it the loss is squared error.

The 90 % interval is ±1.645 robust standard deviations of the leave-one-out log errors (1.4826 ×
their median absolute value): the normal 90 % interval with a scale that one or two calibration
models the reference head gets badly wrong cannot blow up. The split-conformal quantile (the
ceil(0.9 (n + 1))-th smallest error) was tried first: with 20 models it is the second-largest
error, which one such model sets — ±84 % where ±35 % covered 88 % of held-out models
(`nar eval calibration` measures the coverage).

A few models say little about that spread: three calibration models the head happens to fit well
gave ±5.6 % (2026-11-29), and four of five models a user wrote fell outside it; three it fits badly
give ±150 %. So the spread is pooled with a prior, the reference head's own 90 % interval on families
it never fitted (its card's `half`), counted as `PRIOR_MODELS` calibration models: the usual
shrinkage of a variance towards a prior guess, which leaves 20 models' spread four-fifths their own.
`PRIOR_MODELS` is the largest of 3, 5, 10 and 20 that kept coverage at K = 3 at 90 % or more on the
2026-11-25 and 2026-11-27 `nar eval calibration` runs, rescored offline
(`benchmarks/bench_calibration_fit.py`; 10 gave 72 % at two threads); the 2026-11-28 runs are the
ones reported.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# what the calibration's parts were scaled to before fitting (`fitting_parts`); a device head fitted
# otherwise (before 2026-11-28: the reference head's own split) is fitted again from its measurements
FITTED_ON = "reference-measured"
HEAD_PARTS = "head-parts"  # what a head says when no calibration model had a reference time
PRIORS = (0.003, 0.03, 0.3, 3.0)  # ridge strengths tried (per sample, on log-scale differences)
HUBER = 0.1  # log error beyond which a model counts linearly (an outlier of the reference head)
PRIOR_MODELS = 5  # how many calibration models the reference head's own spread counts as
INTERVAL = f"pooled-{PRIOR_MODELS}"  # how a head's `half` was set; heads set otherwise are fitted again
# how a head for more than one thread is fitted (`fit_over_one_thread`); heads fitted otherwise (before
# 2026-12-05: "over-one-thread", one factor per work part; until 2026-12-07 "thread-parts-pointwise", the
# factors' interval unpooled (`THREAD_RATIO_HALF`), a whole recurrence's thread split one step's MACs
# (`latency_parts.recurrent_share`) and its steps part of the serial part; "thread-parts-steps-pooled" for
# 40 minutes, a whole LSTM's steps among them: `latency_parts.recurrent_steps`; until 2026-12-07 19:50
# "thread-parts-own-steps-pooled", the pointwise part's prior placed by a probe of the CPU's pointwise
# convolutions, which moved held-out predictions away from what was measured) are fitted again from their
# measurements
THREADS_FIT = "thread-parts-own-steps-shape"
# the prior shape of the thread factors (log, against the parallel part's), from a pooled fit of 602 one- and
# two-thread timings on this project's 2-vCPU VMs (ten dated `nar eval calibration` runs, 2026-11-25 to 12-07):
# relative to the parallel part, small operations' compute ran 1.38x as slow, the calls 3.3x, PyTorch's own
# recurrent steps 2.3x and the pointwise convolutions that leave the matrix product for oneDNN 0.90x. Before
# the steps had a part of their own (until 2026-12-07) the serial part held both, at 2.1x (THREAD_SHAPE then
# (0, 0.721, 1.114, -0.054), on 535 timings to 12-01). On the Xeon VM of 2026-12-05 the pointwise part ran
# no faster at two threads than at one, at times 3-10x slower, timed in processes whose C allocator was not
# yet held steady (`allocator`); a CPU's own calibration moves it. Measured at two threads only
THREAD_SHAPE = (0.0, 0.32, 1.187, 0.831, -0.1)
# the thread factors' own 90 % half-width (log) on the pooled one- and two-thread timings of the ten dated
# `nar eval calibration` runs at two threads (2026-11-25 to 12-07; each day its own common factor, the shape
# above): +-28.1 %. A calibration's factor interval is pooled with it as the one-thread interval is with the
# reference head's (`PRIOR_MODELS`): scored with each day's prior from the other days alone (before the steps
# part), the mean half-width fell from +-37.6 to +-36.4 % and the coverage stayed 86-100 % (mean 92.9 -> 92.2 %)
# (`benchmarks/bench_calibration_fit.py`, "factor interval pooled"); until 2026-12-07 the factors' own
# interval stood alone
THREAD_RATIO_HALF = 0.2476
# how many thread parts heads had from 2026-12-05 until the pointwise part had its own, and then until the
# recurrence's steps had theirs (2026-12-07): read, then fitted again
LEGACY_THREAD_PARTS = (3, 4)
# the work parts device heads were fitted on before 2026-12-05 (read, then fitted again: `calibrate.refitted`)
LEGACY_PARTS = ("dense", "other compute", "memory", "calls")
# how a one-thread head's columns are split now (`work_columns`): a head that says otherwise was fitted on
# parts that have moved, and is fitted again (until 2026-12-06 "convolution-gemm-rest": the work parts alone;
# until 2026-12-08 "convolution-gemm-rest-calls-dispatch": every operation call counted whole)
WORK_SPLIT = "convolution-gemm-rest-calls-sized-dispatch"
FIT_COLUMNS = ("convolution", "matrix products", "other work", "calls", "dispatch")
# a head over one thread scales the work parts alone at one thread (`prediction_columns`): with the calls
# and dispatch columns, six days of two-thread `nar eval calibration` timings came out worse (mean MAPE
# 14.2 -> 15.1 %, K = 20, in a working copy), where the nine one-thread days came out better (11.4 -> 10.8 %)
THREADS_WORK_SPLIT = "convolution-gemm-rest"


def _predict(theta: np.ndarray, parts: np.ndarray) -> np.ndarray:
    return np.log(np.maximum(np.exp(theta) @ parts.T, 1e-12))


def fit_scales(parts: np.ndarray, y: np.ndarray, prior: float, steps: int = 80, delta: float = HUBER) -> np.ndarray:
    """Log scales (len = parts' columns) minimising the Huber loss of the log errors + prior·n·spread
    of the scales / 2 (damped Gauss-Newton, each step reweighting the errors beyond `delta`)."""
    n, k = parts.shape
    start = float(np.median(y - np.log(np.maximum(parts.sum(1), 1e-12))))
    theta = np.full(k, start)
    centre = np.eye(k) - 1.0 / k
    penalty = prior * n * centre
    damping = 1e-3

    def loss(t: np.ndarray) -> float:
        size = np.abs(_predict(t, parts) - y)
        huber = np.where(size <= delta, 0.5 * size ** 2, delta * (size - 0.5 * delta))
        return float(huber.sum() + 0.5 * t @ penalty @ t)

    current = loss(theta)
    for _ in range(steps):
        scaled = np.exp(theta) * parts
        jacobian = scaled / np.maximum(scaled.sum(1, keepdims=True), 1e-12)  # d prediction / d theta
        r = _predict(theta, parts) - y
        weight = np.minimum(1.0, delta / np.maximum(np.abs(r), 1e-12))  # Huber as reweighted least squares
        gradient = jacobian.T @ (weight * r) + penalty @ theta
        hessian = (jacobian * weight[:, None]).T @ jacobian + penalty
        while True:
            step = np.linalg.solve(hessian + damping * np.eye(k), gradient)
            trial = theta - step
            trial_loss = loss(trial)
            if trial_loss <= current or damping > 1e6:
                break
            damping *= 10
        if trial_loss > current:
            break
        theta, improvement, current = trial, current - trial_loss, trial_loss
        damping = max(damping / 10, 1e-6)
        if improvement < 1e-12:
            break
    return theta


def _loo(parts: np.ndarray, y: np.ndarray, prior: float, delta: float) -> np.ndarray:
    errors = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        theta = fit_scales(parts[keep], y[keep], prior, delta=delta)
        errors.append(float(_predict(theta, parts[i:i + 1])[0] - y[i]))
    return np.array(errors)


def robust_half(errors: np.ndarray, z: float = 1.6449) -> float:
    """z robust standard deviations (1.4826 × the median absolute error) of log errors."""
    return float(z * 1.4826 * np.median(np.abs(errors)))


def pooled_half(own: float, models: int, prior: float, weight: int = PRIOR_MODELS) -> float:
    """The 90 % half-width (log) from `models` leave-one-out errors whose own half-width is `own`,
    pooled with `prior` counted as `weight` models (pooled variances, so the result lies between)."""
    return math.sqrt((models * own ** 2 + weight * prior ** 2) / (models + weight))


def fit_head(parts: np.ndarray, y: np.ndarray, delta: float = HUBER, prior_half: float | None = None) -> dict:
    """The fitted transfer: log scales, the ridge chosen by leave-one-out, and the interval
    (`delta`: the Huber threshold; infinite for squared error). With `prior_half` (the reference
    head's 90 % half-width, log) the interval is pooled with it (`pooled_half`); `loo_half` keeps
    the calibration's own."""
    parts, y = np.asarray(parts, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(y) < 3:
        raise ValueError("at least 3 measured models are needed")
    best = None
    for prior in PRIORS:
        errors = _loo(parts, y, prior, delta)
        score = float(np.mean(errors ** 2))
        if best is None or score < best[0]:
            best = (score, prior, errors)
    _, prior, errors = best
    theta = fit_scales(parts, y, prior, delta=delta)
    own = robust_half(errors)
    pooled = {"half": pooled_half(own, len(y), prior_half), "prior_half": prior_half, "interval": INTERVAL} \
        if prior_half is not None and prior_half > 0 else {"half": own}
    return {"kind": "parts", "scales": theta.tolist(), "prior": prior, "loo_half": own,
            "loo_mape": round(float(np.mean(np.abs(np.exp(errors) - 1)) * 100), 2)} | pooled


def fit_over_one_thread(parts: np.ndarray, y_one: np.ndarray, y: np.ndarray, delta: float = HUBER,
                        prior_half: float | None = None, shape: tuple[float, ...] = THREAD_SHAPE,
                        ratio_half: float | None = THREAD_RATIO_HALF) -> dict:
    """The head for more than one thread, from the same models measured at one thread (`y_one`, log
    ms) and at this thread count (`y`): the one-thread head (`fit_head` on the work columns), times
    a factor per thread part (`latency_parts.THREAD_PARTS`), fitted on each
    model's thread parts rescaled to what it measured at one thread. The factors then say how each
    part speeds up with threads on this CPU, free of the reference head's errors on these few models.
    Their ridge pulls them towards `shape` (`THREAD_SHAPE`) rather than one common factor: 20 models
    rarely tell the parts apart, and one common factor gave a small GRU or MobileNet, which a second
    thread barely helps, the big models' 1.7x. The interval is the wider of the factors' leave-one-out
    interval, pooled with `ratio_half` (`THREAD_RATIO_HALF`: how far a thread ratio strays on many
    days' timings) as the one-thread interval is with the reference head's, and the one-thread
    head's: a figure built on the one-thread prediction is no surer than it."""
    parts, y_one, y = (np.asarray(a, dtype=np.float64) for a in (parts, y_one, y))
    one = fit_head(prediction_columns(parts), y_one, delta, prior_half)
    shape = np.array(shape, dtype=np.float64)
    factors = fit_head(thread_share(parts) * np.exp(y_one)[:, None] * np.exp(shape), y, delta)
    factors_half = pooled_half(factors["loo_half"], len(y), ratio_half) if ratio_half else factors["half"]
    scales = np.array(factors["scales"]) + shape
    return one | {"thread_scales": scales.tolist(), "thread_factors": [round(float(np.exp(t)), 4) for t in scales],
                  "thread_prior": factors["prior"], "one_thread_half": one["half"],
                  "loo_half": factors["loo_half"], "loo_mape": factors["loo_mape"],
                  "factors_half": factors_half, "half": max(factors_half, one["half"]), "threads_fit": THREADS_FIT}


def thread_shape(parts: np.ndarray, y_one: np.ndarray, y: np.ndarray) -> tuple[float, ...]:
    """The thread factors' shape (log, against the parallel part's) that fits many models timed at one
    thread (`y_one`, log ms) and at more (`y`) best, unshrunk: how `THREAD_SHAPE` was set
    (`benchmarks/bench_calibration_fit.py` prints it, and scores each day with the other days' shape)."""
    theta = fit_scales(thread_share(parts), np.asarray(y, dtype=np.float64) - np.asarray(y_one, dtype=np.float64), 0.0)
    return tuple(round(float(t - theta[0]), 3) for t in theta)


def thread_ratio_half(days: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> float:
    """The thread factors' 90 % half-width (log) over many days' timings, each day (parts, log ms at
    one thread, log ms at more) fitted with `THREAD_SHAPE` and one common factor of its own: how
    `THREAD_RATIO_HALF` was set (`benchmarks/bench_calibration_fit.py`, over every dated day)."""
    errors = []
    for parts, y_one, y in days:
        columns = thread_share(parts) * np.exp(y_one)[:, None] * np.exp(np.array(THREAD_SHAPE))
        errors.append(_predict(fit_scales(columns, y, 3.0), columns) - y)
    return robust_half(np.concatenate(errors))


def work_columns(parts: np.ndarray) -> np.ndarray:
    """What a one-thread head scales (`FIT_COLUMNS`), from rows of `LatencyHead.parts`: the prediction
    split by kind of work (`PARTS`), with the per-call terms (the thread part "calls") taken out of the
    other work into a column of their own, then the operation calls (`latency_parts.dispatch_calls`)
    times DISPATCH_MS (zero for rows made before that column existed)."""
    from narcli.predict.latency_parts import PARTS, THREAD_PARTS

    rows = np.atleast_2d(np.asarray(parts, dtype=np.float64))
    work = rows[:, :len(PARTS)]
    calls = np.zeros(len(rows))
    if rows.shape[1] >= len(PARTS) + len(THREAD_PARTS):
        calls = np.minimum(rows[:, len(PARTS) + THREAD_PARTS.index("calls")], work[:, 2])
    dispatch = rows[:, len(PARTS) + len(THREAD_PARTS)] if rows.shape[1] > len(PARTS) + len(THREAD_PARTS) \
        else np.zeros(len(rows))
    return np.column_stack([work[:, 0], work[:, 1], work[:, 2] - calls, calls, dispatch])


def prediction_columns(parts: np.ndarray) -> np.ndarray:
    """The reference prediction split by kind of work (`PARTS`), from rows of `LatencyHead.parts`: what
    a head over one thread scales at one thread (`fit_over_one_thread`)."""
    from narcli.predict.latency_parts import PARTS

    return np.atleast_2d(np.asarray(parts, dtype=np.float64))[:, :len(PARTS)]


def predicted_ms(parts: np.ndarray) -> np.ndarray:
    """The reference prediction (ms) of rows of `LatencyHead.parts`: their work parts' sum."""
    return prediction_columns(parts).sum(1)


def thread_share(parts: np.ndarray) -> np.ndarray:
    """Each row's thread parts (`THREAD_PARTS`, the columns after the work parts) as shares of one;
    ValueError when the rows carry none."""
    from narcli.predict.latency_parts import PARTS, THREAD_PARTS

    rows = np.atleast_2d(np.asarray(parts, dtype=np.float64))
    if rows.shape[1] not in (len(PARTS) + len(THREAD_PARTS), len(PARTS) + len(THREAD_PARTS) + 1):
        raise ValueError("these parts carry no thread split")
    threads = rows[:, len(PARTS):len(PARTS) + len(THREAD_PARTS)]
    return threads / np.maximum(threads.sum(1, keepdims=True), 1e-12)


def predict_log(head: dict, parts: np.ndarray) -> np.ndarray:
    """Predicted log ms for rows of parts (`LatencyHead.parts`): the work columns scaled, then, for a
    head over one thread, its thread factors applied to the thread parts' shares."""
    scales = np.array(head["scales"], dtype=np.float64)
    work = work_columns(parts) if len(scales) == len(FIT_COLUMNS) else prediction_columns(parts)
    if len(scales) != work.shape[1]:  # fitted on an earlier split (WORK_SPLIT), and not fitted again
        raise ValueError("the head was fitted on another split of the reference prediction")
    centre = _predict(scales, work)
    if "thread_scales" in head:
        centre = centre + np.log(np.maximum(thread_share(parts) @ np.exp(np.array(head["thread_scales"])), 1e-12))
    return centre


def measured_on_reference() -> dict[str, float]:
    """Graph hash -> ms the reference machine measured, from the bundled reference set, when the
    installed reference head was trained on that machine's measurements (else nothing)."""
    from narcli.errors import NarError
    from narcli.predict.bundle import DATA_DIR, load_bundle
    from narcli.predict.latency import read_reference

    head = load_bundle().latency
    try:
        rows, card = read_reference(DATA_DIR)
    except NarError:
        return {}
    if head is None or (card.get("device") or {}).get("key") != (head.device or {}).get("key"):
        return {}
    return {row["graph_hash"]: row["median_ms"] for row in rows if row["median_ms"] > 0}


def fitted_on(chosen: list, reference: dict[str, float] | None = None) -> str:
    """What `fitting_parts` scaled these candidates' parts to: FITTED_ON when at least one had a
    reference time, else HEAD_PARTS (another machine's reference set, or none)."""
    reference = measured_on_reference() if reference is None else reference
    return FITTED_ON if any(c.graph_hash in reference for c in chosen) else HEAD_PARTS


def fitting_parts(chosen: list, reference: dict[str, float] | None = None) -> np.ndarray:
    """What the transfer is fitted on: each calibration model's parts (`calibrate.with_parts`; any
    object with `parts` and `graph_hash`), rescaled to
    the time the reference machine measured for it where the reference set has it. The fit then
    learns how this machine differs from the reference machine, not the reference head's errors on
    these few models: a GRU language model it costs at a third of its time, or an SRCNN at two thirds,
    pulled every scale up, and the held-out models came out 10-30 % too slow (2026-11-28). A model
    the user brings has no reference time, so predictions use the parts as they are."""
    from narcli.predict.latency_parts import PARTS, THREAD_PARTS

    reference = measured_on_reference() if reference is None else reference
    out = []
    for candidate in chosen:
        parts = np.asarray(candidate.parts, dtype=np.float64).copy()
        measured = reference.get(candidate.graph_hash)
        total = float(predicted_ms(parts)[0])  # each group of columns sums to the prediction
        if measured and total > 0:  # the operation count after them is no time: it stays
            parts[:len(PARTS) + len(THREAD_PARTS)] *= measured / total
        out.append(parts)
    return np.stack(out)


# the head `nar calibrate` fitted before the parts (a ridge of log latency on the log reference
# prediction and log MACs): `nar eval calibration` shows it beside the new one, and device heads
# saved with it still answer
RIDGE = 0.05  # per sample, on standardised features: little shrinkage, but K = 5 stays solvable


def ridge_fit(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Ridge on standardised features; returns the parameters and the leave-one-out interval."""
    mean, std = x.mean(0), x.std(0) + 1e-9

    def solve(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, float]:
        z = (xs - mean) / std
        centre = ys.mean()
        w = np.linalg.solve(z.T @ z + RIDGE * len(ys) * np.eye(z.shape[1]), z.T @ (ys - centre))
        return w, centre

    w, b = solve(x, y)
    errors = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        if keep.sum() >= 2:
            wi, bi = solve(x[keep], y[keep])
            errors.append(abs(float(((x[i] - mean) / std) @ wi + bi - y[i])))
    half = float(np.quantile(errors, 0.9)) if errors else 0.5
    return {"mean": mean.tolist(), "std": std.tolist(), "weights": w.tolist(), "intercept": float(b), "half": half}


def ridge_apply(head: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """Predicted log latency for feature rows `x`."""
    z = (np.atleast_2d(x) - np.array(head["mean"])) / np.array(head["std"])
    return z @ np.array(head["weights"]) + head["intercept"]
