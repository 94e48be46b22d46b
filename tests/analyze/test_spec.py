"""Spec diagnostics: acceptance, step cost and break-even, k-sweep fit, collapse, divergence."""

from __future__ import annotations

import numpy as np
import pytest

from triagebot.analyze import spec
from triagebot.analyze.findings_models import AcceptanceStats
from triagebot.run_result import SpecCounters


def counters(drafts: int, drafted: int, accepted: int, per_pos: list[int]) -> SpecCounters:
    return SpecCounters(
        num_drafts=drafts,
        num_draft_tokens=drafted,
        num_accepted_tokens=accepted,
        per_position_accepted=per_pos,
    )


@pytest.mark.parametrize(
    ("c", "rate", "length", "per_pos", "note"),
    [
        (counters(100, 300, 150, [80, 50, 20]), 0.5, 2.5, [0.8, 0.5, 0.2], None),
        (counters(1000, 1000, 690, [690]), 0.69, 1.69, [0.69], None),  # the GLM-OCR seed
        (counters(0, 0, 0, []), None, None, [], "no drafts"),
        (counters(10, 20, 25, [10, 15]), 1.25, 3.5, [1.0, 1.5], "exceeds drafted"),
        (counters(10, 20, 5, [1, 1]), 0.25, 1.5, [0.1, 0.1], "sums to 2"),
        (counters(10, 0, 0, []), None, 1.0, [], None),
    ],
)
def test_acceptance_table(
    c: SpecCounters,
    rate: float | None,
    length: float | None,
    per_pos: list[float],
    note: str | None,
) -> None:
    got = spec.acceptance(c)
    assert got.acceptance_rate == (pytest.approx(rate) if rate is not None else None)
    assert got.mean_acceptance_length == (pytest.approx(length) if length is not None else None)
    assert got.per_position == pytest.approx(per_pos)
    if note:
        assert any(note in n for n in got.notes), got.notes
    else:
        assert got.notes == []


def test_step_cost_reproduces_the_seed_sentence() -> None:
    # GLM-OCR seed: mtp_graph 260.372 tok/s vs no_mtp_graph 465.308 at length 1.69.
    got = spec.step_cost(1.69, 260.372, 465.308, ratio_ci=(0.55, 0.57))
    assert got is not None
    assert got.relative_cost == pytest.approx(1.69 * 465.308 / 260.372)
    assert got.break_even_cost == 1.69
    assert not got.spec_pays_off
    assert got.speedup == pytest.approx(260.372 / 465.308)
    assert "may cost at most 1.69x the baseline step; it costs 3.0x" in got.sentence
    assert got.relative_cost_ci_low == pytest.approx(1.69 / 0.57)
    assert got.relative_cost_ci_high == pytest.approx(1.69 / 0.55)
    assert got.step_seconds_spec == pytest.approx(1.69 / 260.372)


def test_step_cost_when_spec_pays_off() -> None:
    got = spec.step_cost(2.5, 150.0, 100.0)
    assert got is not None and got.spec_pays_off
    assert got.relative_cost == pytest.approx(2.5 / 1.5)
    assert "slower" not in got.sentence


@pytest.mark.parametrize(
    "args", [(1.5, 0.0, 100.0), (1.5, 100.0, float("nan")), (0.0, 1.0, 1.0), (-1, 1.0, 1.0)]
)
def test_step_cost_bad_inputs_give_none(args: tuple[float, float, float]) -> None:
    assert spec.step_cost(*args) is None


