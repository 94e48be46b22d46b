"""A watch step's plan (both releases' cells in one plan), what its analysis reads, and
configurations a newer release no longer takes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from triagebot.analyze.findings import analyze
from triagebot.errors import PlanRejected
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Plan
from triagebot.request_model import ReproRequest
from triagebot.run_result import RunMeasurement, RunResult
from triagebot.watch.states import judge
from triagebot.watch.steps import (
    crash_line,
    deciding_comparison,
    read_step,
    refused,
    step_plan,
)

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "glm-ocr-mtp-graph.md"
GRAPH = "spec/no_spec @ graph"


def request() -> ReproRequest:
    return parse_report(SAMPLE.read_bytes())


def plan_at(version: str, *words: str) -> Plan:
    opts = parse_overrides(["engine=vllm", "gpu=cpu", f"version={version}", *words])
    return build_plan(request(), opts, exact_version=True)


def rounds(cell_id: str, tok_s: float, seed: int, status: str = "ok",
           error: str | None = None) -> list[RunResult]:
    """Six rounds of four runs about `tok_s` (CV ~1 %)."""
    rng = random.Random(seed)
    out = []
    for _ in range(6):
        runs = [] if status != "ok" else [
            RunMeasurement(output_tokens=384, seconds=384 / v, tok_s=v)
            for v in (tok_s * rng.gauss(1, 0.01) for _ in range(4))]
        out.append(RunResult(cell_id=cell_id, engine="vllm", status=status,  # type: ignore[arg-type]
                             runs=runs, error=error))
    return out


def speeds(plan: Plan, by_label: dict[str, float]) -> dict[str, list[RunResult]]:
    """Results for every cell: the first label key its label starts with sets its tok/s."""
    out = {}
    for i, cell in enumerate(plan.cells):
        speed = next(v for k, v in by_label.items() if cell.label.startswith(k))
        out[cell.cell_id] = rounds(cell.cell_id, speed, seed=i)
    return out


def test_a_step_holds_the_deciding_cells_of_both_releases_and_the_new_aa_pair() -> None:
    new, old = plan_at("0.32.0"), plan_at("0.25.1")
    step = step_plan(new, old, GRAPH)
    assert [c.label for c in step.cells] == [
        "spec + graph 0.32.0", "no_spec + graph 0.32.0", "spec + graph 0.25.1",
        "no_spec + graph 0.25.1", "spec + graph (A/A) 0.32.0"]
    assert [c.version for c in step.cells] == ["0.32.0", "0.32.0", "0.25.1", "0.25.1",
                                                "0.32.0"]
    assert [(c.name, c.kind) for c in step.comparisons] == [
        (f"{GRAPH} [0.32.0]", "ratio"), (f"{GRAPH} [0.25.1]", "ratio"),
        ("0.32.0 / 0.25.1", "interaction"), ("A/A spec + graph", "noise")]
    assert step.engine_version == "0.32.0"
    assert step.plan_hash not in (new.plan_hash, old.plan_hash)
    # the first release measured runs alone
    first = step_plan(new, None, GRAPH)
    assert {c.version for c in first.cells} == {"0.32.0"}
    assert [c.kind for c in first.comparisons] == ["ratio", "noise"]


def test_a_comparison_the_plan_lacks_is_refused_with_the_ones_it_has() -> None:
    with pytest.raises(PlanRejected, match="accepted: spec/no_spec @ eager"):
        step_plan(plan_at("0.32.0"), None, "spec/no_spec @ vit_graph")


def test_a_step_read_through_the_real_analysis_is_worse_when_the_new_ratio_falls() -> None:
    step = step_plan(plan_at("0.32.0"), plan_at("0.25.1"), GRAPH)
    results = speeds(step, {"spec + graph 0.32.0": 40.0, "no_spec + graph 0.32.0": 100.0,
                            "spec + graph 0.25.1": 60.0, "no_spec + graph 0.25.1": 100.0,
                            "spec + graph (A/A)": 40.0})
    findings = analyze(step, results, request=request())
    reading = read_step(step, findings, GRAPH, {}, "0.25.1")
    assert reading.ratio is not None and reading.ratio.verdict == "DIFFERENT"
    assert reading.ratio.value == pytest.approx(0.40, abs=0.02)
    assert reading.change is not None and reading.change.value == pytest.approx(0.67, abs=0.03)
    state, reason = judge(reading, [], "below")
    assert state == "worse", reason
    # the same speeds at both releases: still reproduced
    same = speeds(step, {"spec + graph": 60.0, "no_spec": 100.0})
    again = read_step(step, analyze(step, same, request=request()), GRAPH, {}, "0.25.1")
    assert judge(again, [], "below")[0] == "reproduced"
    # spec as fast as no spec at the new release: fixed
    gone = speeds(step, {"spec + graph 0.32.0": 100.0, "spec + graph (A/A)": 100.0,
                         "spec + graph 0.25.1": 60.0, "no_spec": 100.0})
    fixed = read_step(step, analyze(step, gone, request=request()), GRAPH, {}, "0.25.1")
    assert judge(fixed, [], "below")[0] == "fixed"


def test_a_release_that_crashes_is_broken_with_its_line() -> None:
    step = step_plan(plan_at("0.20.0"), None, GRAPH)
    log = ("INFO starting\nTraceback (most recent call last):\n  File \"x.py\", line 3\n"
           "TypeError: rejection_sample() takes 5 positional arguments but 6 were given\n"
           "INFO shutting down\n")
    results = {c.cell_id: rounds(c.cell_id, 50.0, 0) for c in step.cells}
    spec = next(c for c in step.cells if c.label == "spec + graph 0.20.0")
    results[spec.cell_id] = rounds(spec.cell_id, 0, 0, status="crashed", error="exit 1")
    findings = analyze(step, results, request=request())
    reading = read_step(step, findings, GRAPH, {spec.cell_id: log}, None)
    state, reason = judge(reading, [], "below")
    assert state == "broken"
    assert reason == ("0.20.0 fails: spec + graph: TypeError: rejection_sample() takes 5 "
                      "positional arguments but 6 were given")


def test_the_old_release_failing_this_time_is_inconclusive_not_broken() -> None:
    step = step_plan(plan_at("0.32.0"), plan_at("0.25.1"), GRAPH)
    results = speeds(step, {"spec": 60.0, "no_spec": 100.0})
    old = next(c for c in step.cells if c.label == "no_spec + graph 0.25.1")
    results[old.cell_id] = rounds(old.cell_id, 0, 0, status="oom")
    reading = read_step(step, analyze(step, results), GRAPH, {}, "0.25.1")
    state, reason = judge(reading, [], "below")
    assert (state, "0.25.1's no_spec + graph 0.25.1 failed in this job (oom)" in reason) == (
        "inconclusive", True)


def test_the_deciding_comparison_is_the_one_that_shows_the_symptom() -> None:
    plan = plan_at("0.32.0")
    results = speeds(plan, {"spec + eager": 100.0, "no_spec + eager": 100.0,
                            "spec + graph": 60.0, "no_spec + graph": 100.0})
    findings = analyze(plan, results, request=request())
    assert deciding_comparison(findings, "spec_slower_than_baseline") == GRAPH


def test_a_key_the_new_release_removed_makes_the_config_no_longer_valid() -> None:
    # speculative_config's disable_by_batch_size went away in vLLM 0.17.0 (engine table)
    words = ["engine=vllm", "gpu=h100", "spec=mtp:1,none"]
    req = request().model_copy(update={"speculative_config": {
        "method": "mtp", "num_speculative_tokens": 1, "disable_by_batch_size": 4}})
    build_plan(req, parse_overrides([*words, "version=0.16.0"]), exact_version=True)
    with pytest.raises(PlanRejected) as caught:
        build_plan(req, parse_overrides([*words, "version=0.17.0"]), exact_version=True)
    reading = refused(caught.value, "0.17.0", "0.16.0")
    state, reason = judge(reading, [], "below")
    assert state == "config_invalid"
    assert reason == ("0.17.0: config no longer valid: vLLM 0.17.0 does not accept "
                      "speculative_config key 'disable_by_batch_size' (0.16.0 took it)")


def test_another_refusal_is_the_release_refusing_the_config() -> None:
    with pytest.raises(PlanRejected) as caught:
        plan_at("0.32.0", "tp=2")
    state, reason = judge(refused(caught.value, "0.32.0", None), [], "below")
    assert state == "broken"
    assert reason.startswith("0.32.0 fails: refuses the configuration: the cpu runner runs")


def test_crash_line_is_the_last_exception_line_else_the_last_line() -> None:
    assert crash_line("a\nValueError: x\nvllm.engine.EngineDeadError: dead\nexit\n") == (
        "vllm.engine.EngineDeadError: dead")
    assert crash_line("no exception here\nlast words\n") == "last words"
    assert crash_line("") == ""
    vllm = ("(Worker pid=23844) ERROR 11-28 19:38:04 [multiproc_executor.py:962] TypeError: "
            "kernel() got an unexpected keyword argument 'SYNTHETIC_MODE'\n"
            "    raise RuntimeError(\nRuntimeError: Worker failed with error 'kernel() got "
            "...', please check the stack trace above for the root cause\n"
            "(Worker pid=1) RuntimeError: Found no NVIDIA driver on your system.\n"
            "RuntimeError: Worker failed with error 'kernel() ...', please check the stack "
            "trace above for the root cause\n")
    assert crash_line(vllm) == ("TypeError: kernel() got an unexpected keyword argument "
                                "'SYNTHETIC_MODE'")


def test_crash_line_says_where_the_error_was_raised() -> None:
    prefix = "(EngineCore_DP0 pid=7) ERROR 11-28 19:38:04 [core.py:710] "
    log = "".join(prefix + line + "\n" for line in (
        "Traceback (most recent call last):",
        '  File "/env/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 88, in step',
        "    output = self.model_executor.execute_model(scheduler_output)",
        '  File "/env/lib/python3.12/site-packages/vllm/v1/sample/rejection_sampler.py", '
        "line 412, in rejection_sample",
        "    rejection_greedy_sample_kernel[(batch_size,)](",
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "TypeError: kernel() got an unexpected keyword argument 'SYNTHETIC_MODE'"))
    assert crash_line(log + "RuntimeError: Worker failed with error 'x', please check the "
                            "stack trace above for the root cause\n") == (
        "TypeError: kernel() got an unexpected keyword argument 'SYNTHETIC_MODE' (at "
        "vllm/v1/sample/rejection_sampler.py:412 in rejection_sample)")


def test_the_reporters_own_slower_figure_picks_the_comparison() -> None:
    # The sample reports MTP at 1.53x under eager and 0.56x under graphs: when both are
    # slower here, the watch follows the graph comparison the report is about.
    plan = plan_at("0.32.0")
    results = speeds(plan, {"spec + eager": 70.0, "no_spec + eager": 100.0,
                            "spec + graph": 60.0, "no_spec + graph": 100.0})
    findings = analyze(plan, results, request=request())
    assert {r.comparison: round(r.reported, 2) for r in findings.against_report.ratios
            if r.comparison.startswith("spec/")} == {"spec/no_spec @ eager": 1.53,
                                                      "spec/no_spec @ graph": 0.56}
    assert deciding_comparison(findings, "spec_slower_than_baseline") == GRAPH
