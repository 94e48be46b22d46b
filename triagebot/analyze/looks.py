"""The sequential design: when a comparison is looked at, how much error each look may
spend, and what one look decides (`judge`), for a batch of comparisons at once.

`verdict.py` states what the verdicts mean and the error budget; this module holds the
machinery: the look schedule, the information-based target (`target_runs`), the
DIFFERENT and SAME boundaries (error spending from `sequential.py`, carried to Student t)
and the closing and futility rules. The report (`verdict.evaluate`, one comparison) and
the power simulation (`bench/stats_power.py`, thousands) judge through `judge`, so the
bench measures the code that decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import numpy as np
from numpy.typing import NDArray
from scipy.stats import chi2, norm

from triagebot.analyze import blocks, sequential
from triagebot.analyze.arrays import FloatArray

DEFAULT_ALPHA: Final = 0.01
SAME_ALPHA: Final = 0.05
DEFAULT_MARGIN: Final = 0.03
# No band by default: a band of 1 % holds DIFFERENT to its error budget even against a
# real 1 % difference, but costs the power the +5 % goals need (bench/stats_power.py).
DEFAULT_NEGLIGIBLE: Final = 0.0
# The DIFFERENT test is sized to find a 5 % change 99 % of the time (a fixed-sample z
# test at the per-side alpha); the target is re-estimated from the noise at every look.
# Sizing above the 95 % wanted pays for what the z sizing leaves out: the t test's few
# degrees of freedom, a target read from noisy early runs, and the looks falling between
# the runs (bench/stats_power.py prints 0.95 .. 0.995 side by side).
DESIGN_EFFECT: Final = 0.05
DESIGN_POWER: Final = 0.99
# A target beyond max_runs still slows the spending (the last look then gets what is
# left), up to this many times max_runs: a noisy comparison's target lies well beyond the
# budget, and spending by the share of the target rather than of max_runs keeps error for
# the last look.
TARGET_CAP: Final = 3
# Linear in the information fraction; the target, not the shape, decides how early a
# quiet comparison spends (the bench prints gamma -2 .. +1 beside it).
GAMMA_DIFFERENT: Final = 0.0
# Carrying z boundaries to Student t at the same tail mass, and re-estimating the target
# from the same runs that the test reads, let more through than the nominal budget: a low
# noise estimate both inflates |T| and shortens the target, so the look spends more just
# when a false alarm is likeliest. How much more depends on how many loose-noise looks
# the spending runs over. A target within the last look closes by then and keeps the
# larger share of alpha/2 per side; a target beyond it spends a little at every look up to
# the last and keeps less. Both hold the whole sequence of looks to its budget
# (`bench/stats_power.py` prints these rows with their simulation error).
SPEND_WITHIN: Final = 0.85
SPEND_BEYOND: Final = 0.73
GAMMA_SAME: Final = 1.0
MIN_RUNS: Final = 4
# The fewest runs by which the DIFFERENT test may have spent all its error: a target read
# from the noise of 4 or 5 runs per arm is too uncertain to spend everything on.
MIN_TARGET: Final = 8
# The target reads the noise as its upper 60 % confidence limit, not the estimate: with
# few degrees of freedom a low estimate is often luck, and the same luck inflates |T|, so
# a target taken at face value would spend fastest exactly when a false alarm is likeliest
# (bench/stats_power.py measures the false alarms of that way beside this one).
SIGMA_QUANTILE: Final = 0.4
RUN_STEP: Final = 2

UNKNOWN, DIFFERENT, SAME = 0, 1, 2
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


# --- looks and boundaries ---------------------------------------------------------------


def look_schedule(max_runs: int, min_runs: int = MIN_RUNS, step: int = RUN_STEP) -> list[int]:
    """Runs per arm at each look: min_runs, +step, ..., and max_runs as the last look."""
    if max_runs <= min_runs:
        return [max(max_runs, 1)]
    looks = list(range(min_runs, max_runs, max(step, 1)))
    return [*looks, max_runs]


def next_look(schedule: Sequence[int], look: int, runs_so_far: int,
              step: int = RUN_STEP) -> int:
    """The look to run to after `look`: the next one, passing over any fewer than `step`
    runs away (its error is left unspent), since a round of one run costs every cell a
    whole start. The last look is never passed over."""
    nxt = look + 1
    while nxt < len(schedule) - 1 and schedule[nxt] - runs_so_far < step:
        nxt += 1
    return nxt


def target_runs(sigma: FloatArray, schedule: Sequence[int], alpha: float = DEFAULT_ALPHA,
                negligible: float = DEFAULT_NEGLIGIBLE, power: float = DESIGN_POWER,
                df: FloatArray | None = None) -> IntArray:
    """Runs per arm at which the DIFFERENT test has spent all its error, for run-to-run
    noise `sigma` (sd of log throughput) estimated on `df` degrees of freedom: the size of
    a one-look z test at SPEND_WITHIN of alpha/2 per side with `power` against a
    DESIGN_EFFECT change (measured from the negligible band) at the noise's upper
    confidence limit (SIGMA_QUANTILE; without `df`, at `sigma` itself), at least
    MIN_TARGET and at most TARGET_CAP times the last look. Unknown noise gets the cap."""
    z = float(norm.isf(SPEND_WITHIN * alpha / 2.0) + norm.isf(1.0 - power))
    delta = math.log1p(DESIGN_EFFECT) - math.log1p(negligible)
    cap = TARGET_CAP * schedule[-1]
    s = np.asarray(sigma, dtype=np.float64)
    if df is not None:
        d = np.maximum(np.asarray(df, dtype=np.float64), 1.0)
        s = s * np.sqrt(d / chi2.ppf(SIGMA_QUANTILE, d))
    if delta <= 0:
        return np.full(s.shape, cap, dtype=np.int64)
    with np.errstate(invalid="ignore", over="ignore"):
        n = np.ceil(2.0 * s**2 * (z / delta) ** 2)
    n = np.nan_to_num(n, nan=cap, posinf=cap)
    return np.clip(n, min(MIN_TARGET, cap), cap).astype(np.int64)


@lru_cache(maxsize=4096)
def _different_z(schedule: tuple[int, ...], look: int, target: int, alpha: float,
                 gamma: float) -> float:
    # Runs below MIN_TARGET say too little about the noise to spend by: those looks
    # spend as the cap would, whatever the target.
    info = sequential.fractions(schedule)[: look + 1]
    last = len(schedule) - 1
    unknown = TARGET_CAP * schedule[-1]
    at = tuple(1.0 if j == last else min(1.0, n / (unknown if n < MIN_TARGET else target))
               for j, n in enumerate(schedule[: look + 1]))
    spend = SPEND_BEYOND if target > schedule[-1] else SPEND_WITHIN
    return sequential.upper_bounds(info, spend * alpha / 2.0, gamma, at)[look]


def different_bounds(schedule: Sequence[int], look: int, targets: IntArray,
                     alpha: float = DEFAULT_ALPHA,
                     gamma: float = GAMMA_DIFFERENT) -> FloatArray:
    """The DIFFERENT z boundary of `look`, one per target: each look spends by
    min(1, runs / target) of the error, the last look all that is left; the error is
    SPEND_WITHIN of alpha/2 per side for a target within the last look, else SPEND_BEYOND."""
    sched = tuple(schedule)
    out = np.empty(targets.shape)
    for t in np.unique(targets):
        out[targets == t] = _different_z(sched, look, int(t), alpha, gamma)
    return out


def same_bounds(schedule: Sequence[int], same_alpha: float = SAME_ALPHA) -> tuple[float, ...]:
    """The SAME z boundaries, one per look: Pocock-like spending by share of the schedule."""
    return sequential.upper_bounds(sequential.fractions(schedule), same_alpha, GAMMA_SAME)


def classify(
    fit: blocks.BlockFit, different_z: float | FloatArray, same_z: float, margin: float,
    negligible: float = DEFAULT_NEGLIGIBLE,
) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
    """(verdict codes, T, DIFFERENT t bound, SAME t bound) for a batch of fits.

    T measures the distance from the negligible band: (|theta| - log(1 + negligible)) / se,
    signed like theta, so with no band it is the plain theta / se."""
    c = sequential.t_bound(different_z, fit.df)
    e = sequential.t_bound(same_z, fit.df)
    m = math.log1p(margin)
    d0 = math.log1p(negligible)
    with np.errstate(invalid="ignore", divide="ignore"):
        t_stat = np.sign(fit.theta) * np.maximum(np.abs(fit.theta) - d0, 0.0) / fit.se
        same = (fit.theta - e * fit.se > -m) & (fit.theta + e * fit.se < m)
        different = np.abs(t_stat) >= c
    codes = np.where(same, SAME, np.where(different, DIFFERENT, UNKNOWN))
    ok = np.isfinite(fit.theta) & np.isfinite(fit.se) & (fit.se > 0)
    return np.where(ok, codes, UNKNOWN).astype(np.int64), t_stat, c, e


@dataclass(frozen=True)
class Look:
    """One look at a batch of comparisons; arrays of shape (batch,)."""

    codes: IntArray
    t_stat: FloatArray
    different_t: FloatArray
    same_t: FloatArray
    target: IntArray
    closed: BoolArray  # the DIFFERENT test has spent its error (at this look or before)
    futile: BoolArray  # UNKNOWN, closed, and the estimate outside the margin: stop


@dataclass(frozen=True)
class Rule:
    """What every look of a comparison is judged by: the margin and negligible band, each
    test's error, and the spending and power the DIFFERENT test's target is designed for."""

    margin: float = DEFAULT_MARGIN
    negligible: float = DEFAULT_NEGLIGIBLE
    alpha: float = DEFAULT_ALPHA
    same_alpha: float = SAME_ALPHA
    gamma: float = GAMMA_DIFFERENT
    power: float = DESIGN_POWER


DEFAULT_RULE: Final = Rule()


def judge(
    fit: blocks.BlockFit, schedule: Sequence[int], look: int, closed_before: BoolArray,
    rule: Rule = DEFAULT_RULE, *, target: IntArray | None = None,
) -> Look:
    """The verdicts of one look, for the report and the power simulation alike.

    `closed_before` marks the comparisons whose DIFFERENT test reached its target runs at
    an earlier look; they can no longer be called DIFFERENT. `target` replaces the
    noise-based target (the bench's spending by share of the schedule: the last look)."""
    if target is None:
        target = target_runs(fit.sigma, schedule, rule.alpha, rule.negligible, rule.power,
                             fit.df)
    dz = np.where(closed_before, np.inf,
                  different_bounds(schedule, look, target, rule.alpha, rule.gamma))
    codes, t_stat, c, e = classify(fit, dz, same_bounds(schedule, rule.same_alpha)[look],
                                   rule.margin, rule.negligible)
    last = look == len(schedule) - 1
    closed = closed_before | (target <= schedule[look]) | last
    with np.errstate(invalid="ignore"):
        outside = np.abs(fit.theta) >= math.log1p(rule.margin)
    futile = (codes == UNKNOWN) & closed & outside
    return Look(codes, t_stat, c, e, target, closed, futile)
