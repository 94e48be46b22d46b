"""analyze(): merging rounds, verdicts, spec diagnostics, outcome and headline."""

from __future__ import annotations

import pytest

from tests.report import SCENARIOS, load_fixture, request_for, seed_request
from triagebot.analyze.findings import analyze, merge_counters, summarize
from triagebot.analyze.findings_models import Findings
from triagebot.overrides import parse_overrides
from triagebot.plan import build_plan
from triagebot.plan_model import Plan
from triagebot.request_model import ReportedMetrics
from triagebot.run_result import RunMeasurement, RunResult, SpecCounters

EXPECTED = {
    "reproduced_slowdown": "reproduced",
    "not_reproduced": "not_reproduced",
    "acceptance_collapse": "reproduced",
    "crash_in_one_cell": "error",
    "config_rejected": "error",
    "noisy_unknown": "inconclusive",
    "cpu_demo": "reproduced",
}


def run(cell_id: str, values: list[float], status: str = "ok", **kw: object) -> RunResult:
    runs = [RunMeasurement(output_tokens=500, seconds=500 / v, tok_s=v) for v in values]
    return RunResult(cell_id=cell_id, engine="vllm", status=status, runs=runs,  # type: ignore[arg-type]
                     **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", SCENARIOS)
def test_outcome_of_each_recorded_scenario(name: str) -> None:
    plan, results = load_fixture(name)
    f = analyze(plan, results, request=request_for(name))
    assert f.outcome == EXPECTED[name], f.outcome_reason
    assert f.headline.startswith({"reproduced": "Reproduced:", "not_reproduced":
                                  "Not reproduced:", "inconclusive": "Inconclusive:",
                                  "error": "Error:"}[f.outcome])
    assert Findings.model_validate_json(f.model_dump_json()) == f


def test_a_cpu_headline_says_torch_compile_where_a_gpu_one_says_cuda_graphs() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    cpu = plan.model_copy(update={"gpu_kind": "cpu"})
    f = analyze(cpu, results, request=seed_request())
    assert "with MTP k=1 under torch.compile zai-org/GLM-OCR runs at 0.57x [" in f.headline
    assert "CUDA graphs" not in f.headline
    assert "under eager it is 1.54x" in f.headline


def test_reproduced_headline_quotes_ours_and_the_reporters_ratio() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    f = analyze(plan, results, request=seed_request())
    assert f.headline.startswith("Reproduced: with MTP k=1 under CUDA graphs zai-org/GLM-OCR "
                                 "runs at 0.57x [")
    assert "(5 v 5 runs) the speed of no speculation (reported 0.56x)" in f.headline
    assert "under eager it is 1.54x (5 v 5 runs, reported 1.53x)" in f.headline
    assert f.noise.source == "aa_pair"
    graph = next(c for c in f.comparisons if c.name == "spec/no_spec @ graph")
    assert graph.main and graph.result.verdict == "DIFFERENT"
    assert graph.step_cost is not None and not graph.step_cost.spec_pays_off
    assert "it costs 3.0x" in graph.step_cost.sentence
    assert [i.result.verdict for i in f.interactions] == ["DIFFERENT"]
    assert {h.source for h in f.hints} >= {"spec_decode_cudagraph_downgrade",
                                          "full_graphs_not_captured"}
    assert f.against_report is not None and f.against_report.unmatched == []
    assert all(a.agrees for a in f.against_report.acceptance)
    assert f.needs_more_runs == {}


def test_collapse_and_divergence_are_flagged() -> None:
    plan, results = load_fixture("acceptance_collapse")
    f = analyze(plan, results, request=seed_request())
    assert {(c.arm, c.kind) for c in f.collapse} >= {("spec + graph", "length_near_one"),
                                                     ("spec + graph", "rate_drop")}
    graph = next(d for d in f.divergence if d.context == "graph")
    assert graph.result.diverged
    sources = [h.source for h in f.hints]
    assert sources[:3] == ["collapse", "collapse", "divergence"]


def test_failed_cells_say_why_and_are_not_escalated() -> None:
    plan, results = load_fixture("crash_in_one_cell")
    f = analyze(plan, results, request=seed_request())
    crashed = next(c for c in f.cells if c.label == "spec + graph")
    assert crashed.status == "crashed" and "illegal memory access" in (crashed.error or "")
    assert f.needs_more_runs == {}
    assert f.noise.source == "default"
    assert any("A/A pair: " in n for n in f.notes)


def test_unknown_comparisons_ask_for_the_next_look() -> None:
    plan, results = load_fixture("noisy_unknown")
    f = analyze(plan, results, request=seed_request())
    # 10 runs per arm passed the look at 8; the next look is at 12.
    assert f.needs_more_runs == {"spec/no_spec @ eager": 2, "spec/no_spec @ graph": 2}
    cell = f.cells[0]
    assert cell.rounds == 2 and cell.throughput.n == 10


def test_rounds_are_merged_and_failed_rounds_left_out() -> None:
    plan, _ = load_fixture("reproduced_slowdown")
    cell = plan.cells[2]
    c1 = SpecCounters(num_drafts=10, num_draft_tokens=10, num_accepted_tokens=7,
                      per_position_accepted=[7])
    c2 = SpecCounters(num_drafts=20, num_draft_tokens=40, num_accepted_tokens=20,
                      per_position_accepted=[12, 8])
    merged = merge_counters([c1, c2])
    assert merged == SpecCounters(num_drafts=30, num_draft_tokens=50, num_accepted_tokens=27,
                                  per_position_accepted=[19, 8])
    rounds = [run(cell.cell_id, [90.0, 91.0], spec=c1, outputs_digest="d"),
              run(cell.cell_id, [], status="timeout", error="wall clock"),
              run(cell.cell_id, [92.0, 93.0], spec=c1, outputs_digest="d")]
    found = summarize(cell, rounds)
    assert found.status == "ok" and found.throughput.n == 4 and found.rounds == 3
    assert found.acceptance is not None and found.acceptance.num_drafts == 20
    assert "1 of 3 rounds" in found.notes[0]
    assert summarize(cell, []).status == "missing"
    assert summarize(cell, [run(cell.cell_id, [])]).status == "no_runs"


def test_missing_cells_make_an_error_and_no_request_is_inconclusive() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    f = analyze(plan, results)
    assert f.outcome == "inconclusive" and f.against_report is None
    partial = {k: v for k, v in results.items() if k != plan.cells[3].cell_id}
    g = analyze(plan, partial, request=seed_request())
    assert g.outcome == "error" and "spec + graph (missing)" in g.outcome_reason


def test_symptom_decides_when_no_reporter_ratio_maps() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    req = seed_request().model_copy(update={"reported_metrics": ReportedMetrics()})
    f = analyze(plan, results, request=req)
    assert f.outcome == "reproduced" and "DIFFERENT below 1" in f.outcome_reason
    plan2, results2 = load_fixture("not_reproduced")
    g = analyze(plan2, results2, request=req)
    assert g.outcome == "not_reproduced"


def test_without_an_aa_pair_the_default_band_is_used_and_noted() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    plan = plan.model_copy(update={"comparisons": [c for c in plan.comparisons
                                                   if c.kind != "noise"]})
    f = analyze(plan, results)
    assert f.noise.source == "default"
    assert any("no A/A pair" in n for n in f.notes)


def _k_sweep_plan() -> Plan:
    return build_plan(seed_request(), parse_overrides(["spec=mtp:1,mtp:2,mtp:3,none",
                                                       "modes=graph"]))


def test_k_sweep_is_fitted_per_context() -> None:
    plan = _k_sweep_plan()
    base_tok_s = 400.0
    fixed, per_token = 0.4 / base_tok_s, 0.3 / base_tok_s
    results: dict[str, list[RunResult]] = {}
    for cell in plan.cells:
        if cell.spec is None:
            results[cell.cell_id] = [run(cell.cell_id, [399.0, 400.0, 401.0, 400.5, 399.5])]
            continue
        k = cell.spec.num_speculative_tokens
        length = 1 + 0.6 * k
        step = 1 / base_tok_s + fixed + per_token * k
        tok_s = length / step
        drafts = 1000
        counters = SpecCounters(num_drafts=drafts, num_draft_tokens=drafts * k,
                                num_accepted_tokens=round(0.6 * k * drafts))
        results[cell.cell_id] = [run(cell.cell_id, [tok_s * (1 + d) for d in
                                                    (-0.002, 0, 0.001, 0.002, -0.001)],
                                     spec=counters)]
    f = analyze(plan, results)
    assert len(f.step_fits) == 1
    fit = f.step_fits[0].fit
    assert fit.ok and fit.ks == [1, 2, 3]
    assert fit.fixed_seconds == pytest.approx(fixed, rel=0.05)
    assert fit.per_token_seconds == pytest.approx(per_token, rel=0.05)


def test_divergence_is_not_checked_when_sampling() -> None:
    plan, results = load_fixture("acceptance_collapse")
    cells = [c.model_copy(update={"sampling": c.sampling.model_copy(
        update={"temperature": 0.7})}) for c in plan.cells]
    f = analyze(plan.model_copy(update={"cells": cells}), results)
    assert all(not d.result.checked for d in f.divergence)


def test_script_notes_and_the_version_that_ran_reach_the_findings() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    plan = plan.model_copy(update={"engine_version": None})
    first = plan.cells[0]
    note = "acceptance not counted: this release verifies differently"
    results = {cell_id: [r.model_copy(update={"engine_version": "5.24.0"}) for r in rounds]
               for cell_id, rounds in results.items()}
    results[first.cell_id] = [r.model_copy(update={"notes": [note]})
                              for r in results[first.cell_id]]
    f = analyze(plan, results, request=seed_request())
    assert f.engine_version == "5.24.0"
    assert f"{note} ({first.label})" in f.notes


def _scaled(r: RunResult, factor: float, **extra: object) -> RunResult:
    runs = [m.model_copy(update={"tok_s": m.tok_s * factor, "seconds": m.seconds / factor})
            for m in r.runs]
    return RunResult.model_validate({**r.model_dump(), "runs": [m.model_dump() for m in runs],
                                     **extra})


def test_counted_forward_passes_explain_a_ratio_between_spec_cells() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    graph, eager = plan.cells[3].cell_id, plan.cells[2].cell_id
    tokens = sum(m.output_tokens for m in results[graph][0].runs)
    same = {**results,
            graph: [_scaled(results[graph][0], 1.0, forward_passes={"target": tokens // 2})],
            eager: [_scaled(results[eager][0], 1.0, forward_passes={"target": tokens // 2})]}
    f = analyze(plan, same, request=seed_request())
    comp = next(c for c in f.comparisons if c.name == "graph/eager @ spec")
    assert comp.explanation is not None
    assert comp.explanation.source == "counted target forward passes"
    assert comp.explanation.tokens_per_step_a == pytest.approx(2.0)
    assert comp.explanation.driver == "step cost"
    assert "acceptance unchanged" in comp.explanation.sentence
    cell = next(c for c in f.cells if c.cell_id == graph)
    assert cell.tokens_per_step == pytest.approx(2.0)
    # Eager now needs a target step per token: half the graph speed-up is acceptance.
    worse = {**same, eager: [_scaled(results[eager][0], 1.0, forward_passes={"target": tokens})]}
    g = analyze(plan, worse, request=seed_request())
    comp = next(c for c in g.comparisons if c.name == "graph/eager @ spec")
    assert comp.explanation is not None and comp.explanation.driver == "both"
    assert comp.explanation.tokens_per_step_ratio == pytest.approx(2.0)
    # Spec vs no spec keeps its break-even step cost instead.
    main = next(c for c in g.comparisons if c.name == "spec/no_spec @ graph")
    assert main.explanation is None and main.step_cost is not None
    assert g.decided_by.startswith("throughput")


def test_a_differing_aa_pair_warns_and_the_margin_is_reported() -> None:
    plan, results = load_fixture("reproduced_slowdown")
    replica = plan.cells[4].cell_id
    off = {**results, replica: [_scaled(results[replica][0], 0.85)]}
    f = analyze(plan, off, request=seed_request(), margin=0.05)
    aa = next(c for c in f.comparisons if c.kind == "noise")
    assert aa.result.verdict == "DIFFERENT"
    hint = next(h for h in f.hints if h.source == "aa-pair")
    assert hint.severity == "warning" and "±5%" in hint.text
    assert f.margin == 0.05
    assert all(c.result.margin == 0.05 for c in f.comparisons)


def test_a_random_head_on_the_cpu_runner_does_not_reproduce_an_acceptance_drop() -> None:
    from tests.conftest import seed_path
    from triagebot.parse import parse_report

    request = parse_report(seed_path("003").read_bytes())
    assert request.symptom == "acceptance_drop"
    # The EAGLE (-1) stand-in head keeps random weights (the EAGLE-3 one is trained).
    plan = build_plan(request, parse_overrides(["gpu=cpu", "spec=eagle:3"]))
    none = SpecCounters(num_drafts=100, num_draft_tokens=300, num_accepted_tokens=0,
                        per_position_accepted=[0, 0, 0])
    results = {c.cell_id: [run(c.cell_id, [400, 410, 395, 405], spec=none)]
               for c in plan.cells}
    # The report's own comparison (model runner V1 against V2) cannot run here.
    assert analyze(plan, results, request=request).outcome == "cannot_answer"
    plan = plan.model_copy(update={"not_compared": []})
    f = analyze(plan, results, request=request)
    assert f.outcome == "inconclusive"
    assert "random weights" in f.outcome_reason
    assert f.collapse == [] and all(h.source != "collapse" for h in f.hints)
    assert f.never_engaged == []


def test_where_two_comparisons_decide_the_reason_names_the_one_the_headline_leads_with(
        ) -> None:
    # The demo's case, with speculation slower under eager too: both main comparisons
    # are DIFFERENT below 1, and the report's claim is about graph.
    plan, results = load_fixture("cpu_demo")
    spec_eager = next(c.cell_id for c in plan.cells
                      if c.spec is not None and c.enforce_eager and "A/A" not in c.label)
    slowed = {cid: [r.model_copy(update={"runs": [
        m.model_copy(update={"tok_s": m.tok_s * 0.5}) for m in r.runs]})
        for r in rounds] if cid == spec_eager else rounds for cid, rounds in results.items()}
    f = analyze(plan, slowed, request=request_for("cpu_demo"))
    slower = [c.name for c in f.comparisons if c.main and c.result.verdict == "DIFFERENT"
              and (c.result.ratio or 1) < 1]
    assert len(slower) == 2 and f.key_comparison == "spec/no_spec @ graph"
    assert f.outcome_reason.startswith("spec/no_spec @ graph is DIFFERENT below 1")