@pytest.mark.parametrize(
    ("base", "fixed", "per_token", "ks"),
    [
        (0.010, 0.002, 0.0005, [1, 2, 3, 4]),
        (0.020, 0.030, 0.0010, [1, 3, 5]),  # graph fallback: big fixed cost
        (0.015, 0.000, 0.0040, [2, 4, 6, 8]),
    ],
)
def test_fit_recovers_known_coefficients(
    base: float, fixed: float, per_token: float, ks: list[int]
) -> None:
    pts = [(k, base + fixed + per_token * k) for k in ks]
    fit = spec.fit_step_cost(pts, base)
    assert fit.ok and fit.base_known
    assert fit.fixed_seconds == pytest.approx(fixed, abs=1e-12)
    assert fit.per_token_seconds == pytest.approx(per_token)
    assert fit.fixed_rel_base == pytest.approx(fixed / base, abs=1e-9)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.max_rel_residual == pytest.approx(0.0, abs=1e-9)


def test_fit_with_noise_has_standard_errors() -> None:
    rng = np.random.default_rng(7)
    ks = [1, 2, 3, 4, 5, 6] * 3
    pts = [(k, (0.01 + 0.004 + 0.001 * k) * (1 + rng.normal(0, 0.005))) for k in ks]
    fit = spec.fit_step_cost(pts, 0.01)
    assert fit.ok and fit.fixed_se is not None and fit.per_token_se is not None
    assert fit.fixed_seconds == pytest.approx(0.004, abs=4 * fit.fixed_se)
    assert fit.per_token_seconds == pytest.approx(0.001, abs=4 * fit.per_token_se)
    assert fit.r_squared is not None and fit.r_squared > 0.9


def test_fit_without_base_only_knows_the_intercept() -> None:
    fit = spec.fit_step_cost([(1, 0.013), (2, 0.014), (3, 0.015)])
    assert fit.ok and not fit.base_known
    assert fit.fixed_seconds is None and fit.fixed_rel_base is None
    assert fit.intercept_seconds == pytest.approx(0.012)
    assert "not separable" in fit.reason


@pytest.mark.parametrize(
    "pts",
    [
        [],
        [(1, 0.01), (2, 0.02)],
        [(1, 0.01), (1, 0.011), (2, 0.02)],
        [(1, 0.01), (2, float("nan")), (3, 0.03)],
        [(0, 0.01), (1, 0.02), (2, 0.03)],
    ],
)
def test_fit_needs_three_distinct_k(pts: list[tuple[int, float]]) -> None:
    fit = spec.fit_step_cost(pts, 0.01)
    assert not fit.ok and "3 distinct k" in fit.reason


def acc(rate: float | None, length: float | None) -> AcceptanceStats:
    return AcceptanceStats(
        num_drafts=1,
        num_draft_tokens=1,
        num_accepted_tokens=0,
        acceptance_rate=rate,
        mean_acceptance_length=length,
    )


@pytest.mark.parametrize(
    ("arms", "flags"),
    [
        (
            {"eager": acc(0.92, 1.92), "graph": acc(0.0, 1.0)},
            {("graph", "length_near_one"), ("graph", "rate_drop")},
        ),
        ({"eager": acc(0.8, 2.6), "graph": acc(0.3, 1.6)}, {("graph", "rate_drop")}),
        ({"eager": acc(0.8, 2.6), "graph": acc(0.7, 2.4)}, set()),
        ({"only": acc(0.05, 1.05)}, {("only", "length_near_one")}),
        ({"a": acc(None, None), "b": acc(0.6, 1.6)}, set()),
    ],
)
def test_detect_collapse(arms: dict[str, AcceptanceStats], flags: set[tuple[str, str]]) -> None:
    got = spec.detect_collapse(arms)
    assert {(f.arm, f.kind) for f in got} == flags
    assert all(f.reason for f in got)


