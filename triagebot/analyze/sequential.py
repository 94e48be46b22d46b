"""Group-sequential stopping boundaries with error spending (Lan & DeMets).

A comparison is looked at several times as runs accumulate (after 5, 10, 15, ... runs per
arm). Testing each look at the full alpha would inflate the false-positive rate with every
look; Bonferroni over looks is valid but throws most of the power away because successive
looks share most of their data. Error spending gives every look exactly the share of the
error budget that a *spending function* allots to the information gathered so far, and
accounts for the correlation between looks.

The canonical model: at look k with information fraction t_k (runs so far / runs at the
last look), the standardised statistic Z_k = B(t_k) / sqrt(t_k) for a Brownian motion B
under the null. The upper boundary c_k is chosen so that

    P(Z_1 < c_1, ..., Z_{k-1} < c_{k-1}, Z_k >= c_k) = spend(t_k) - spend(t_{k-1}),

so the probability of ever crossing is spend(1) = alpha, however many looks there are. The
joint distribution is evaluated by numerical integration on a grid (the recursion of
Armitage, McPherson and Rowe), not by simulation, so the boundaries are exact to the grid
step and the same on every machine.

The spending function is Hwang, Shih and DeCani's family,

    spend(t) = alpha * (1 - exp(-gamma t)) / (1 - exp(-gamma)),   spend(t) = alpha t at 0,

where gamma < 0 keeps early boundaries high (O'Brien-Fleming-like: a few runs stop only
on overwhelming evidence) and gamma > 0 spends early (Pocock-like).

Run-to-run variance is estimated, not known, so `t_bound` turns a normal boundary into a
Student t boundary with the look's degrees of freedom at the same nominal tail
probability, the usual small-sample adjustment of group-sequential tests; the simulation
in `bench/stats_power.py` and `tests/analyze/test_sequential_errors.py` checks that the
error rates hold at 5 to 30 runs per arm.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from scipy.stats import t as student_t

GRID_STEP = 0.01
GRID_HALF_WIDTH = 9.0  # in units of the final look's standard deviation (B(1) ~ N(0, 1))


def spend(fraction: float, alpha: float, gamma: float) -> float:
    """Error spent by information fraction `fraction` (0..1), Hwang-Shih-DeCani."""
    f = min(max(fraction, 0.0), 1.0)
    if abs(gamma) < 1e-9:
        return alpha * f
    return alpha * (1.0 - math.exp(-gamma * f)) / (1.0 - math.exp(-gamma))


def fractions(schedule: Sequence[int]) -> tuple[float, ...]:
    """Information fractions of a look schedule (runs per arm at each look)."""
    last = schedule[-1]
    return tuple(n / last for n in schedule)


@lru_cache(maxsize=1024)
def upper_bounds(info: tuple[float, ...], alpha: float, gamma: float,
                 spent_at: tuple[float, ...] | None = None) -> tuple[float, ...]:
    """One-sided upper z boundaries, one per look, spending `alpha` in total.

    `info` places the looks on the Brownian motion (runs so far / runs at the last look),
    which fixes how successive looks correlate. `spent_at`, by default `info`, is where
    each look stands on the spending function: an information-based design spends by
    the share of the information its target needs, which can run ahead of the share of
    the schedule (`looks.target_runs`); a value of 1 spends all that is left.

    A look that is allotted no error (its spending increment is zero or the information
    did not grow) gets an infinite boundary: it can never reject.
    """
    if not info or any(b <= a for a, b in zip((0.0, *info), info, strict=False)):
        raise ValueError(f"information fractions must increase from above 0: {info}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha}")
    at = info if spent_at is None else spent_at
    if len(at) != len(info) or any(b < a for a, b in itertools.pairwise(at)):
        raise ValueError(f"spending points must not decrease, one per look: {spent_at}")
    x = np.arange(-GRID_HALF_WIDTH, GRID_HALF_WIDTH + GRID_STEP / 2, GRID_STEP)
    bounds: list[float] = []
    density: np.ndarray | None = None  # sub-density of B(t_{k-1}) on paths not yet stopped
    previous_t = 0.0
    previous_spent = 0.0
    for t_k, s_k in zip(info, at, strict=True):
        target = spend(s_k, alpha, gamma) - previous_spent
        step = t_k - previous_t
        if density is None:
            density = norm.pdf(x, scale=math.sqrt(step))
        else:
            kernel_x = np.arange(-GRID_HALF_WIDTH, GRID_HALF_WIDTH + GRID_STEP / 2, GRID_STEP)
            kernel = norm.pdf(kernel_x, scale=math.sqrt(step)) * GRID_STEP
            density = np.convolve(density, kernel, mode="same")
        if target <= 1e-15:
            bounds.append(math.inf)
        else:
            bounds.append(_solve(x, density, target, t_k))
        cut = bounds[-1] * math.sqrt(t_k)
        density = np.where(x < cut, density, 0.0)
        previous_t = t_k
        previous_spent += target if math.isfinite(bounds[-1]) else 0.0
    return tuple(bounds)


def _solve(x: np.ndarray, density: np.ndarray, target: float, t_k: float) -> float:
    """The z boundary whose upper tail mass (over the surviving paths) equals `target`."""
    sd = math.sqrt(t_k)

    def excess(z: float) -> float:
        # Trapezoid weights with the cut placed exactly at z * sd, not at a grid point.
        cut = z * sd
        above = x >= cut
        mass = float(density[above].sum() * GRID_STEP)
        first = int(np.argmax(above)) if above.any() else x.size
        if 0 < first < x.size:
            mass += float(density[first] * (x[first] - cut) - density[first] * GRID_STEP / 2)
        return mass - target

    lo, hi = -2.0, 12.0
    if excess(hi) > 0:
        return hi
    if excess(lo) < 0:
        return lo
    return float(brentq(excess, lo, hi, xtol=1e-6))


def t_bound(z: float | np.ndarray, df: float | np.ndarray) -> np.ndarray:
    """A z boundary carried to Student t with `df` degrees of freedom (same tail mass);
    infinite where the boundary is or where there are no degrees of freedom."""
    d = np.asarray(df, dtype=np.float64)
    zz = np.asarray(z, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = student_t.isf(norm.sf(np.where(np.isfinite(zz), zz, 0.0)), np.maximum(d, 1.0))
    return np.where((d > 0) & np.isfinite(zz), out, np.inf)
