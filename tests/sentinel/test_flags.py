"""Flags from one case's figures: each kind, its one-line reason, and what is not a flag."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from triagebot.sentinel.flags import acceptance_interval, flags_for
from triagebot.sentinel.models import CaseFigures, ModeFigures

STEADY: dict[str, Any] = {
    "spec_ratio": 1.30, "spec_ci": (1.25, 1.35), "verdict": "DIFFERENT",
    "previous_spec_ratio": 1.31, "previous_spec_ci": (1.26, 1.36),
    "previous_verdict": "DIFFERENT", "ratio_of_ratios": 0.99, "ror_ci": (0.96, 1.02),
    "ror_verdict": "SAME", "acceptance_rate": 0.53, "acceptance_ci": (0.48, 0.58),
    "previous_acceptance": 0.53, "previous_acceptance_ci": (0.48, 0.58),
    "outputs_equal": True, "previous_outputs_equal": True}


def figures(status: str = "ok", previous: str | None = "0.29.0", **graph: Any) -> CaseFigures:
    modes = [ModeFigures(mode="eager", **STEADY),
             ModeFigures.model_validate({"mode": "graph", **STEADY, **graph})]
    return CaseFigures.model_validate({
        "case_id": "vllm-mtp-k1-standin-cpu", "engine": "vllm", "release": "0.32.0",
        "previous": previous, "status": status, "modes": modes if status == "ok" else [],
        "error_line": "spec + graph: TypeError: bad kwarg" if status != "ok" else None,
        "measured_at": datetime.now(UTC)})


def test_steady_figures_raise_no_flag() -> None:
    assert flags_for(figures(), 0.05) == []


@pytest.mark.parametrize(("change", "kind", "reason"), [
    ({"spec_ratio": 0.97, "spec_ci": (0.93, 1.01), "verdict": "SAME"}, "stopped_paying",
     "speculation stopped paying under graph: spec/no-spec 0.97x [0.93, 1.01] (SAME) at "
     "0.32.0, 1.31x [1.26, 1.36] (DIFFERENT) at 0.29.0"),
    ({"ratio_of_ratios": 0.88, "ror_ci": (0.84, 0.92), "ror_verdict": "DIFFERENT"},
     "speedup_fell", "the speed-up fell under graph: 0.32.0's spec/no-spec is 0.88x "
     "[0.84, 0.92] (DIFFERENT) of 0.29.0's, beyond the 5% margin"),
    ({"acceptance_rate": 0.40, "acceptance_ci": (0.35, 0.45)}, "acceptance_fell",
     "acceptance fell under graph: 40% [35, 45] at 0.32.0, 53% [48, 58] at 0.29.0"),
    ({"outputs_equal": False}, "outputs_diverged",
     "greedy outputs with speculation differ from those without under graph at 0.32.0 "
     "(0.29.0's were equal)"),
])
def test_each_change_is_one_flag_with_its_line(change: dict[str, Any], kind: str,
                                               reason: str) -> None:
    [flag] = flags_for(figures(**change), 0.05)
    assert (flag.kind, flag.mode, flag.reason) == (kind, "graph", reason)
    assert (flag.release, flag.previous) == ("0.32.0", "0.29.0")


def test_a_fall_inside_the_margin_or_an_unresolved_one_is_no_flag() -> None:
    inside = figures(ratio_of_ratios=0.97, ror_ci=(0.96, 0.98), ror_verdict="DIFFERENT")
    assert flags_for(inside, 0.05) == []
    wide = figures(ratio_of_ratios=0.85, ror_ci=(0.70, 1.03), ror_verdict="UNKNOWN")
    assert flags_for(wide, 0.05) == []
    # an unknown verdict now is not "stopped paying"
    unknown = figures(spec_ratio=1.0, spec_ci=(0.8, 1.2), verdict="UNKNOWN")
    assert flags_for(unknown, 0.05) == []
    # overlapping acceptance intervals are not a fall
    assert flags_for(figures(acceptance_rate=0.50, acceptance_ci=(0.45, 0.55)), 0.05) == []


def test_speculation_that_never_paid_is_not_flagged_as_stopped() -> None:
    slow = figures(spec_ratio=0.6, spec_ci=(0.55, 0.65), verdict="DIFFERENT",
                   previous_spec_ratio=0.6, previous_spec_ci=(0.55, 0.65))
    assert flags_for(slow, 0.05) == []


def test_a_crash_or_refusal_is_one_flag_with_the_engine_line() -> None:
    [crash] = flags_for(figures("crashed"), 0.05)
    assert crash.kind == "crashed" and crash.mode is None
    assert crash.reason == "0.32.0 crashed: spec + graph: TypeError: bad kwarg"
    [refusal] = flags_for(figures("refused"), 0.05)
    assert refusal.reason.startswith("0.32.0 refused the configuration: ")
    assert flags_for(figures("inconclusive"), 0.05) == []


def test_the_first_release_is_only_flagged_for_what_needs_no_previous() -> None:
    first = figures(previous=None, outputs_equal=False, ratio_of_ratios=None, ror_ci=None,
                    previous_verdict=None, previous_spec_ratio=None,
                    previous_outputs_equal=None)
    [flag] = flags_for(first, 0.05)
    assert flag.kind == "outputs_diverged" and flag.reason.endswith("at 0.32.0")


def test_the_acceptance_interval_narrows_with_tokens_and_stays_in_0_1() -> None:
    small, large = acceptance_interval(40, 80), acceptance_interval(400, 800)
    assert small is not None and large is not None
    assert small[0] < large[0] < 0.5 < large[1] < small[1]
    assert acceptance_interval(0, 0) is None
    full = acceptance_interval(80, 80)
    assert full is not None and full[1] == 1.0 and 0.9 < full[0] < 1.0
