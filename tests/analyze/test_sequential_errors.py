"""The verdict's error rates on a fixed-seed simulation, small enough for CI.

500 simulated requests per scenario, run through the same code and run order as
`bench/stats_power.py` (which prints the full table). Each assertion allows the
binomial spread of 500 draws around the target: the count may sit anywhere up to the
99.9 % quantile of Binomial(500, target), so the test fails when the method misses its
target, not when a seed is unlucky.
"""

from __future__ import annotations

import pytest
from scipy.stats import binom

from bench.stats_power import Scenario, simulate_new

PAIRS = 500
SEED = 16_500


def _at_most(rate: float) -> int:
    return int(binom.ppf(0.999, PAIRS, rate))


def _at_least(rate: float) -> int:
    return int(binom.ppf(0.001, PAIRS, rate))


@pytest.mark.parametrize("drift", ["none", "trend"])
@pytest.mark.parametrize("cv", [0.02, 0.05])
def test_false_positive_rate_is_within_one_percent(cv: float, drift: str) -> None:
    out = simulate_new(Scenario(cv, 0.0, drift, PAIRS, SEED))
    false = int(((out.verdicts == "DIFFERENT") | (out.verdicts == "WRONG")).sum())
    assert false <= _at_most(0.01), f"{false} of {PAIRS} A/A pairs called DIFFERENT"


def test_false_positive_rate_holds_with_same_switched_off() -> None:
    # Margin 0: no request can stop on SAME, so nothing pre-empts a false alarm and the
    # DIFFERENT boundaries carry the whole budget (the worst case of the A/A rows).
    out = simulate_new(Scenario(0.05, 0.0, "trend", PAIRS, SEED + 5, margin=0.0))
    assert not (out.verdicts == "SAME").any()
    false = int(((out.verdicts == "DIFFERENT") | (out.verdicts == "WRONG")).sum())
    assert false <= _at_most(0.01), f"{false} of {PAIRS} A/A pairs called DIFFERENT"


@pytest.mark.parametrize("ratio", [1.03, 1 / 1.03])
def test_same_at_the_margin_is_rare(ratio: float) -> None:
    # The truth sits on the ±3 % margin: SAME is then wrong, at most 5 % of the time.
    out = simulate_new(Scenario(0.02, ratio - 1.0, "none", PAIRS, SEED + 6))
    same = int((out.verdicts == "SAME").sum())
    assert same <= _at_most(0.05), f"SAME in {same} of {PAIRS} at ratio {ratio:.4f}"


@pytest.mark.parametrize("drift", ["none", "trend"])
def test_unchanged_is_called_same_at_cv_2_percent(drift: str) -> None:
    out = simulate_new(Scenario(0.02, 0.0, drift, PAIRS, SEED + 1))
    same = int(((out.verdicts == "SAME") & (out.runs <= 20)).sum())
    assert same >= _at_least(0.90), f"SAME by 20 runs in {same} of {PAIRS}"


def test_a_5_percent_change_is_found_at_cv_3_percent() -> None:
    out = simulate_new(Scenario(0.03, 0.05, "none", PAIRS, SEED + 2))
    found = int((out.verdicts == "DIFFERENT").sum())
    assert found >= _at_least(0.95)
    assert not (out.verdicts == "WRONG").any()


def test_a_5_percent_change_is_mostly_found_at_cv_5_percent() -> None:
    out = simulate_new(Scenario(0.05, 0.05, "none", PAIRS, SEED + 3))
    assert int((out.verdicts == "DIFFERENT").sum()) >= _at_least(0.80)
    assert out.runs.max() <= 30


def test_a_real_difference_inside_the_margin_is_mostly_same() -> None:
    # Arm A is truly 1 % faster: within ±3 %, so SAME is the wanted answer (DIFFERENT is
    # true but unwanted; SAME takes precedence once the interval fits the margin).
    out = simulate_new(Scenario(0.02, 0.0, "arm", PAIRS, SEED + 4))
    assert int((out.verdicts == "SAME").sum()) >= _at_least(0.80)


@pytest.mark.parametrize("cv", [0.02, 0.05])
def test_a_negligible_band_holds_a_real_1_percent_to_the_budget(cv: float) -> None:
    # `[verdict] negligible_pct = 1`: DIFFERENT tests |difference| <= 1 %, so a true 1 %
    # (the 'arm' offset) sits on the null's edge and is called DIFFERENT at most alpha.
    out = simulate_new(Scenario(cv, 0.0, "arm", PAIRS, SEED + 7, negligible=0.01))
    false = int((out.verdicts == "DIFFERENT").sum())
    assert false <= _at_most(0.01), f"{false} of {PAIRS} called DIFFERENT at +1 %"


def test_without_a_band_a_real_1_percent_is_called_different_more_often() -> None:
    # The default flags any real difference it detects: the 'arm' rows' DIFFERENT is
    # true, just unwanted. On the same simulated runs a 1 % band calls it less often.
    plain = simulate_new(Scenario(0.02, 0.0, "arm", PAIRS, SEED + 7))
    band = simulate_new(Scenario(0.02, 0.0, "arm", PAIRS, SEED + 7, negligible=0.01))
    different = [int((o.verdicts == "DIFFERENT").sum()) for o in (plain, band)]
    assert different[0] > different[1], different
