"""'Speculation never engaged': each case, with the counter that shows it, from stand-in
RunResults, and where the report puts it."""

from __future__ import annotations

from typing import Any

from tests.conftest import seed_path
from tests.report import load_fixture, seed_request
from tests.report.layout import first_screen, section
from triagebot.analyze.findings import analyze
from triagebot.model import Plan, RunMeasurement, RunResult, SpecCounters
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.report import render_report


def _run(cell_id: str, values: list[float], engine: str = "vllm", **extra: Any) -> RunResult:
    runs = [RunMeasurement(output_tokens=500, seconds=500 / v, tok_s=v) for v in values]
    return RunResult.model_validate({"cell_id": cell_id, "engine": engine, "status": "ok",
                                     "runs": runs, **extra})


def _spec_cells(plan: Plan) -> list[str]:
    return [c.cell_id for c in plan.cells if c.spec is not None and not c.replica]


def _with_counters(counters: SpecCounters) -> tuple[Plan, dict[str, list[RunResult]]]:
    """The recorded slowdown, with `counters` in place of every spec cell's."""
    plan, results = load_fixture("reproduced_slowdown")
    spec = {c.cell_id for c in plan.cells if c.spec is not None}
    return plan, {cid: [r.model_copy(update={"spec": counters}) if cid in spec else r
                        for r in rounds] for cid, rounds in results.items()}


def test_zero_drafts_is_named_with_num_drafts() -> None:
    plan, results = _with_counters(SpecCounters(num_drafts=0, num_draft_tokens=0,
                                                num_accepted_tokens=0))
    f = analyze(plan, results, request=seed_request())
    assert {(e.label, e.case) for e in f.never_engaged} == {
        ("spec + eager", "zero_drafts"), ("spec + graph", "zero_drafts")}
    assert all(e.counter == "spec-decode counter num_drafts" for e in f.never_engaged)
    assert "zero drafts on spec + eager, 0 drafts (spec-decode counter num_drafts; 5 runs)" \
        in f.headline
    # Seed 000 reports a slowdown: throughput still decides, the finding leads the headline.
    assert f.headline.startswith("Reproduced: speculation never engaged as asked: zero drafts")


def test_a_pinned_acceptance_arm_is_left_out() -> None:
    # Its acceptance is the plan's setting, not the reported configuration engaging.
    plan, results = _with_counters(SpecCounters(num_drafts=0, num_draft_tokens=0,
                                                num_accepted_tokens=0))
    pinned = [c.model_copy(update={"spec": c.spec.model_copy(update={
        "rejection_sample_method": "synthetic"})}) if c.spec else c for c in plan.cells]
    plan = plan.model_copy(update={"cells": pinned})
    assert analyze(plan, results, request=seed_request()).never_engaged == []


def test_acceptance_length_one_with_drafts_proposed_is_named() -> None:
    plan, results = _with_counters(SpecCounters(num_drafts=40, num_draft_tokens=40,
                                                num_accepted_tokens=0,
                                                per_position_accepted=[0]))
    f = analyze(plan, results, request=seed_request())
    [first, *_] = f.never_engaged
    assert first.case == "length_one" and first.counter.endswith("num_accepted_tokens")
    assert "acceptance length exactly 1.00 on spec + eager, 0 of 40 drafted tokens accepted " \
        "over 40 drafts" in first.sentence


def test_a_drafter_that_accepts_is_not_flagged() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    assert analyze(plan, results, request=seed_request()).never_engaged == []


def test_a_random_weight_drafter_is_not_called_never_engaged() -> None:
    # Its ~0 % acceptance is by construction (the stand-in head), not the engine's doing.
    request = parse_report(seed_path("003").read_bytes())
    plan = build_plan(request, parse_overrides(["gpu=cpu", "spec=eagle:3"]))
    none = SpecCounters(num_drafts=100, num_draft_tokens=300, num_accepted_tokens=0,
                        per_position_accepted=[0, 0, 0])
    results = {c.cell_id: [_run(c.cell_id, [400, 410, 395, 405], spec=none)]
               for c in plan.cells}
    assert analyze(plan, results, request=request).never_engaged == []


def _mlx(requested: int, effective: int, attempted: int, accepted: int) -> dict[str, Any]:
    return {"requested_draft_tokens": requested, "effective_draft_tokens": effective,
            "mtp_enabled": True,
            "mtp_counters": {"attempted": attempted, "accepted": accepted,
                             "rejected": attempted - accepted, "errors": 0,
                             "bypass_counts": {"prefill": 3}}}


def _seed_002(spec_extra: dict[str, Any]) -> tuple[Plan, dict[str, list[RunResult]]]:
    """Seed 002's plan (with the model a reviewer names) and stand-in vllm-mlx rounds."""
    request = parse_report(seed_path("002").read_bytes())
    plan = build_plan(request, parse_overrides(["model=Qwen/Qwen3.6-27B"]))
    results = {c.cell_id: [_run(c.cell_id, [20.0 + 0.1 * i, 20.1 - 0.1 * i, 19.9], "vllm-mlx",
                                **(spec_extra if c.spec else {})) for i in range(2)]
               for c in plan.cells}
    return plan, results


