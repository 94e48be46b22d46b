"""Which explanation of a slower speculation the pinned arms support (analyze/synthetic.py),
on recorded runs with stand-in results for the pinned arms."""

from __future__ import annotations

from collections.abc import Mapping

from tests.report import load_fixture, seed_request
from triagebot.analyze.findings import analyze
from triagebot.analyze.synthetic import PinnedCall, called_for
from triagebot.plan.synthetic import add_arms
from triagebot.plan_model import Plan
from triagebot.run_result import RunMeasurement, RunResult

SLOW = "reproduced_slowdown"


def _fixture(name: str = SLOW, version: str = "0.25.1"
             ) -> tuple[Plan, dict[str, list[RunResult]]]:
    plan, results = load_fixture(name)
    return plan.model_copy(update={"engine_version": version}), results


def _call(plan: Plan, results: Mapping[str, list[RunResult]]) -> PinnedCall | str | None:
    findings = analyze(plan, results, request=seed_request("000"))
    return called_for(plan, findings.comparisons, {c.cell_id: c for c in findings.cells},
                      seed_request("000"))


def _like(result: RunResult, cell_id: str, factor: float, round_: int) -> RunResult:
    """Two of `result`'s runs at `factor` times its speed, as `cell_id`'s in `round_` (the
    cpu runner measures two runs a round)."""
    picked = result.runs[round_ % 4:round_ % 4 + 2]
    runs = [RunMeasurement(output_tokens=r.output_tokens, seconds=r.seconds / factor,
                           tok_s=r.tok_s * factor) for r in picked]
    return result.model_copy(update={"cell_id": cell_id, "runs": runs, "round": round_})


def _grown(speed: Mapping[str, float]) -> tuple[Plan, dict[str, list[RunResult]]]:
    """The slowdown fixture with pinned arms that ran at `speed` (pin name -> multiple of
    the no-spec cell of the same mode) in rounds after the plan's, beside that cell."""
    plan, results = _fixture()
    call = _call(plan, results)
    assert isinstance(call, PinnedCall)
    grown = add_arms(plan, call.requests, call.pins)
    out = {cid: [r.model_copy(update={"round": 0}) for r in rs] for cid, rs in results.items()}
    for comp in grown.comparisons:
        if comp.name.startswith("pinned "):
            base = results[comp.denominator[0]][0]
            pin = comp.name.split()[1].split("/")[0]
            for round_ in (1, 2, 3, 4):
                out.setdefault(comp.numerator[0], []).append(
                    _like(base, comp.numerator[0], speed[pin], round_))
                if len(out[comp.denominator[0]]) <= round_:
                    out[comp.denominator[0]].append(_like(base, base.cell_id, 1.0, round_))
    return grown, out


def test_a_slower_speculation_calls_for_pinned_arms_in_every_compared_mode() -> None:
    call = _call(*_fixture())
    assert isinstance(call, PinnedCall)
    assert "spec/no_spec @ graph" in call.reason
    assert sorted(r.mode for r in call.requests) == ["eager", "graph"]
    assert [p.name for p in call.pins] == ["full", "reported"]
    assert call.pins[1].length == 1.69 or abs(call.pins[1].length - 1.69) < 1e-6


def test_a_faster_speculation_that_accepts_as_reported_calls_for_none() -> None:
    assert _call(*_fixture("not_reproduced")) is None


def test_a_release_without_the_mode_says_why_instead() -> None:
    call = _call(*_fixture(version="0.17.1"))
    assert isinstance(call, str) and "no synthetic acceptance mode" in call


def test_slower_even_at_full_acceptance_puts_the_cost_in_the_step() -> None:
    plan, results = _grown({"full": 0.8, "reported": 0.6})
    graph = next(m for m in analyze(plan, results).pinned if m.mode == "graph")
    assert graph.cause == "step"
    assert graph.full_verdict == "DIFFERENT" and graph.full_ratio is not None
    assert graph.break_even is not None and abs(graph.break_even - 2 / 0.8) < 0.05
    assert "no drafter can make k=1 pay on this runner" in graph.sentence
    assert graph.break_even_ci is not None
    assert graph.break_even_ci[0] < graph.break_even < graph.break_even_ci[1]


def test_faster_at_the_reporters_acceptance_blames_the_drafter() -> None:
    plan, results = _grown({"full": 1.6, "reported": 1.2})
    graph = next(m for m in analyze(plan, results).pinned if m.mode == "graph")
    assert graph.cause == "drafter"
    assert graph.sentence.startswith("at the reporter's acceptance length 1.69 speculation "
                                     "would run 1.20x")
    assert "the drafter's acceptance (1.69 here) explains the slowdown" in graph.sentence


def test_pinned_arms_are_no_arm_of_the_report() -> None:
    """Their outputs follow the drafter and their acceptance is ours: no divergence flag,
    no acceptance check, no label match, no main comparison."""
    plan, results = _grown({"full": 0.8, "reported": 0.6})
    findings = analyze(plan, results, request=seed_request("000"))
    pinned = {c.cell_id for c in plan.cells if c.spec and c.spec.rejection_sample_method}
    assert not any(set(d.cells) & pinned for d in findings.divergence)
    assert findings.against_report is not None
    assert not {a.cell_id for a in findings.against_report.acceptance} & pinned
    assert not any(c.main for c in findings.comparisons if c.name.startswith("pinned "))
    assert findings.outcome == "reproduced"
