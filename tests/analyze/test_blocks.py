"""The round-block model: hand-computed values, block shifts drop out, drift is found."""

from __future__ import annotations

import math

import numpy as np
import pytest

from triagebot.analyze import blocks


def _one(*rounds: list[float]) -> list[np.ndarray]:
    return [np.log(np.asarray(r, dtype=np.float64))[None, :] for r in rounds]


def test_fit_matches_a_hand_computation() -> None:
    a = [[110.0, 112.0], [108.0, 111.0, 109.0]]
    b = [[100.0, 101.0], [99.0, 102.0]]
    fit = blocks.fit(_one(*a), _one(*b))
    la, lb = [np.log(r) for r in a], [np.log(r) for r in b]
    w = [1 / (1 / 2 + 1 / 2), 1 / (1 / 3 + 1 / 2)]
    d = [la[i].mean() - lb[i].mean() for i in range(2)]
    theta = (w[0] * d[0] + w[1] * d[1]) / sum(w)
    within = sum(((x - x.mean()) ** 2).sum() for x in (*la, *lb))
    between = sum(wi * (di - theta) ** 2 for wi, di in zip(w, d, strict=True))
    df = 9 - 2 - 1
    sigma = math.sqrt((within + between) / df)
    assert fit.theta[0] == pytest.approx(theta)
    assert fit.se[0] == pytest.approx(sigma / math.sqrt(sum(w)))
    assert fit.df[0] == df and fit.rounds == 2
    assert fit.sigma[0] == pytest.approx(sigma)


def test_a_shift_of_a_whole_round_drops_out() -> None:
    rng = np.random.default_rng(3)
    a = [100 * np.exp(rng.normal(0, 0.02, 4)) for _ in range(3)]
    b = [96 * np.exp(rng.normal(0, 0.02, 4)) for _ in range(3)]
    base = blocks.fit(_one(*a), _one(*b))
    shifted = blocks.fit(_one(a[0], a[1] * 0.9, a[2]), _one(b[0], b[1] * 0.9, b[2]))
    assert shifted.theta[0] == pytest.approx(base.theta[0])
    assert shifted.se[0] == pytest.approx(base.se[0])


def test_mirrored_rounds_cancel_a_steady_drift() -> None:
    # A B | B A with the machine losing 1 % per run and no noise at all but a 2 % effect.
    drift = -0.01
    t = np.arange(12.0)
    a = [np.log(102.0) + drift * t[0:3], np.log(102.0) + drift * t[9:12]]
    b = [np.log(100.0) + drift * t[3:6], np.log(100.0) + drift * t[6:9]]
    fit = blocks.fit([x[None, :] for x in a], [x[None, :] for x in b])
    assert fit.theta[0] == pytest.approx(math.log(1.02))
    tr = blocks.trend([x[None, :] for x in a], [x[None, :] for x in b])
    assert tr.slope[0] < 0  # seen, though only rounds (not positions within them) are known


def test_trend_recovers_a_slope_per_round() -> None:
    rng = np.random.default_rng(5)
    slope = -0.02
    a = [np.log(100.0) + slope * (r + (np.arange(5) + 0.5) / 5) + rng.normal(0, 0.002, 5)
         for r in range(4)]
    b = [np.log(90.0) + slope * (r + (np.arange(5) + 0.5) / 5) + rng.normal(0, 0.002, 5)
         for r in range(4)]
    tr = blocks.trend([x[None, :] for x in a], [x[None, :] for x in b])
    assert tr.slope[0] == pytest.approx(slope, abs=0.002)
    assert abs(tr.slope[0] / tr.se[0]) > 10
    assert tr.df[0] == 40 - 3


def test_a_batch_equals_its_members() -> None:
    rng = np.random.default_rng(9)
    a = [rng.normal(0.05, 0.03, (3, 4)), rng.normal(0.05, 0.03, (3, 2))]
    b = [rng.normal(0.0, 0.03, (3, 4)), rng.normal(0.0, 0.03, (3, 2))]
    batch = blocks.fit(a, b)
    for i in range(3):
        one = blocks.fit([x[i:i + 1] for x in a], [x[i:i + 1] for x in b])
        assert one.theta[0] == pytest.approx(batch.theta[i])
        assert one.se[0] == pytest.approx(batch.se[i])


def test_rounds_without_both_arms_carry_no_difference() -> None:
    only_a = blocks.fit(_one([100.0, 101.0]), [np.empty((1, 0))])
    assert math.isnan(only_a.theta[0]) and only_a.rounds == 0
    # A round of one arm alone adds to the noise estimate, never to theta.
    fit = blocks.fit(_one([110.0, 111.0], [130.0, 131.0]), _one([100.0, 101.0]))
    assert math.exp(fit.theta[0]) == pytest.approx(math.sqrt(110 * 111) / math.sqrt(100 * 101))
