"""Change points in one case's figure across releases: a step, or a slow drift.

The series is one case's figure per release in release order (a spec/no-spec ratio, say),
with each point's standard error where its interval gave one. Two questions are asked of
it, at `STEP_ALPHA` and `DRIFT_ALPHA`, so that a series with no change is flagged at most
`FALSE_POSITIVE_TARGET` of the time:

- **Step.** Where would one split best separate the series into two levels? ruptures
  answers that (binary segmentation, least-squares cost, every split tried). ruptures is
  chosen over Apache Otava and MongoDB's signal-processing-algorithms because it installs
  with numpy and scipy alone, which the project already locks; Otava pins numpy and scipy
  to versions the lock cannot hold and pulls cloud and chat clients, and
  signal-processing-algorithms needs numpy below 2. ruptures has no significance test of
  its own, so each split it proposes is tested here: the difference of the two sides'
  weighted means as a t statistic, with a Bonferroni bound over the splits that could have
  been picked. A significant split is searched again on each side (binary segmentation).
- **Drift.** A level that moves a little every release never makes one split stand out
  against the noise of a short series, so the slope of a weighted straight-line fit is
  t-tested as well.

The standard errors weight the points against each other; the noise's overall size is
taken from the fit's own residuals. Intervals from one job miss what moves a level between
jobs (an engine start's offset, a busier machine), and a test that trusted them would
flag that as change; a test that measures the scatter keeps its rate whatever the
intervals say. When both tests fire, the model with the smaller residual decides the
kind: a straight line makes a drift, two levels make steps.

The rates measured on simulated series live in bench/results (docs/sentinel-detection.md
links them); the tests below promise only the bound above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import ruptures
from scipy import stats

from triagebot.frozen import Frozen

# The share of series with no change that may be flagged. The two tests share four fifths
# of it evenly; the fifth held back keeps a simulated sample of series under the target
# when its own sampling noise falls the wrong way.
FALSE_POSITIVE_TARGET = 0.01
STEP_ALPHA = 0.4 * FALSE_POSITIVE_TARGET
DRIFT_ALPHA = 0.4 * FALSE_POSITIVE_TARGET
# The shortest series, and the shortest segment searched for a further step, that a test
# can say anything about (two points for a level each side, one left over for the noise).
MIN_POINTS = 3

ChangeKind = Literal["step", "drift"]


class ChangePoint(Frozen):
    """One change in a series.

    A step: `index` is the first point at the new level, `before` and `after` the weighted
    mean levels of the segments either side. A drift: `index` is the series' last point
    (the release at which the drift is called), `before` and `after` the fitted line's
    values at the first and last points. `p_value` is the test's (a Bonferroni bound for a
    step); None where no test gave one.
    """

    index: int
    before: float
    after: float
    kind: ChangeKind
    p_value: float | None


@dataclass(frozen=True)
class Series:
    """The values, their standard errors (None: unknown), and weights for the fits."""

    values: np.ndarray
    errors: np.ndarray | None

    @property
    def weights(self) -> np.ndarray:
        if self.errors is None:
            return np.ones_like(self.values)
        return 1.0 / self.errors**2

    def part(self, start: int, end: int) -> Series:
        errors = None if self.errors is None else self.errors[start:end]
        return Series(self.values[start:end], errors)


def change_points(values: Sequence[float], noise: Sequence[float] | None = None
                  ) -> list[ChangePoint]:
    """The steps, or the drift, in `values` (one figure per release, in release order).

    `noise` is each point's standard error where known (from its interval). Raises
    ValueError for an empty series, a value or error that is not a finite number, an
    error that is not positive, or `noise` of another length than `values`.
    """
    series = checked(values, noise)
    if len(series.values) < MIN_POINTS:
        return []
    steps = find_steps(series, 0)
    drift = find_drift(series)
    if drift is None:
        return steps
    if not steps:
        return [drift]
    return [drift] if line_fits_better(series) else steps


def checked(values: Sequence[float], noise: Sequence[float] | None) -> Series:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"values must be numbers: {error}") from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError("values must be a non-empty list of numbers, one per release")
    if not np.all(np.isfinite(array)):
        raise ValueError("values must be finite numbers (found NaN or infinity at "
                         f"index {int(np.flatnonzero(~np.isfinite(array))[0])})")
    if noise is None:
        return Series(array, None)
    try:
        errors = np.asarray(noise, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"noise must be numbers: {error}") from None
    if errors.ndim != 1 or errors.size != array.size:
        raise ValueError(f"noise has {errors.size} standard errors for {array.size} values; "
                         "give one per value or none")
    if not np.all(np.isfinite(errors)) or not np.all(errors > 0):
        raise ValueError("noise must be positive finite standard errors")
    return Series(array, errors)


def weighted_mean(series: Series) -> float:
    weights = series.weights
    return float(np.sum(weights * series.values) / np.sum(weights))


def best_split(values: np.ndarray) -> int:
    """Where one split leaves the least squared error (ruptures' binary segmentation; its
    least-squares cost tries every split when `jump` is 1)."""
    search = ruptures.Binseg(model="l2", min_size=1, jump=1).fit(values)
    breakpoints: list[int] = search.predict(n_bkps=1)
    return int(breakpoints[0])


def best_pair(values: np.ndarray) -> tuple[int, int]:
    """Where two splits leave the least squared error (ruptures' exact dynamic programme)."""
    search = ruptures.Dynp(model="l2", min_size=1, jump=1).fit(values)
    first, second, _ = search.predict(n_bkps=2)
    return int(first), int(second)


@dataclass(frozen=True)
class TwoLevels:
    """A series read as two levels: the points `inside` at one, the rest at the other."""

    p_value: float  # Bonferroni bound over the `choices` the mask was picked from
    outside: float
    inside: float
    chi2: float  # weighted sum of squared residuals


def two_levels(series: Series, inside: np.ndarray, choices: int) -> TwoLevels:
    weights = series.weights
    outer = Series(series.values[~inside], None if series.errors is None
                   else series.errors[~inside])
    inner = Series(series.values[inside], None if series.errors is None
                   else series.errors[inside])
    outside, within = weighted_mean(outer), weighted_mean(inner)
    fitted = np.where(inside, within, outside)
    chi2 = float(np.sum(weights * (series.values - fitted) ** 2))
    inverse = 1 / np.sum(outer.weights) + 1 / np.sum(inner.weights)
    p_one = t_test(within - outside, chi2, len(series.values) - 2, inverse)
    return TwoLevels(min(1.0, choices * p_one), outside, within, chi2)


def step_model(series: Series) -> tuple[TwoLevels, list[int]] | None:
    """The two-level reading with the smaller p, and where its level changes: one split
    (a level that moved and stayed), or two with the outer parts at one level (a level that
    moved and came back, which no single split sees). Each family is bounded at half of
    `STEP_ALPHA`: the 2 doubles the Bonferroni count."""
    count = len(series.values)
    positions = np.arange(count)
    split = best_split(series.values)
    readings = [(two_levels(series, positions >= split, 2 * (count - 1)), [split])]
    if count > MIN_POINTS:
        first, second = best_pair(series.values)
        inside = (positions >= first) & (positions < second)
        pairs = (count - 1) * (count - 2) // 2
        readings.append((two_levels(series, inside, 2 * pairs), [first, second]))
    reading, splits = min(readings, key=lambda item: item[0].p_value)
    return (reading, splits) if reading.p_value <= STEP_ALPHA else None


def two_sided(statistic: float, freedom: int) -> float:
    """The two-sided p of a t statistic."""
    if math.isinf(statistic):
        return 0.0
    return float(2 * stats.t.sf(abs(statistic), freedom))


def t_test(difference: float, chi2: float, freedom: int, inverse: float) -> float:
    """The p of a weighted fit's `difference` whose variance is `inverse` times the noise
    scale, that scale being the residuals' own (`chi2` over `freedom`). A difference with
    no scatter around the fit is certain; no difference at all is no evidence."""
    if freedom <= 0:
        return 1.0
    if chi2 <= 0:
        return 0.0 if difference != 0 else 1.0
    return two_sided(difference / math.sqrt(chi2 / freedom * inverse), freedom)


def find_steps(series: Series, offset: int) -> list[ChangePoint]:
    """Binary segmentation: the best reading of `series` as two levels, kept when
    significant, then the same within each part. Indices are shifted by `offset` into the
    whole series."""
    count = len(series.values)
    if count < MIN_POINTS:
        return []
    found = step_model(series)
    if found is None:
        return []
    reading, splits = found
    levels = [reading.outside, reading.inside, reading.outside][:len(splits) + 1]
    bounds = [0, *splits, count]
    steps: list[ChangePoint] = []
    for number, split in enumerate(splits):
        steps += find_steps(series.part(bounds[number], split), offset + bounds[number])
        steps.append(ChangePoint(index=offset + split, before=levels[number],
                                 after=levels[number + 1], kind="step",
                                 p_value=reading.p_value))
    return steps + find_steps(series.part(splits[-1], count), offset + splits[-1])


@dataclass(frozen=True)
class Line:
    intercept: float
    slope: float
    slope_error: float  # in units of the noise scale
    chi2: float  # weighted sum of squared residuals


def fit_line(series: Series) -> Line:
    positions = np.arange(len(series.values), dtype=float)
    weights = series.weights
    total = np.sum(weights)
    centre = np.sum(weights * positions) / total
    level = np.sum(weights * series.values) / total
    spread = np.sum(weights * (positions - centre) ** 2)
    slope = float(np.sum(weights * (positions - centre) * (series.values - level)) / spread)
    intercept = float(level - slope * centre)
    residuals = series.values - (intercept + slope * positions)
    return Line(intercept, slope, float(1 / math.sqrt(spread)),
                float(np.sum(weights * residuals**2)))


def find_drift(series: Series) -> ChangePoint | None:
    line = fit_line(series)
    p_value = t_test(line.slope, line.chi2, len(series.values) - 2, line.slope_error**2)
    if p_value > DRIFT_ALPHA:
        return None
    last = len(series.values) - 1
    return ChangePoint(index=last, before=line.intercept, after=line.intercept + line.slope * last,
                       kind="drift", p_value=p_value)


def line_fits_better(series: Series) -> bool:
    """Whether a straight line leaves less weighted scatter than the step model's two
    levels (both have two free parameters, so their residuals compare)."""
    found = step_model(series)
    return found is None or fit_line(series).chi2 <= found[0].chi2
