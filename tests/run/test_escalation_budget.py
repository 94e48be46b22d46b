"""Escalation stays inside the plan's time limit: a round is priced before it starts."""

from __future__ import annotations

import time
from pathlib import Path

from tests.report import load_fixture
from triagebot.run.orchestrate import RunSettings, _escalation


def _escalate(walls: dict[str, float], tmp_path: Path, limit_s: int = 600) -> int:
    plan, results = load_fixture("noisy_unknown")
    plan = plan.model_copy(update={"budget": plan.budget.model_copy(
        update={"time_limit_s": limit_s, "max_runs": 30})})
    started = time.monotonic() - 300  # five minutes spent
    slots = _escalation(plan, None, {k: list(v) for k, v in results.items()}, 2,
                        RunSettings(out_dir=tmp_path), started, before=[], walls=walls)
    return len(slots)


def test_a_round_that_fits_the_time_left_is_started(tmp_path: Path) -> None:
    plan, _ = load_fixture("noisy_unknown")
    assert _escalate({c.cell_id: 20.0 for c in plan.cells}, tmp_path) > 0


def test_a_round_that_would_overrun_the_time_limit_is_not_started(tmp_path: Path) -> None:
    plan, _ = load_fixture("noisy_unknown")
    # Five minutes spent and each start took two: a round of several starts cannot fit.
    assert _escalate({c.cell_id: 120.0 for c in plan.cells}, tmp_path) == 0


def test_an_escalation_is_one_round_mirroring_the_round_before(tmp_path: Path) -> None:
    plan, results = load_fixture("noisy_unknown")
    before = [c.cell_id for c in plan.cells]
    slots = _escalation(plan, None, {k: list(v) for k, v in results.items()}, 2,
                        RunSettings(out_dir=tmp_path), time.monotonic(), before=before,
                        walls={c.cell_id: 1.0 for c in plan.cells})
    order = [s.cell_id for s in slots]
    assert order and {s.round for s in slots} == {2}
    assert order == [cid for cid in reversed(before) if cid in order]
