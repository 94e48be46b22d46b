"""step_split: each spec cell's profiled step beside the no-spec step of its mode.

The profiles here are stand-ins written by hand in the shape the offline script writes
(`step_profile` in its RunResult); the real engine writes one in
tests/engines/test_vllm_cpu_real.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.report import seed_request
from tests.report.layout import section as collapsed
from triagebot.analyze.findings import analyze
from triagebot.analyze.step_split import step_splits
from triagebot.model import Cell, Plan, RunEnv, RunMeasurement, RunResult
from triagebot.overrides import parse_overrides
from triagebot.plan import build_plan
from triagebot.report import render_report
from triagebot.report.step_chart import bar
from triagebot.step_profile import StepProfile

CPU = RunEnv(gpu="cpu: x86_64", gpu_count=0, cuda="none", torch="2.13.0+cpu")


def cpu_plan() -> Plan:
    """Seed 000 on the cpu runner: MTP against no spec, under eager and under graph."""
    return build_plan(seed_request(), parse_overrides(["engine=vllm", "gpu=cpu"]))


def profile(step_ms: float, target_ms: float, drafter_ms: float = 0.0,
            rejection_ms: float = 0.0, steps: int = 96, **over: Any) -> StepProfile:
    fields: dict[str, Any] = {
        "profiler": "torch.profiler (CPU)", "device": "cpu", "steps": steps,
        "step_s": step_ms / 1e3, "target_s": target_ms / 1e3, "drafter_s": drafter_ms / 1e3,
        "rejection_s": rejection_ms / 1e3,
        "host_s": (step_ms - target_ms - drafter_ms - rejection_ms) / 1e3}
    fields.update(over)
    return StepProfile(**fields)


def result(cell: Cell, prof: StepProfile | None, env: RunEnv = CPU) -> RunResult:
    runs = [RunMeasurement(output_tokens=384, seconds=1.0 + i / 50, tok_s=384 / (1.0 + i / 50))
            for i in range(3)]
    return RunResult(cell_id=cell.cell_id, engine="vllm", status="ok", env=env, runs=runs,
                     step_profile=prof)


def standard_profile(cell: Cell) -> StepProfile:
    """MTP steps cost twice the plain step under eager, 1.5x under graph."""
    eager = cell.varies.get("graph") == "eager"
    if cell.spec is None:
        return profile(4.0 if eager else 3.0, 3.0 if eager else 2.2)
    return profile(8.0 if eager else 4.5, 4.0 if eager else 2.6, drafter_ms=2.5 if eager else 1.0,
                   rejection_ms=0.5, steps=60)


def test_each_mode_sets_its_spec_step_beside_its_no_spec_step() -> None:
    plan = cpu_plan()
    results = {c.cell_id: [result(c, standard_profile(c))] for c in plan.cells}
    found = {f.context: f for f in step_splits(plan, results)}
    assert set(found) == {"eager", "graph"}
    eager = found["eager"]
    assert [c.cell_label for c in eager.cells] == ["spec + eager"]
    assert eager.baseline is not None and eager.baseline.cell_label == "no_spec + eager"
    spec = eager.cells[0]
    assert spec.largest == "target" and spec.steps == 60
    parts = {p.name: p.seconds for p in spec.parts}
    assert parts == pytest.approx({"drafter": 2.5e-3, "target": 4e-3, "rejection": 0.5e-3,
                                   "host": 1e-3})
    assert eager.sentences == [
        "spec + eager: a step takes 8.00 ms, most of it target forward/verify (4.00 ms, 50%); "
        "2.00x the no-spec step (4.00 ms, no_spec + eager, profiled the same way; 60 v 96 "
        "steps)"]
    assert "1.50x the no-spec step" in found["graph"].sentences[0]
    # The no-spec cell has no drafter and no rejection sampler: measured, and zero.
    base = {p.name: p.seconds for p in eager.baseline.parts}
    assert base["drafter"] == 0.0 and base["rejection"] == 0.0


def test_starts_are_merged_by_their_steps_and_rounds_of_one_start_counted_once() -> None:
    plan = cpu_plan()
    spec = next(c for c in plan.cells if c.spec and c.varies["graph"] == "eager")
    first, second = profile(6.0, 3.0, drafter_ms=2.0, steps=50), profile(
        9.0, 6.0, drafter_ms=2.0, steps=100)
    # A live engine writes one start's profile into every round it serves.
    rounds = [result(spec, first), result(spec, first), result(spec, second)]
    split = next(f for f in step_splits(plan, {spec.cell_id: rounds})
                 if f.context == "eager").cells[0]
    assert split.profiles == 2 and split.steps == 150
    assert split.step_s == pytest.approx((6.0 * 50 + 9.0 * 100) / 150 / 1e3)
    target = next(p for p in split.parts if p.name == "target")
    assert target.seconds == pytest.approx((3.0 * 50 + 6.0 * 100) / 150 / 1e3)


def test_a_part_the_release_cannot_time_is_not_measured_and_said_so() -> None:
    plan = cpu_plan()
    spec = next(c for c in plan.cells if c.spec and c.varies["graph"] == "graph")
    note = ("drafter not measured: this release has no vllm.v1.worker.gpu_model_runner."
            "GPUModelRunner.propose_draft_token_ids (AttributeError)")
    prof = profile(5.0, 3.0, drafter_s=None, host_s=None, notes=[note])
    split = step_splits(plan, {spec.cell_id: [result(spec, prof)]})[0]
    parts = {p.name: p.seconds for p in split.cells[0].parts}
    assert parts["drafter"] is None and parts["host"] is None
    assert split.cells[0].notes == [note]
    assert split.sentences[0].endswith("the no-spec step of this mode was not profiled")


def test_a_profile_that_saw_no_step_says_why_instead_of_splitting() -> None:
    plan = cpu_plan()
    spec = next(c for c in plan.cells if c.spec and c.varies["graph"] == "eager")
    why = ("no engine step ran in this process (the engine runs in processes of its own), "
           "so the step was not profiled")
    prof = StepProfile(profiler="torch.profiler (CPU)", device="cpu", steps=0, notes=[why])
    split = step_splits(plan, {spec.cell_id: [result(spec, prof)]})[0]
    assert split.cells[0].step_s is None and split.cells[0].largest is None
    assert split.sentences == [f"spec + eager: the step was not split ({why})"]


def test_cells_without_profiles_give_no_finding() -> None:
    plan = cpu_plan()
    results = {c.cell_id: [result(c, None)] for c in plan.cells}
    assert step_splits(plan, results) == []
    failed = {c.cell_id: [result(c, standard_profile(c)).model_copy(update={"status": "failed"})]
              for c in plan.cells}
    assert step_splits(plan, failed) == []


def test_the_report_draws_a_chart_per_mode_and_names_the_largest_part() -> None:
    plan = cpu_plan()
    results = {c.cell_id: [result(c, standard_profile(c))] for c in plan.cells}
    findings = analyze(plan, results, request=seed_request())
    assert [f.context for f in findings.step_splits] == ["eager", "graph"]
    text = render_report(plan, findings)
    section = collapsed(text, "Where a step's time goes")
    assert section.count("```text") == 2
    assert "under eager · ms per step · torch.profiler (CPU)" in section
    assert "under graph · ms per step" in section
    # The eager spec step is the longest, so its bar is the full width.
    assert f"  step                    {'█' * 28}     8.00" in section
    assert "target forward/verify" in section and "host time between them" in section
    # A no-spec step has no drafter to draw.
    assert section.count("drafter forward") == 2
    assert "- spec + graph: a step takes 4.50 ms, most of it target forward/verify" in section


@pytest.mark.parametrize(("value", "top", "drawn"), [
    (1.0, 1.0, "█" * 28), (0.0, 1.0, ""), (0.5, 1.0, "█" * 14), (1 / 56, 1.0, "▌"),
    (2.0, 1.0, "█" * 28), (1.0, 0.0, ""),
])
def test_a_bar_is_drawn_in_eighths_of_a_character(value: float, top: float,
                                                  drawn: str) -> None:
    assert bar(value, top) == drawn


def test_a_mode_with_no_step_split_draws_no_chart_and_says_why_once() -> None:
    plan = cpu_plan()
    why = "no engine step ran in this process"
    unsplit = StepProfile(profiler="torch.profiler (CPU)", device="cpu", steps=0, notes=[why])
    results = {c.cell_id: [result(c, unsplit if c.varies["graph"] == "graph"
                                  else standard_profile(c))] for c in plan.cells}
    text = render_report(plan, analyze(plan, results, request=seed_request()))
    section = collapsed(text, "Where a step's time goes")
    assert section.count("```text") == 1 and "under graph" not in section
    assert section.count(why) == 1
    assert f"- spec + graph: the step was not split ({why})" in section
