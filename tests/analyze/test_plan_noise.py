"""The whole-plan simulation and the pooled-noise design that `bench/stats_power.py`
evaluates beside the verdict: the pooled model agrees with the pair's fit where they
coincide, its homogeneity guard rejects at its stated level when the noise is
homogeneous, and the runner's escalation of a whole plan keeps the false-positive budget
(500 requests, binomial bounds as in `test_sequential_errors.py`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from bench import pooled_noise
from bench.stats_power import CURRENT, POOLED, Design, PlanCase, simulate_plan
from triagebot.analyze import blocks

PAIRS = 500
SEED = 16_600


def _rounds(rng: np.random.Generator, batch: int, sizes: list[int], level: float,
            shifts: list[np.ndarray], sd: float = 0.03) -> list[np.ndarray]:
    return [level + s[:, None] + rng.normal(0.0, sd, (batch, m))
            for m, s in zip(sizes, shifts, strict=True)]


def test_pooled_model_on_two_cells_is_the_pair_fit() -> None:
    rng = np.random.default_rng(SEED)
    sizes = [3, 2, 2, 2]
    shifts = [rng.normal(0.0, 0.05, 7) for _ in sizes]
    a = _rounds(rng, 7, sizes, 0.1, shifts)
    b = _rounds(rng, 7, sizes, 0.0, shifts)
    fit = blocks.fit(a, b)
    pooled = pooled_noise.pool([a, b])
    np.testing.assert_allclose(pooled.ss, fit.sigma**2 * fit.df, rtol=1e-9)
    np.testing.assert_allclose(pooled.df, fit.df)


def test_guard_rejects_at_its_level_when_noise_is_homogeneous() -> None:
    # Five cells, two mirrored rounds of 2 runs (the first look): under one sigma the F
    # statistic of the pair against the rest is F-distributed, so the guard keeps the
    # pair's own estimate HOMOGENEITY_ALPHA of the time, within binomial spread.
    rng = np.random.default_rng(SEED + 1)
    batch = 4000
    shifts = [rng.normal(0.0, 0.05, batch) for _ in range(2)]
    cells = [_rounds(rng, batch, [2, 2], 0.01 * c, shifts) for c in range(5)]
    fit, used = pooled_noise.borrow(blocks.fit(cells[3], cells[1]), pooled_noise.pool(cells))
    kept = int((~used).sum())
    alpha = pooled_noise.HOMOGENEITY_ALPHA
    assert binom.ppf(0.001, batch, alpha) <= kept <= binom.ppf(0.999, batch, alpha)
    assert np.all(fit.df[used] == 14.0)  # 20 runs - 5 cells - 2 rounds + 1
    assert np.all(fit.df[~used] == 5.0)


def test_guard_keeps_a_noisier_pair_on_its_own_estimate_more_often() -> None:
    rng = np.random.default_rng(SEED + 2)
    batch = 4000
    shifts = [rng.normal(0.0, 0.05, batch) for _ in range(4)]
    cells = [_rounds(rng, batch, [2, 2, 2, 2], 0.0, shifts, 0.06 if c == 3 else 0.03)
             for c in range(5)]
    _, used = pooled_noise.borrow(blocks.fit(cells[3], cells[1]), pooled_noise.pool(cells))
    assert (~used).mean() > 3 * pooled_noise.HOMOGENEITY_ALPHA


@pytest.mark.parametrize("design", [CURRENT, POOLED], ids=["pair", "pooled"])
def test_whole_plan_false_positive_rate_is_within_one_percent(design: Design) -> None:
    out, _ = simulate_plan(PlanCase(0.03, 0.0, "trend", PAIRS, SEED + 3), design)
    false = int(((out.verdicts == "DIFFERENT") | (out.verdicts == "WRONG")).sum())
    assert false <= binom.ppf(0.999, PAIRS, 0.01), f"{false} of {PAIRS} called DIFFERENT"
