"""Statistical core: known samples, the three-way rule, escalation and degenerate data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triagebot.analyze import stats
from triagebot.analyze.findings_models import ComparisonResult, NoiseBand
from triagebot.model import RunMeasurement, RunResult


def lognormal(seed: int, median: float, cv: float, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return median * np.exp(rng.normal(0.0, math.sqrt(math.log1p(cv * cv)), n))


def band(pct: float) -> NoiseBand:
    return stats.default_band(half_width_pct=pct)


# --- per cell ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("samples", "n", "median", "mean", "cv"),
    [
        ([1.0, 2.0, 3.0, 4.0, 5.0], 5, 3.0, 3.0, math.sqrt(2.5) / 3.0),
        ([10.0, 30.0], 2, 20.0, 20.0, math.sqrt(200.0) / 20.0),
        ([5.0, float("nan"), 7.0, 6.0], 3, 6.0, 6.0, 1.0 / 6.0),
        ([4.0, 4.0, 4.0], 3, 4.0, 4.0, 0.0),
    ],
)
def test_summarize_cell_known_values(
    samples: list[float], n: int, median: float, mean: float, cv: float
) -> None:
    s = stats.summarize_cell(samples)
    assert s.n == n
    assert s.median == pytest.approx(median)
    assert s.mean == pytest.approx(mean)
    assert s.cv == pytest.approx(cv)
    assert s.ci_low is not None and s.ci_high is not None
    assert min(samples_finite(samples)) <= s.ci_low <= median <= s.ci_high
    assert s.ci_high <= max(samples_finite(samples))


def samples_finite(xs: list[float]) -> list[float]:
    return [x for x in xs if math.isfinite(x)]


def test_summarize_cell_reports_dropped_and_small_n() -> None:
    assert stats.summarize_cell([]).model_dump(include={"n", "median", "reason"}) == {
        "n": 0,
        "median": None,
        "reason": "no finite runs",
    }
    one = stats.summarize_cell([7.0, float("inf")])
    assert (one.n, one.median, one.ci_low, one.dropped) == (1, 7.0, None, 1)
    assert one.reason


def test_bootstrap_is_reproducible_and_seeded() -> None:
    x = lognormal(1, 100, 0.05, 12)
    assert stats.bootstrap_median_ci(x) == stats.bootstrap_median_ci(x)
    assert stats.summarize_cell(x) == stats.summarize_cell(list(x))


def test_ratio_of_medians_ci_brackets_known_ratio_and_is_mirror_symmetric() -> None:
    a = lognormal(3, 200.0, 0.02, 20)
    b = lognormal(4, 100.0, 0.02, 20)
    got = stats.ratio_of_medians_ci(a, b)
    assert got is not None
    ratio, lo, hi = got
    assert ratio == pytest.approx(np.median(a) / np.median(b))
    assert lo < ratio < hi
    assert lo > 1.9 and hi < 2.1
    assert stats.ratio_of_medians_ci(a, [0.0, 1.0]) is None


# --- rank test --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "p", "method"),
    [
        ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], 2 / 252, "mann-whitney-u exact"),
        ([6, 7, 8, 9, 10], [1, 2, 3, 4, 5], 2 / 252, "mann-whitney-u exact"),
        ([3, 3, 3], [3, 3, 3], 1.0, "all values tied"),
        ([], [1, 2], None, "no data"),
    ],
)
def test_mann_whitney_known_p(a: list[float], b: list[float], p: float | None, method: str) -> None:
    got, how = stats.mann_whitney_p(a, b)
    assert how == method
    assert got == (pytest.approx(p) if p is not None else None)


def test_mann_whitney_ties_use_normal_approximation() -> None:
    p, how = stats.mann_whitney_p([1, 2, 2, 3, 4], [2, 5, 6, 7, 8])
    assert how == "mann-whitney-u asymptotic"
    assert p is not None and 0 < p < 1


@pytest.mark.parametrize(("n", "p"), [(5, 2 / 252), (4, 2 / 70), (10, 2 / 184756), (0, 1.0)])
def test_min_attainable_p(n: int, p: float) -> None:
    assert stats.min_attainable_p(n, n) == pytest.approx(p)


# --- verdict ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "lo", "hi", "band_pct", "verdict", "why"),
    [
        (0.001, 1.05, 1.10, 0.02, "DIFFERENT", "outside"),
        (0.001, 0.90, 0.95, 0.02, "DIFFERENT", "outside"),
        (0.02, 1.05, 1.10, 0.02, "UNKNOWN", "p=0.02"),
        (0.5, 0.995, 1.005, 0.02, "SAME", "inside"),
        (0.001, 0.995, 1.005, 0.02, "SAME", "inside"),  # significant, but within noise
        (0.001, 1.01, 1.05, 0.02, "UNKNOWN", "straddles"),
        (0.5, 0.95, 1.05, 0.12, "UNKNOWN", "too wide"),  # band too wide to vouch
        (None, 1.05, 1.10, 0.02, "UNKNOWN", "no p-value"),
        (0.001, None, None, 0.02, "UNKNOWN", "no p-value"),
    ],
)
def test_decide_table(
    p: float | None, lo: float | None, hi: float | None, band_pct: float, verdict: str, why: str
) -> None:
    got, reason = stats.decide(p, 0.01, lo, hi, band(band_pct))
    assert got == verdict
    assert why in reason


@pytest.mark.parametrize(
    ("a", "b", "verdict"),
    [
        (lognormal(10, 105, 0.02, 20), lognormal(11, 100, 0.02, 20), "DIFFERENT"),
        (lognormal(12, 90, 0.02, 20), lognormal(13, 100, 0.02, 20), "DIFFERENT"),
        (lognormal(14, 100, 0.002, 20), lognormal(15, 100, 0.002, 20), "SAME"),
        (lognormal(16, 101, 0.05, 5), lognormal(17, 100, 0.05, 5), "UNKNOWN"),
    ],
)
def test_compare_end_to_end(a: np.ndarray, b: np.ndarray, verdict: str) -> None:
    res = stats.compare(a, b, stats.noise_band([100, 101, 99, 100.5, 99.5], [100] * 4 + [101]))
    assert res.verdict == verdict, res.reason
    assert (res.n_a, res.n_b) == (a.size, b.size)


DEGENERATE = [
    ([], [1.0, 2.0, 3.0], "0 finite", "run_more"),
    ([1.0], [1.0, 2.0, 3.0], "1 finite", "run_more"),
    ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], "non-positive", "stop"),
    ([1.0, 2.0, -3.0], [1.0, 2.0, 3.0], "non-positive", "stop"),
    ([math.nan] * 5, [1.0, 2.0, 3.0], "non-finite", "run_more"),
    ([3.0] * 5, [3.0] * 5, "no run-to-run spread", "stop"),
    ([3.0] * 5, [4.0] * 5, "no run-to-run spread", "stop"),
]


@pytest.mark.parametrize(("a", "b", "why", "action"), DEGENERATE)
def test_degenerate_inputs_are_unknown_with_reason(
    a: list[float], b: list[float], why: str, action: str
) -> None:
    res = stats.compare(a, b)
    assert res.verdict == "UNKNOWN"
    assert why in res.reason
    assert res.n_a == sum(math.isfinite(x) for x in a)
    dec = stats.next_step(a, b, None, 5, 20)
    assert dec.action == action
    assert dec.comparison.verdict == "UNKNOWN"
    inter = stats.interaction(a, b, [1.0, 2.0], [1.0, 2.0])
    assert inter.verdict == "UNKNOWN" and inter.reason


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=8),
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=8),
)
def test_compare_never_raises(a: list[float], b: list[float]) -> None:
    res = stats.compare(a, b, resamples=200)
    assert isinstance(res, ComparisonResult)
    assert res.verdict in {"DIFFERENT", "SAME", "UNKNOWN"}
    stats.next_step(a, b, None, len(a), 20, resamples=200)


# --- noise band -------------------------------------------------------------------------


def test_noise_band_without_aa_pair_is_default_and_says_so() -> None:
    nb = stats.noise_band()
    assert nb.source == "default"
    assert "default" in nb.note and "no A/A pair" in nb.note
    assert nb.high == pytest.approx(1.02)
    assert nb.low == pytest.approx(1 / 1.02)


@pytest.mark.parametrize(
    ("aa_a", "aa_b", "source", "high"),
    [
        ([100.0, 101, 99, 100, 100.5], [100.0, 99.5, 100.5, 101, 99], "aa_pair", 1.01),  # floor
        ([103.0, 104, 102, 103, 103.5], [100.0, 99.5, 100.5, 101, 99], "aa_pair", 1.03),
        ([100.0, 99.5, 100.5, 101, 99], [103.0, 104, 102, 103, 103.5], "aa_pair", 1.03),
        ([100.0], [100.0, 99.5], "default", 1.02),
        ([0.0, 1.0], [100.0, 99.5], "default", 1.02),
    ],
)
def test_noise_band_from_aa_pair(
    aa_a: list[float], aa_b: list[float], source: str, high: float
) -> None:
    nb = stats.noise_band(aa_a, aa_b)
    assert nb.source == source
    assert nb.high == pytest.approx(high)
    assert nb.low == pytest.approx(1 / nb.high)
    if source == "default":
        assert "unusable" in nb.note


# --- escalation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_runs", "min_runs", "step", "schedule"),
    [
        (20, 5, 5, [5, 10, 15, 20]),
        (12, 5, 5, [5, 10, 12]),
        (5, 5, 5, [5]),
        (3, 5, 5, [3]),
        (40, 10, 10, [10, 20, 30, 40]),
    ],
)
def test_look_schedule(max_runs: int, min_runs: int, step: int, schedule: list[int]) -> None:
    assert stats.look_schedule(max_runs, min_runs, step) == schedule


@pytest.mark.parametrize("schedule", [[5, 10, 15, 20], [5], [3, 6, 9], [10, 20, 40], [5, 10]])
def test_look_alphas_spend_at_most_alpha(schedule: list[int]) -> None:
    alphas = stats.look_alphas(schedule, 0.01)
    assert len(alphas) == len(schedule)
    assert sum(alphas) <= 0.01 + 1e-15
    if schedule[0] == 5 and len(schedule) > 1:
        # 5 v 5 complete separation must be able to stop at the first look.
        assert stats.min_attainable_p(5, 5) < alphas[0]


def test_next_step_stops_at_first_look_on_complete_separation() -> None:
    d = stats.next_step([11, 12, 13, 14, 15], [1, 2, 3, 4, 5], None, 5, 20)
    assert (d.action, d.comparison.verdict, d.look) == ("stop", "DIFFERENT", 0)
    assert d.comparison.alpha == pytest.approx(0.008)


def test_next_step_escalates_then_reaches_different() -> None:
    a = lognormal(21, 104, 0.02, 20)
    b = lognormal(22, 100, 0.02, 20)
    nb = stats.noise_band([100, 101, 99, 100.5, 99.5], [100, 100.2, 99.8, 100.4, 99.6])
    runs, decisions = 5, []
    while True:
        d = stats.next_step(a[:runs], b[:runs], nb, runs, 20)
        decisions.append(d)
        if d.action == "stop":
            break
        runs += d.more_runs_per_arm
    assert decisions[0].action == "run_more" and decisions[0].more_runs_per_arm == 5
    assert decisions[-1].comparison.verdict == "DIFFERENT"
    assert decisions[-1].comparison.n_a == runs > 5


def test_next_step_below_min_runs_and_at_budget() -> None:
    d = stats.next_step([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], None, 3, 20)
    assert (d.action, d.more_runs_per_arm) == ("run_more", 2)
    assert d.comparison.alpha == 0.0
    a, b = lognormal(30, 101, 0.05, 20), lognormal(31, 100, 0.05, 20)
    d = stats.next_step(a, b, None, 20, 20)
    assert d.action == "stop" and "budget" in d.reason
    d = stats.next_step(a[:12], b[:12], None, 12, 20)  # off-schedule: tops up to 15
    assert (d.action, d.more_runs_per_arm, d.look) == ("run_more", 3, 1)


def test_aa_false_positive_rate_under_alpha() -> None:
    """A/A pairs through the whole escalation loop are called DIFFERENT at most 1 %."""
    pairs, different, runs_used = 400, 0, 0
    for i in range(pairs):
        rng = np.random.default_rng(1000 + i)
        sigma = math.sqrt(math.log1p(0.03**2))
        a, b, c, d = (100 * np.exp(rng.normal(0, sigma, 20)) for _ in range(4))
        nb = stats.noise_band(c[:5], d[:5])
        runs = 5
        while True:
            dec = stats.next_step(a[:runs], b[:runs], nb, runs, 20)
            if dec.action == "stop":
                break
            runs += dec.more_runs_per_arm
        different += dec.comparison.verdict == "DIFFERENT"
        runs_used += runs
    assert different / pairs <= 0.01
    assert runs_used / pairs > 5  # A/A mostly escalates: it is hard to prove SAME


# --- interaction ------------------------------------------------------------------------


def test_interaction_spec_hurts_under_graph_helps_in_eager() -> None:
    spec_graph, base_graph = lognormal(40, 260, 0.02, 10), lognormal(41, 465, 0.02, 10)
    spec_eager, base_eager = lognormal(42, 92, 0.02, 10), lognormal(43, 60, 0.02, 10)
    res = stats.interaction(spec_graph, base_graph, spec_eager, base_eager, name="graph/eager")
    assert res.verdict == "DIFFERENT"
    assert res.ratio_of_ratios == pytest.approx((260 / 465) / (92 / 60), rel=0.05)
    assert res.ci_low is not None and res.ci_high is not None
    assert res.strict_ci_low is not None and res.strict_ci_high is not None
    assert res.strict_ci_low <= res.ci_low <= res.ratio_of_ratios <= res.ci_high
    assert res.ci_high <= res.strict_ci_high
    assert (res.n_a1, res.n_b1, res.n_a2, res.n_b2) == (10, 10, 10, 10)
    assert res.band.half_width == pytest.approx(math.log1p(0.02) * math.sqrt(2))


def test_interaction_same_when_ratios_match() -> None:
    cells = [lognormal(50 + i, m, 0.002, 20) for i, m in enumerate((150, 100, 75, 50))]
    assert stats.interaction(*cells).verdict == "SAME"


# --- inputs -----------------------------------------------------------------------------


def test_samples_from_only_ok_runs() -> None:
    def rr(status: str, tps: list[float]) -> RunResult:
        runs = [RunMeasurement(output_tokens=10, seconds=1.0, tok_s=t) for t in tps]
        return RunResult(cell_id="c", engine="vllm", status=status, runs=runs)  # type: ignore[arg-type]

    assert stats.samples_from([rr("ok", [1.0, 2.0]), rr("failed", [3.0]), rr("ok", [4.0])]) == [
        1.0,
        2.0,
        4.0,
    ]