def test_seed_002_headlines_requested_5_against_effective_1() -> None:
    request = parse_report(seed_path("002").read_bytes())
    assert request.symptom == "other"
    plan, results = _seed_002(_mlx(5, 1, 300, 240))
    f = analyze(plan, results, request=request)
    [case] = f.never_engaged
    assert case.case == "effective_below_requested"
    assert case.counter == "vllm-mlx /v1/status mtp.effective_draft_tokens"
    assert f.outcome == "reproduced"
    assert f.headline.startswith(
        "Reproduced: speculation never engaged as asked: fewer draft tokens than requested "
        "on spec, requested 5 and effective 1 per verify step (vllm-mlx /v1/status "
        "mtp.effective_draft_tokens; 6 runs).")
    assert f.decided_by == "vllm-mlx /v1/status mtp.effective_draft_tokens"
    report = render_report(plan, f)
    # The headline on the first screen says it; the section below gives each case.
    assert "requested 5 and effective 1 per verify step" in first_screen(report)
    assert "requested 5 and effective 1" in section(report, "Speculation never engaged")


def test_vllm_mlx_zero_attempts_and_no_acceptance_are_named() -> None:
    plan, results = _seed_002(_mlx(5, 5, 0, 0))
    f = analyze(plan, results, request=None)
    assert [(e.case, e.counter) for e in f.never_engaged] == [
        ("zero_drafts", "vllm-mlx /v1/status mtp.attempted")]
    plan, results = _seed_002(_mlx(5, 5, 120, 0))
    f = analyze(plan, results, request=None)
    assert [e.case for e in f.never_engaged] == ["length_one"]
    assert "0 of 240 verify steps accepted" in f.never_engaged[0].sentence  # two rounds


def test_a_server_that_switched_mtp_off_drafted_nothing() -> None:
    plan, results = _seed_002({"requested_draft_tokens": 5, "mtp_enabled": False})
    [case] = analyze(plan, results, request=None).never_engaged
    assert case.case == "zero_drafts" and case.counter == "vllm-mlx /v1/status mtp.enabled"


def _steps_like_no_spec(tokens_per_step: float, aa_scale: float = 1.0
                        ) -> tuple[Plan, dict[str, list[RunResult]]]:
    """Every cell at one steady throughput over two rounds, with counted target forward
    passes: spec cells at `tokens_per_step`, no-spec cells at 1; the A/A replica's
    throughput scaled by `aa_scale`."""
    plan, _ = load_fixture("reproduced_slowdown")
    results: dict[str, list[RunResult]] = {}
    for cell in plan.cells:
        per_step = tokens_per_step if cell.spec is not None else 1.0
        scale = aa_scale if cell.replica else 1.0
        rounds = []
        for shift in (0.0, 1.0):
            values = [scale * (400.0 + shift + d) for d in (-1.0, 0.5, 0.0, 1.0, -0.5)]
            passes = {"target": round(500 * len(values) / per_step), "draft": 0}
            rounds.append(_run(cell.cell_id, values, forward_passes=passes))
        results[cell.cell_id] = rounds
    return plan, results


def test_a_spec_arm_with_the_no_spec_arms_throughput_and_steps_is_named() -> None:
    plan, results = _steps_like_no_spec(1.0)
    f = analyze(plan, results, request=seed_request())
    spec_vs = {c.name: c.result.verdict for c in f.comparisons if c.name.startswith("spec/")}
    assert set(spec_vs.values()) == {"SAME"}, spec_vs
    assert {(e.label, e.case) for e in f.never_engaged} == {
        ("spec + eager", "matches_no_spec"), ("spec + graph", "matches_no_spec")}
    case = f.never_engaged[0]
    assert "throughput SAME as no_spec + eager at 1.00x and 1.00 tokens per target step " \
        "against 1.00" in case.sentence
    assert "counted target forward passes" in case.counter
    assert f.outcome == "not_reproduced"
    assert f.headline.startswith("Not reproduced: speculation never engaged as asked: runs "
                                 "like no speculation on spec + eager")


def test_same_throughput_with_fewer_steps_is_not_never_engaged() -> None:
    plan, results = _steps_like_no_spec(1.6)
    assert analyze(plan, results, request=seed_request()).never_engaged == []


def test_no_throughput_match_is_claimed_while_the_a_a_pair_differs() -> None:
    plan, results = _steps_like_no_spec(1.0, aa_scale=0.85)
    f = analyze(plan, results, request=seed_request())
    assert next(c for c in f.comparisons if c.kind == "noise").result.verdict == "DIFFERENT"
    assert f.never_engaged == []
    assert _spec_cells(plan)  # the plan does speculate
