"""Cell summaries, the A/A band and the interaction (verdicts: test_verdict.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from triagebot.analyze import stats
from triagebot.analyze.findings_models import NoiseBand
from triagebot.run_result import RunMeasurement, RunResult


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


# --- interaction ------------------------------------------------------------------------


def test_interaction_spec_hurts_under_graph_helps_in_eager() -> None:
    spec_graph, base_graph = lognormal(40, 260, 0.02, 10), lognormal(41, 465, 0.02, 10)
    spec_eager, base_eager = lognormal(42, 92, 0.02, 10), lognormal(43, 60, 0.02, 10)
    res = stats.interaction((spec_graph, base_graph), (spec_eager, base_eager),
                            name="graph/eager")
    assert res.verdict == "DIFFERENT"
    assert res.ratio_of_ratios == pytest.approx((260 / 465) / (92 / 60), rel=0.05)
    assert res.ci_low is not None and res.ci_high is not None
    assert res.strict_ci_low is not None and res.strict_ci_high is not None
    assert res.strict_ci_low <= res.ci_low <= res.ratio_of_ratios <= res.ci_high
    assert res.ci_high <= res.strict_ci_high
    assert (res.n_a1, res.n_b1, res.n_a2, res.n_b2) == (10, 10, 10, 10)
    assert res.band.half_width == pytest.approx(math.log1p(0.03) * math.sqrt(2))


def test_interaction_same_when_ratios_match() -> None:
    cells = [lognormal(50 + i, m, 0.002, 20) for i, m in enumerate((150, 100, 75, 50))]
    assert stats.interaction((cells[0], cells[1]), (cells[2], cells[3])).verdict == "SAME"


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
