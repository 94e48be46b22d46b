"""Error-spending boundaries: known values, the spent error by simulation, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from triagebot.analyze import sequential


def test_one_look_is_the_normal_quantile() -> None:
    (z,) = sequential.upper_bounds((1.0,), 0.025, -2.0)
    assert z == pytest.approx(1.95996, abs=2e-3)


@pytest.mark.parametrize("gamma", [-4.0, -2.0, 0.0, 1.0])
def test_boundaries_spend_alpha_over_all_looks(gamma: float) -> None:
    info = (0.2, 0.4, 0.6, 0.8, 1.0)
    bounds = np.array(sequential.upper_bounds(info, 0.005, gamma))
    rng = np.random.default_rng(7)
    steps = rng.normal(0.0, math.sqrt(0.2), (400_000, 5)).cumsum(axis=1)
    z = steps / np.sqrt(np.array(info))
    crossed = (z >= bounds).any(axis=1).mean()
    # 400,000 paths: the binomial sd at 0.5 % is 0.011 %.
    assert crossed == pytest.approx(0.005, abs=0.0005)
    first = (z[:, 0] >= bounds[0]).mean()
    assert first == pytest.approx(sequential.spend(0.2, 0.005, gamma), abs=0.0003)


def test_negative_gamma_keeps_early_looks_strict() -> None:
    info = (0.25, 0.5, 0.75, 1.0)
    obf = sequential.upper_bounds(info, 0.005, -4.0)
    assert list(obf) == sorted(obf, reverse=True)
    pocock = sequential.upper_bounds(info, 0.005, 1.0)
    assert obf[0] > pocock[0] and obf[-1] < pocock[-1]


def test_spend() -> None:
    assert sequential.spend(1.0, 0.01, -2.0) == pytest.approx(0.01)
    assert sequential.spend(0.5, 0.01, 0.0) == pytest.approx(0.005)
    assert sequential.spend(0.0, 0.01, 1.0) == 0.0
    assert sequential.spend(2.0, 0.01, 1.0) == pytest.approx(0.01)  # clipped to the end
    values = [sequential.spend(t / 10, 0.01, -2.0) for t in range(11)]
    assert values == sorted(values)


@pytest.mark.parametrize(("info", "alpha"), [
    ((), 0.01), ((0.5, 0.5, 1.0), 0.01), ((0.0, 1.0), 0.01), ((1.0,), 0.0), ((1.0,), 0.7)])
def test_bad_input_is_refused(info: tuple[float, ...], alpha: float) -> None:
    with pytest.raises(ValueError):
        sequential.upper_bounds(info, alpha, 0.0)


def test_t_bound_widens_for_few_degrees_of_freedom() -> None:
    z = 2.5
    assert sequential.t_bound(z, 5) > sequential.t_bound(z, 30) > z
    assert sequential.t_bound(z, 100_000) == pytest.approx(z, abs=1e-3)
    assert sequential.t_bound(math.inf, 10) == math.inf
    assert sequential.t_bound(z, 0) == math.inf
    assert list(sequential.t_bound(z, np.array([0.0, 10.0]))) == [
        math.inf, pytest.approx(sequential.t_bound(z, 10))]
    assert sequential.fractions([4, 8, 16]) == (0.25, 0.5, 1.0)
