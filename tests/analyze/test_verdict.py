"""The sequential verdict: known cases, the margin, escalation, drift and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triagebot.analyze import blocks, looks, verdict
from triagebot.analyze.findings_models import ComparisonResult


def lognormal(seed: int, median: float, cv: float, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return median * np.exp(rng.normal(0.0, math.sqrt(math.log1p(cv * cv)), n))


def halves(x: np.ndarray) -> list[np.ndarray]:
    """Two rounds, as the scheduler runs them."""
    return [x[: (x.size + 1) // 2], x[(x.size + 1) // 2:]]


@pytest.mark.parametrize(("a", "b", "expected", "why"), [
    (lognormal(10, 105, 0.02, 20), lognormal(11, 100, 0.02, 20), "DIFFERENT", "|T|="),
    (lognormal(12, 90, 0.02, 20), lognormal(13, 100, 0.02, 20), "DIFFERENT", "|T|="),
    (lognormal(14, 100, 0.005, 20), lognormal(15, 100, 0.005, 20), "SAME", "inside ±3%"),
    (lognormal(16, 101, 0.05, 6), lognormal(17, 100, 0.05, 6), "UNKNOWN", "crosses"),
])
def test_compare_end_to_end(a: np.ndarray, b: np.ndarray, expected: str, why: str) -> None:
    res = verdict.compare(halves(a), halves(b))
    assert res.verdict == expected, res.reason
    assert why in res.reason
    assert (res.n_a, res.n_b, res.rounds) == (a.size, b.size, 2)
    assert res.margin == 0.03 and res.band.source == "margin"
    assert res.ci_low is not None and res.ci_high is not None and res.ratio is not None
    assert res.ci_low < res.ratio < res.ci_high


def test_the_margin_decides_what_same_means() -> None:
    a, b = lognormal(20, 102, 0.003, 20), lognormal(21, 100, 0.003, 20)
    wide = verdict.compare(halves(a), halves(b), margin=0.03)
    assert wide.verdict == "SAME" and "real" in wide.reason and "inside the margin" in wide.reason
    narrow = verdict.compare(halves(a), halves(b), margin=0.01)
    assert narrow.verdict == "DIFFERENT"


def test_the_negligible_band_decides_what_different_means() -> None:
    # A steady 1.5 % with little noise, judged against a ±1 % margin so SAME is out of the
    # way: any difference is DIFFERENT; beyond a ±1 % band only a clear 0.5 % more is.
    a, b = lognormal(22, 101.5, 0.002, 20), lognormal(23, 100, 0.002, 20)
    plain = verdict.compare(halves(a), halves(b), margin=0.01)
    assert plain.verdict == "DIFFERENT" and plain.negligible == 0.0
    band = verdict.compare(halves(a), halves(b), margin=0.012, negligible=0.01)
    assert band.verdict == "DIFFERENT" and "beyond the ±1.0% negligible band" in band.reason
    assert band.t_stat is not None and plain.t_stat is not None
    assert 0 < band.t_stat < plain.t_stat and band.negligible == 0.01
    inside = verdict.compare(halves(a), halves(b), margin=0.02, negligible=0.015)
    assert inside.verdict != "DIFFERENT", inside.reason


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_band_is_symmetric_and_measured_from_its_edge(sign: float) -> None:
    nan = np.array([0.0])
    fit = verdict.blocks.BlockFit(theta=np.array([sign * math.log1p(0.0105)]),
                                  se=np.array([0.0005]), df=np.array([40.0]), sigma=nan,
                                  rounds=2)
    plain, t_plain, _, _ = looks.classify(fit, 2.0, 2.0, 0.0)
    band, t_band, _, _ = looks.classify(fit, 2.0, 2.0, 0.0, negligible=0.01)
    assert plain[0] == looks.DIFFERENT and band[0] == looks.UNKNOWN
    edge = (math.log1p(0.0105) - math.log1p(0.01)) / 0.0005
    assert t_band[0] == pytest.approx(sign * edge) and abs(t_plain[0]) > 20


def test_schedule_and_boundaries() -> None:
    schedule = looks.look_schedule(30)
    assert schedule == [4, *range(6, 30, 2), 30]
    same = looks.same_bounds(schedule)
    assert len(same) == len(schedule)
    assert looks.look_schedule(3) == [3] and looks.look_schedule(10, 4, 4) == [4, 8, 10]
    slow = [float(looks.different_bounds(schedule, k, np.array([58]))[0])
            for k in range(len(schedule))]
    assert slow[-1] == min(slow) and slow[1] > slow[-1] + 0.5  # the last look keeps most
    # A quiet comparison (small target) spends sooner: a lower boundary at the same look,
    # and none left once its target has passed.
    quick = [float(looks.different_bounds(schedule, k, np.array([10]))[0])
             for k in range(len(schedule))]
    at_10 = schedule.index(10)
    assert quick[2] < slow[2]
    assert math.isfinite(quick[at_10]) and all(math.isinf(z) for z in quick[at_10 + 1:])


def test_the_target_follows_the_noise() -> None:
    schedule = looks.look_schedule(30)
    sigma = np.sqrt(np.log1p(np.array([0.005, 0.03, 0.05, np.nan]) ** 2))
    quiet, cv3, cv5, unknown = looks.target_runs(sigma, schedule)
    assert quiet == looks.MIN_TARGET
    assert 18 <= cv3 <= 24 and 50 <= cv5 <= 65
    assert unknown == looks.TARGET_CAP * 30
    with_band = looks.target_runs(sigma[1:2], schedule, negligible=0.01)
    assert with_band[0] > cv3  # a 5 % change is judged as 4 % beyond the band


def _fit(theta: float, se: float, sigma: float = 0.03, df: float = 30.0) -> blocks.BlockFit:
    one = np.array
    return blocks.BlockFit(one([theta]), one([se]), one([df]), one([sigma]), 10)


def test_a_closed_test_cannot_say_different_and_stops_when_same_is_out_of_reach() -> None:
    schedule = looks.look_schedule(30)
    at_22 = schedule.index(22)  # past the ~21-run target of CV 3 %
    seen = looks.judge(_fit(0.035, 0.02), schedule, at_22, np.array([False]))
    assert seen.codes[0] == looks.UNKNOWN and seen.closed[0] and seen.futile[0]
    inside = looks.judge(_fit(0.01, 0.02), schedule, at_22, np.array([False]))
    assert inside.closed[0] and not inside.futile[0]  # SAME may still come
    before = looks.judge(_fit(0.2, 0.02), schedule, 3, np.array([True]))
    assert before.codes[0] != looks.DIFFERENT and math.isinf(before.different_t[0])
    early = looks.judge(_fit(0.035, 0.02), schedule, 3, np.array([False]))
    assert not early.closed[0] and not early.futile[0]


def test_a_test_closed_at_an_earlier_look_stays_closed() -> None:
    # Eight runs per arm at CV 1.5 % (a target of 8) with A 1.5 % ahead: UNKNOWN at the
    # look at 8 runs, which spends the last of the error; a jump of 10 % in later rounds
    # cannot reopen it.
    rng = np.random.default_rng(2)
    a = [101.5 * np.exp(rng.normal(0, 0.015, 2)) for _ in range(4)]
    b = [100 * np.exp(rng.normal(0, 0.015, 2)) for _ in range(4)]
    at_8 = verdict.next_step(a, b, 8, 30).comparison
    assert at_8.verdict == "UNKNOWN" and at_8.target_runs == 8 and at_8.different_closed
    later_a = [110 * np.exp(rng.normal(0, 0.001, 2)) for _ in range(2)]
    later_b = [100 * np.exp(rng.normal(0, 0.001, 2)) for _ in range(2)]
    d = verdict.next_step([*a, *later_a], [*b, *later_b], 12, 30)
    assert d.comparison.different_closed and d.comparison.verdict != "DIFFERENT"
    assert "earlier look" in d.comparison.reason
    # A look that decided does not close it: cells that ran on for another comparison
    # are judged again at the later look.
    fast = [110 * np.exp(rng.normal(0, 0.001, 2)) for _ in range(6)]
    slow = [100 * np.exp(rng.normal(0, 0.001, 2)) for _ in range(6)]
    at_8 = verdict.next_step(fast[:4], slow[:4], 8, 30).comparison
    assert at_8.verdict == "DIFFERENT"
    again = verdict.next_step(fast, slow, 12, 30).comparison
    assert again.verdict == "DIFFERENT", again.reason


def test_next_step_escalates_to_the_next_look_and_stops_at_the_last() -> None:
    a, b = lognormal(30, 104, 0.03, 30), lognormal(31, 100, 0.03, 30)
    early = verdict.next_step([a[:2]], [b[:2]], 2, 20)
    assert early.action == "run_more" and early.more_runs_per_arm == 2
    assert early.comparison.verdict == "UNKNOWN" and "before the first look" in \
        early.comparison.reason
    runs, seen = 4, []
    while True:
        d = verdict.next_step(halves(a[:runs]), halves(b[:runs]), runs, 20)
        seen.append((runs, d.look, d.action))
        if d.action == "stop":
            break
        runs += d.more_runs_per_arm
    assert d.comparison.verdict == "DIFFERENT", d.comparison.reason
    assert [s[1] for s in seen] == list(range(len(seen)))
    # Between two looks: judged at the one before; a look one run away is passed over.
    off = verdict.next_step(halves(a[:5]), halves(b[:5]), 5, 20)
    assert off.look == 0 and off.action == "run_more" and off.more_runs_per_arm == 3
    noisy = lognormal(32, 100, 0.2, 20), lognormal(33, 100, 0.2, 20)
    last = verdict.next_step(halves(noisy[0]), halves(noisy[1]), 20, 20)
    assert last.action == "stop" and "budget spent" in last.reason


def test_drift_is_reported_and_does_not_bias_the_ratio() -> None:
    # A B | B A | A B | B A, the machine losing 1.5 % per round, arms 4 % apart.
    rng = np.random.default_rng(40)
    a_rounds, b_rounds = [], []
    for r in range(4):
        level = -0.015 * r
        a_rounds.append(104 * np.exp(level + rng.normal(0, 0.004, 4)))
        b_rounds.append(100 * np.exp(level + rng.normal(0, 0.004, 4)))
    res = verdict.compare(a_rounds, b_rounds)
    assert res.drift is not None and res.drift.present
    assert res.drift.per_round == pytest.approx(-0.015, abs=0.004)
    assert "fell" in res.drift.note
    assert res.ratio == pytest.approx(1.04, abs=0.005)
    steady = verdict.compare(halves(lognormal(41, 100, 0.01, 10)), halves(lognormal(42, 100,
                                                                                  0.01, 10)))
    assert steady.drift is not None and not steady.drift.present


DEGENERATE = [
    ([[]], [[1.0, 2.0, 3.0]], "0 finite", "run_more"),
    ([[1.0]], [[1.0, 2.0, 3.0]], "1 finite", "run_more"),
    ([[0.0, 0.0, 0.0]], [[1.0, 2.0, 3.0]], "non-positive", "stop"),
    ([[1.0, 2.0, -3.0]], [[1.0, 2.0, 3.0]], "non-positive", "stop"),
    ([[math.nan] * 5], [[1.0, 2.0, 3.0]], "non-finite", "run_more"),
    ([[3.0] * 5], [[3.0] * 5], "no run-to-run spread", "stop"),
    ([[3.0] * 5], [[4.0] * 5], "no run-to-run spread", "stop"),
    ([[1.0, 2.0], []], [[], [1.0, 2.0]], "never ran in the same round", "run_more"),
]


@pytest.mark.parametrize(("a", "b", "why", "action"), DEGENERATE)
def test_degenerate_inputs_are_unknown_with_reason(
    a: list[list[float]], b: list[list[float]], why: str, action: str
) -> None:
    res = verdict.compare(a, b)
    assert res.verdict == "UNKNOWN"
    assert why in res.reason
    assert res.n_a == sum(math.isfinite(x) for r in a for x in r)
    dec = verdict.next_step(a, b, 5, 20)
    assert dec.action == action
    assert dec.comparison.verdict == "UNKNOWN"


def test_two_runs_in_one_round_leave_no_degrees_of_freedom() -> None:
    res = verdict.compare([[100.0]], [[101.0]])
    assert res.verdict == "UNKNOWN" and "1 finite" in res.reason
    res = verdict.compare([[100.0], [102.0]], [[101.0], [99.0]])
    assert res.verdict == "UNKNOWN"


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=6),
             max_size=4),
    st.lists(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=6),
             max_size=4),
)
def test_never_raises(a: list[list[float]], b: list[list[float]]) -> None:
    res = verdict.compare(a, b)
    assert isinstance(res, ComparisonResult)
    assert res.verdict in {"DIFFERENT", "SAME", "UNKNOWN"}
    runs = min(sum(map(len, a)), sum(map(len, b)))
    verdict.next_step(a, b, runs, 20)
