"""A case's step read through the real analysis: both modes' ratios at both releases,
their change, acceptance from the counters, greedy output equality, crashes."""

from __future__ import annotations

import random

import pytest

from triagebot.analyze.findings import analyze
from triagebot.model import Plan, ReproRequest, RunMeasurement, RunResult, SpecCounters
from triagebot.overrides import parse_overrides
from triagebot.plan import build_plan
from triagebot.sentinel.cases import default_cases, overrides
from triagebot.sentinel.flags import flags_for
from triagebot.sentinel.models import SentinelCase
from triagebot.sentinel.reading import mode_comparisons, read_case
from triagebot.watch.steps import step_plan

MTP = default_cases("vllm", "cpu")[0]


def plan_at(case: SentinelCase, version: str) -> Plan:
    opts = parse_overrides([*overrides(case), f"version={version}"])
    return build_plan(ReproRequest(), opts, exact_version=True)


def step(case: SentinelCase = MTP) -> tuple[Plan, dict[str, str]]:
    new, old = plan_at(case, "0.32.0"), plan_at(case, "0.29.0")
    names = mode_comparisons(new, case)
    return step_plan(new, old, list(names.values())), dict(names)


def results(plan: Plan, speeds: dict[str, float], *, accepted: float = 0.5,
            digest: dict[str, str] | None = None, crash: str = "") -> dict[str, list[RunResult]]:
    """Six rounds of four runs per cell, tok/s by the first label prefix that matches;
    spec cells count 80 drafted tokens a run, `accepted` of them accepted."""
    out: dict[str, list[RunResult]] = {}
    for i, cell in enumerate(plan.cells):
        rng = random.Random(i)
        speed = next(v for k, v in speeds.items() if cell.label.startswith(k))
        status = "crashed" if crash and cell.label.startswith(crash) else "ok"
        rounds = []
        for _ in range(6):
            runs = [] if status != "ok" else [
                RunMeasurement(output_tokens=96, seconds=96 / v, tok_s=v)
                for v in (speed * rng.gauss(1, 0.01) for _ in range(4))]
            spec = None
            if cell.spec is not None and status == "ok":
                spec = SpecCounters(num_drafts=320, num_draft_tokens=320,
                                    num_accepted_tokens=round(320 * accepted),
                                    per_position_accepted=[round(320 * accepted)])
            label = next((k for k in (digest or {}) if cell.label.startswith(k)), None)
            rounds.append(RunResult(
                cell_id=cell.cell_id, engine="vllm", engine_version=cell.version,
                status=status, runs=runs, spec=spec,  # type: ignore[arg-type]
                outputs_digest=(digest or {}).get(label or "", "same"),
                error="exit 1" if status != "ok" else None))
        out[cell.cell_id] = rounds
    return out


def test_each_mode_reads_its_ratios_change_acceptance_and_outputs() -> None:
    plan, names = step()
    assert set(names) == {"eager", "graph"}
    assert len(plan.cells) == 9  # both modes' four cells at both releases, and the A/A
    speeds = {"mtp k=1 + graph 0.32.0": 80.0, "mtp k=1 + graph (A/A)": 80.0,
              "mtp k=1 + graph 0.29.0": 120.0, "mtp k=1 + eager": 120.0, "no_spec": 100.0}
    findings = analyze(plan, results(plan, speeds,
                                     digest={"mtp k=1 + graph 0.32.0": "other"}))
    figures = read_case(plan, findings, {}, MTP, names, "0.29.0")
    assert figures.status == "ok" and figures.release == "0.32.0"
    graph, eager = figures.mode("graph"), figures.mode("eager")
    assert graph is not None and eager is not None
    assert graph.spec_ratio == pytest.approx(0.8, abs=0.02) and graph.verdict == "DIFFERENT"
    assert graph.previous_spec_ratio == pytest.approx(1.2, abs=0.02)
    assert graph.ratio_of_ratios == pytest.approx(0.667, abs=0.02)
    assert graph.ror_ci is not None and graph.ror_ci[1] < 0.9
    assert eager.ratio_of_ratios == pytest.approx(1.0, abs=0.02)
    assert graph.acceptance_rate == pytest.approx(0.5) and graph.per_position == [0.5]
    assert graph.acceptance_ci is not None and graph.acceptance_ci[0] < 0.5
    assert graph.outputs_equal is False and graph.previous_outputs_equal is True
    assert eager.outputs_equal is True
    kinds = {(f.kind, f.mode) for f in flags_for(figures, 0.05)}
    assert kinds == {("stopped_paying", "graph"), ("speedup_fell", "graph"),
                     ("outputs_diverged", "graph")}


def test_a_crash_of_the_new_release_is_its_line_and_of_the_old_inconclusive() -> None:
    plan, names = step()
    log = "INFO start\nTypeError: propose() got an unexpected keyword argument 'x'\n"
    crashed = results(plan, {"mtp": 90.0, "no_spec": 100.0}, crash="mtp k=1 + eager 0.32.0")
    spec = next(c for c in plan.cells if c.label == "mtp k=1 + eager 0.32.0")
    figures = read_case(plan, analyze(plan, crashed), {spec.cell_id: log}, MTP, names,
                        "0.29.0")
    assert figures.status == "crashed"
    assert figures.error_line == ("mtp k=1 + eager: TypeError: propose() got an unexpected "
                                  "keyword argument 'x'")
    old = results(plan, {"mtp": 90.0, "no_spec": 100.0}, crash="no_spec + eager 0.29.0")
    inconclusive = read_case(plan, analyze(plan, old), {}, MTP, names, "0.29.0")
    assert inconclusive.status == "inconclusive" and "0.29.0" in (inconclusive.error_line or "")


def test_the_first_release_is_read_alone() -> None:
    new = plan_at(MTP, "0.25.1")
    names = mode_comparisons(new, MTP)
    plan = step_plan(new, None, list(names.values()))
    figures = read_case(plan, analyze(plan, results(plan, {"mtp": 90.0, "no_spec": 100.0})),
                        {}, MTP, names, None)
    graph = figures.mode("graph")
    assert graph is not None and graph.spec_ratio == pytest.approx(0.9, abs=0.02)
    assert graph.ratio_of_ratios is None and graph.previous_spec_ratio is None


def test_a_case_of_one_mode_reads_its_only_comparison() -> None:
    eager_only = MTP.model_copy(update={"modes": ["eager"]})
    names = mode_comparisons(plan_at(eager_only, "0.32.0"), eager_only)
    assert list(names) == ["eager"]