@pytest.mark.parametrize(
    ("digests", "lossless", "checked", "diverged", "groups", "missing"),
    [
        ({"eager": "x", "graph": "x"}, True, True, False, [["eager", "graph"]], []),
        (
            {"eager": "x", "graph": "y", "spec": "x"},
            True,
            True,
            True,
            [["eager", "spec"], ["graph"]],
            [],
        ),
        (
            {"eager": "x", "graph": None, "spec": "x"},
            True,
            True,
            False,
            [["eager", "spec"]],
            ["graph"],
        ),
        ({"eager": "x", "graph": None}, True, False, False, [["eager"]], ["graph"]),
        ({"eager": "x", "graph": "y"}, False, False, False, [], []),
    ],
)
def test_detect_divergence(
    digests: dict[str, str | None],
    lossless: bool,
    checked: bool,
    diverged: bool,
    groups: list[list[str]],
    missing: list[str],
) -> None:
    got = spec.detect_divergence(digests, lossless=lossless)
    assert (got.checked, got.diverged, got.groups, got.missing) == (
        checked,
        diverged,
        groups,
        missing,
    )
    assert got.reason


def test_spec_diagnostics_combines_everything() -> None:
    peers = {"mtp_eager": spec.acceptance(counters(100, 100, 92, [92]))}
    got = spec.spec_diagnostics(
        "mtp_graph", counters(100, 100, 0, [0]), tok_s_spec=200.0, tok_s_base=465.0, peers=peers
    )
    assert got.acceptance.mean_acceptance_length == 1.0
    assert got.step_cost is not None and not got.step_cost.spec_pays_off
    assert {f.kind for f in got.collapse} == {"length_near_one", "rate_drop"}
    assert spec.spec_diagnostics("x", counters(0, 0, 0, [])).step_cost is None


# --- explaining a throughput ratio -------------------------------------------------------


@pytest.mark.parametrize(("ratio", "ci", "a", "b", "driver", "words"), [
    # The drafter got worse and that is all: 2.2 / 3.1 = 0.71.
    (0.71, (0.69, 0.73), 2.2, 3.1, "acceptance", "fully explained by acceptance 3.10 → 2.20"),
    # Same drafter, dearer steps.
    (0.893, (0.87, 0.91), 3.1, 3.1, "step cost", "acceptance unchanged"),
    # Nothing moved.
    (1.0, (0.98, 1.02), 2.5, 2.51, "neither", "step cost unchanged"),
    # Both moved the same way: acceptance 0.9x of a 0.8x change.
    (0.8, (0.78, 0.82), 2.7, 3.0, "both", "explains 47% of"),
    # Acceptance fell but throughput rose: the step got much cheaper.
    (2.28, (2.2, 2.35), 1.0, 1.92, "both", "works against"),
])
def test_explain_ratio(ratio: float, ci: tuple[float, float], a: float, b: float,
                       driver: str, words: str) -> None:
    got = spec.explain_ratio(ratio, ci, a, b)
    assert got is not None
    assert got.driver == driver, got.sentence
    assert words in got.sentence
    # tok/s = tokens per step / seconds per step, exactly.
    assert got.tokens_per_step_ratio / got.step_cost_ratio == pytest.approx(ratio)
    assert got.step_cost_ci_low is not None and got.step_cost_ci_high is not None
    assert got.step_cost_ci_low <= got.step_cost_ratio <= got.step_cost_ci_high


def test_explain_ratio_step_cost_up_12_percent() -> None:
    got = spec.explain_ratio(1 / 1.12, (0.87, 0.91), 2.4, 2.4)
    assert got is not None and "step cost up 12%" in got.sentence


@pytest.mark.parametrize("args", [(0.0, 2.0, 2.0), (1.0, -1.0, 2.0), (float("nan"), 2.0, 2.0)])
def test_explain_ratio_bad_inputs_give_none(args: tuple[float, float, float]) -> None:
    assert spec.explain_ratio(args[0], None, args[1], args[2]) is None


def test_tokens_per_step_prefers_counted_passes() -> None:
    acc = spec.acceptance(SpecCounters(num_drafts=10, num_draft_tokens=20,
                                       num_accepted_tokens=15))
    assert spec.tokens_per_step(acc, 40, 100) == (2.5, "counted target forward passes")
    assert spec.tokens_per_step(acc, None, None) == (2.5, "acceptance length")
    assert spec.tokens_per_step(None, 0, 100) is None
