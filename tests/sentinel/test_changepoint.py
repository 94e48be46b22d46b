"""The sentinel's change-point detector: steps where they are, drifts as drifts, nothing
in a flat series, and a clear error for a series it cannot read. The rates over many
simulated series are bench/sentinel_changepoint.py's, not these tests'."""

from __future__ import annotations

import numpy as np
import pytest

from triagebot.sentinel.changepoint import (
    DRIFT_ALPHA,
    FALSE_POSITIVE_TARGET,
    STEP_ALPHA,
    ChangePoint,
    change_points,
)


def noisy(levels: list[float], sigma: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return (np.asarray(levels) + rng.normal(0.0, sigma, len(levels))).tolist()


def test_a_clear_step_is_found_at_the_first_release_of_its_new_level() -> None:
    values = noisy([1.30] * 5 + [1.10] * 5, 0.01, seed=1)
    points = change_points(values, [0.01] * 10)
    assert [(point.index, point.kind) for point in points] == [(5, "step")]
    step = points[0]
    assert step.before == pytest.approx(1.30, abs=0.02)
    assert step.after == pytest.approx(1.10, abs=0.02)
    assert step.p_value is not None and step.p_value <= STEP_ALPHA


def test_two_steps_one_way_are_both_found_in_order() -> None:
    values = noisy([1.0] * 6 + [0.8] * 6 + [0.75] * 6, 0.005, seed=2)
    assert [point.index for point in change_points(values)] == [6, 12]


def test_a_level_that_fell_and_came_back_is_two_steps() -> None:
    # A regression fixed three releases later: no single split tells the two levels apart.
    values = noisy([1.0] * 10 + [0.9] * 3 + [1.0] * 3, 0.005, seed=2)
    points = change_points(values)
    assert [(point.index, point.kind) for point in points] == [(10, "step"), (13, "step")]
    assert points[0].after == pytest.approx(0.9, abs=0.01)
    assert points[1].after == pytest.approx(1.0, abs=0.01)


def test_a_flat_noisy_series_has_no_change() -> None:
    for seed in range(5):
        values = noisy([1.25] * 12, 0.02, seed=seed)
        assert change_points(values, [0.02] * 12) == []
        assert change_points(values) == []


def test_a_drift_no_neighbouring_pair_resolves_is_found_as_a_drift() -> None:
    # Each release moves the level by 2 %; one A/B of two points with 1 % errors resolves
    # only a difference over 1.96 * sqrt(2) * 1 % (2.8 %).
    levels = [1.0 - 0.02 * release for release in range(8)]
    values = noisy(levels, 0.01, seed=3)
    points = change_points(values, [0.01] * 8)
    assert [(point.index, point.kind) for point in points] == [(7, "drift")]
    drift = points[0]
    assert drift.before == pytest.approx(1.0, abs=0.02)
    assert drift.after == pytest.approx(0.86, abs=0.02)
    assert drift.p_value is not None and drift.p_value <= DRIFT_ALPHA


def test_standard_errors_weight_the_points() -> None:
    # The odd point is far off, but its interval says it knows nothing.
    values = [*noisy([1.0] * 9, 0.005, seed=4), 0.7]
    noise = [0.005] * 9 + [1.0]
    assert change_points(values, noise) == []
    assert [point.index for point in change_points(values, [0.005] * 10)] == [9]


def test_a_series_too_short_to_test_has_no_change() -> None:
    assert change_points([1.0]) == []
    assert change_points([1.0, 0.5], [0.01, 0.01]) == []


def test_the_tests_split_no_more_than_the_target() -> None:
    assert STEP_ALPHA + DRIFT_ALPHA <= FALSE_POSITIVE_TARGET


def test_a_change_point_is_a_closed_value() -> None:
    point = ChangePoint(index=3, before=1.0, after=0.9, kind="step", p_value=0.001)
    assert ChangePoint.model_validate_json(point.model_dump_json()) == point
    with pytest.raises(ValueError):
        ChangePoint.model_validate({**point.model_dump(), "kind": "jump"})


@pytest.mark.parametrize(("values", "noise", "says"), [
    ([], None, "non-empty"),
    ([1.0, float("nan"), 1.0], None, "index 1"),
    ([1.0, float("inf"), 1.0], None, "finite"),
    ([1.0, 1.0, 1.0], [0.01, 0.01], "2 standard errors for 3 values"),
    ([1.0, 1.0, 1.0], [0.01, 0.0, 0.01], "positive"),
    ([1.0, 1.0, 1.0], [0.01, float("nan"), 0.01], "positive finite"),
    (["fast", 1.0, 1.0], None, "numbers"),
    ([[1.0, 2.0]], None, "non-empty list"),
])
def test_bad_input_is_a_clear_value_error(values: list[object], noise: list[float] | None,
                                          says: str) -> None:
    with pytest.raises(ValueError, match=says):
        change_points(values, noise)  # type: ignore[arg-type]
