"""A headline answers the question the report asked: "could not answer" when its own
comparison cannot run on the runner, and no confident verdict while the A/A pair differs."""

from __future__ import annotations

from tests.conftest import seed_path
from tests.report import load_fixture, seed_request
from triagebot.analyze.findings import analyze
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import NotCompared, Plan
from triagebot.report import render_report
from triagebot.run_result import RunMeasurement, RunResult, SpecCounters

COUNTERS = SpecCounters(num_drafts=100, num_draft_tokens=300, num_accepted_tokens=150,
                        per_position_accepted=[80, 50, 20])


def _run(cell_id: str, values: list[float]) -> RunResult:
    runs = [RunMeasurement(output_tokens=500, seconds=500 / v, tok_s=v) for v in values]
    return RunResult(cell_id=cell_id, engine="vllm", status="ok", runs=runs, spec=COUNTERS)


def _seed_003_on_cpu(*overrides: str) -> Plan:
    request = parse_report(seed_path("003").read_bytes())
    return build_plan(request, parse_overrides(["gpu=cpu", *overrides]))


def test_the_cpu_plan_for_seed_003_records_the_comparison_it_cannot_make() -> None:
    [left] = _seed_003_on_cpu().not_compared
    assert (left.axis, left.levels, left.question) == (
        "variant", ["v1", "v2 strict", "v2 probabilistic"], True)
    assert left.why.startswith("vLLM's CPU build runs only the V1 model runner; strict and "
                               "probabilistic rejection sampling differ only when sampling, "
                               "and vLLM's CPU build verifies drafts wrongly when sampling "
                               "at temperature > 0")


def test_an_axis_left_out_beside_the_question_is_not_the_question() -> None:
    # Asked about speculation itself, the plan still answers; V1/V2 is only context.
    plan = _seed_003_on_cpu("spec=none,eagle3:3", "modes=eager")
    assert [(n.axis, n.question) for n in plan.not_compared] == [("variant", False)]
    results = {c.cell_id: [_run(c.cell_id, [400, 410, 395, 405])] for c in plan.cells}
    f = analyze(plan, results, request=parse_report(seed_path("003").read_bytes()))
    assert f.outcome != "cannot_answer"


def test_seed_003_on_the_cpu_runner_could_not_answer_and_says_why_first() -> None:
    plan = _seed_003_on_cpu()
    request = parse_report(seed_path("003").read_bytes())
    results = {c.cell_id: [_run(c.cell_id, [400, 410, 395, 405]),
                           _run(c.cell_id, [402, 399, 404, 401])] for c in plan.cells}
    f = analyze(plan, results, request=request)
    assert f.outcome == "cannot_answer"
    assert f.headline.startswith(
        "Could not answer: the report's own comparison (v1, v2 strict, v2 probabilistic) "
        "cannot run on the cpu runner: vLLM's CPU build runs only the V1 model runner; ")
    assert "verifies drafts wrongly when sampling at temperature > 0" in f.headline
    # What was measured follows, named as not the report's question, with no verdict word
    # of its own.
    measured = f.headline.split("Measured instead, a comparison the report did not ask "
                                "about: ", 1)[1]
    assert measured.startswith("under torch.compile ") and "the speed of eager, " in measured
    assert "Reproduced" not in f.headline and "Not reproduced" not in f.headline
    assert f.outcome_reason.startswith("the report's own comparison (v1, v2 strict, ")
    assert render_report(plan, f).startswith("**Could not answer**: the report's own")


def _slowdown_with_aa(scale: float, max_runs: int = 20) -> tuple[Plan, dict[str, list[RunResult]]]:
    """The recorded reproduced slowdown, its A/A replica's throughput times `scale`."""
    plan, results = load_fixture("reproduced_slowdown")
    plan = plan.model_copy(update={"budget": plan.budget.model_copy(
        update={"max_runs": max_runs})})
    replica = next(c.cell_id for c in plan.cells if c.replica)
    results[replica] = [r.model_copy(update={"runs": [
        m.model_copy(update={"tok_s": m.tok_s * scale, "seconds": m.seconds / scale})
        for m in r.runs]}) for r in results[replica]]
    return plan, results


def test_a_different_a_a_pair_blocks_a_confident_headline() -> None:
    plan, results = _slowdown_with_aa(1.0)
    assert analyze(plan, results, request=seed_request()).outcome == "reproduced"
    plan, results = _slowdown_with_aa(0.8)
    f = analyze(plan, results, request=seed_request())
    pair = next(c for c in f.comparisons if c.kind == "noise")
    assert pair.result.verdict == "DIFFERENT"
    assert f.outcome == "inconclusive"
    assert f.headline.startswith("Inconclusive: the runner was unsteady: its A/A pair, two "
                                 "runs of one configuration, came out DIFFERENT at 0.79")
    assert "no throughput verdict of this plan is trusted" in f.outcome_reason
    # What it measured is still shown, after the warning.
    assert "runs at 0.57x" in f.headline
    # The run is asked to add rounds to the pair until it agrees.
    assert f.needs_more_runs.get(pair.name) == 2


def test_a_pair_still_different_at_the_budget_ends_inconclusive() -> None:
    plan, results = _slowdown_with_aa(0.8, max_runs=5)
    f = analyze(plan, results, request=seed_request())
    assert f.outcome == "inconclusive" and "the runner was unsteady" in f.headline
    assert not any(c.kind == "noise" and c.name in f.needs_more_runs for c in f.comparisons)


def test_a_plan_that_left_out_an_axis_beside_the_question_answers_as_before() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    plan = plan.model_copy(update={"not_compared": [NotCompared(
        axis="cudagraph_mode", levels=["FULL", "PIECEWISE"], why="a CPU has no CUDA graphs")]})
    assert analyze(plan, results, request=seed_request()).outcome == "reproduced"
