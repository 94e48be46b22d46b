"""vllm-mlx's /v1/status MTP counters, added up over rounds and said per cell."""

from __future__ import annotations

from typing import Any

from triagebot.analyze.mtp_status import mtp_notes, mtp_totals
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Plan
from triagebot.run_result import RunMeasurement, RunResult

REPORT = (b"vllm-mlx serve mlx-community/Qwen3-Next-80B-A3B-Instruct-4bit "
          b"--continuous-batching --enable-mtp --mtp-num-draft-tokens 3\n")


def _plan() -> Plan:
    return build_plan(parse_report(REPORT), parse_overrides(
        ["engine=vllm-mlx", "gpu=cpu", "spec=none,mtp:3"]))


def _result(cell_id: str, **extra: Any) -> RunResult:
    runs = [RunMeasurement(output_tokens=96, seconds=1.0, tok_s=96.0)] * 2
    return RunResult.model_validate({"cell_id": cell_id, "engine": "vllm-mlx",
                                     "status": "ok", "runs": runs, **extra})


def _counters(attempted: int, accepted: int, bypass: int) -> dict[str, Any]:
    return {"requested_draft_tokens": 3, "effective_draft_tokens": 1, "mtp_enabled": True,
            "mtp_counters": {"attempted": attempted, "accepted": accepted,
                             "rejected": attempted - accepted, "errors": 0,
                             "bypass_counts": {"prefill": 0, "no_active_batch": bypass}}}


def test_rounds_add_up_and_the_note_says_requested_against_effective() -> None:
    plan = _plan()
    spec = next(c for c in plan.cells if c.spec is not None and not c.replica)
    rounds = [_result(spec.cell_id, **_counters(100, 20, 2)),
              _result(spec.cell_id, **_counters(50, 5, 1)),
              _result(spec.cell_id, status="failed")]
    totals = mtp_totals(rounds)
    assert totals is not None
    assert (totals["attempted"], totals["accepted"], totals["rejected"]) == (150, 25, 125)
    assert totals["bypass_counts"] == {"prefill": 0, "no_active_batch": 3}
    assert totals["runs"] == 4
    [note] = mtp_notes(plan, {spec.cell_id: rounds})
    assert "requested 3 draft tokens, effective 1 per verify step" in note
    assert "150 verify steps attempted, 25 accepted, 125 rejected (16.7% accepted)" in note
    assert "drafts 1 token(s) per step whatever --mtp-num-draft-tokens asks (3)" in note


def test_a_server_that_switched_mtp_off_is_named() -> None:
    plan = _plan()
    spec = next(c for c in plan.cells if c.spec is not None and not c.replica)
    off = _result(spec.cell_id, requested_draft_tokens=3, mtp_enabled=False)
    [note] = mtp_notes(plan, {spec.cell_id: [off]})
    assert "not enabled" in note


def test_cells_without_counters_say_nothing() -> None:
    plan = _plan()
    assert mtp_notes(plan, {c.cell_id: [_result(c.cell_id)] for c in plan.cells}) == []
