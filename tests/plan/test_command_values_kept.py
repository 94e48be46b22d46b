"""A command's values run as written (issue 41, item 3): the reference engine's caps
shrink only what the command left to the planner."""

from __future__ import annotations

import pytest

from tests.service.support import REPORT
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan


@pytest.mark.parametrize("prompts", [2, 8])
def test_prompts_from_the_command_run_as_asked(prompts: int) -> None:
    plan = build_plan(parse_report(REPORT, title="t"),
                      parse_overrides(["engine=transformers", f"prompts={prompts}"]))
    assert {cell.workload.num_prompts for cell in plan.cells} == {prompts}
    assert any(f"runs {prompts} prompts per run" in note for note in plan.notes)


def test_max_tokens_from_the_command_is_not_capped() -> None:
    plan = build_plan(parse_report(REPORT, title="t"),
                      parse_overrides(["engine=transformers", "max_tokens=100"]))
    assert {cell.sampling.max_tokens for cell in plan.cells} == {100}


def test_values_left_to_the_planner_are_still_scaled_down() -> None:
    plan = build_plan(parse_report(REPORT, title="t"), parse_overrides(["engine=transformers"]))
    assert {cell.workload.num_prompts for cell in plan.cells} == {4}
