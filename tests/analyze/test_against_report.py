"""Reporter labels -> plan cells, reporter ratios vs ours, and the environment diff."""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import seed_path
from triagebot.analyze import verdict
from triagebot.analyze.against_report import env_diff, judge_ratio, match_label, read_label
from triagebot.analyze.findings_models import ComparisonFinding
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Plan
from triagebot.request_model import Environment, ReproRequest
from triagebot.run_result import RunEnv


@cache
def seed_plan() -> Plan:
    return build_plan(parse_report(seed_path("000").read_bytes()))


@pytest.mark.parametrize("label, words", [
    ("no_mtp_eager", ["no spec", "eager"]),
    ("mtp_graph", ["mtp", "graph"]),
    ("baseline", ["no spec"]),
    ("Without spec (CUDA graphs)", ["no spec", "graph"]),
    ("EAGLE3 k=3 piecewise", ["eagle3", "k=3", "PIECEWISE"]),
    ("full_and_piecewise", ["FULL_AND_PIECEWISE"]),
    ("MRV2 + probabilistic", ["v2", "probabilistic"]),
    ("MRV1 strict", ["v1", "strict"]),
    ("vit_graph", ["vit graph"]),
    ("run 3", []),
])
def test_label_words(label: str, words: list[str]) -> None:
    assert read_label(label).words == words


@pytest.mark.parametrize("label, cell", [
    ("no_mtp_eager", "no_spec + eager"),
    ("no_mtp_graph", "no_spec + graph"),
    ("mtp_eager", "spec + eager"),
    ("mtp_graph", "spec + graph"),
    ("MTP + CUDA graph", "spec + graph"),
])
def test_seed_labels_map_to_exactly_one_first_replica_cell(label: str, cell: str) -> None:
    found, reason = match_label(label, seed_plan())
    assert found is not None and found.label == cell, reason
    assert found.replica == 0


@pytest.mark.parametrize("label, why", [
    ("mtp", "fits 2 cells"),
    ("eagle3_graph", "no cell"),
    ("piecewise", "no cell"),
    ("receipt", "no configuration words"),
])
def test_unclear_labels_are_listed_not_guessed(label: str, why: str) -> None:
    found, reason = match_label(label, seed_plan())
    assert found is None and why in reason


def _finding(a: list[float], b: list[float]) -> ComparisonFinding:
    res = verdict.compare([a], [b], margin=0.05)
    return ComparisonFinding(name="x", kind="ratio", numerator=["a"], denominator=["b"],
                             result=res)


SLOW = [56.0, 56.5, 55.5, 56.2, 55.8]
BASE = [100.0, 101.0, 99.0, 100.5, 99.5]


@pytest.mark.parametrize("a, reported, expected", [
    (SLOW, 0.56, True),          # CI contains it
    (SLOW, 0.70, True),          # both DIFFERENT below 1
    (SLOW, 1.30, False),         # opposite direction
    (SLOW, 1.02, False),         # reporter saw nothing, we see a slowdown
    (BASE, 0.56, False),         # we see SAME where the reporter saw a slowdown
    ([60.0, 140.0, 100.0, 80.0, 120.0], 0.56, None),  # UNKNOWN
])
def test_judge_ratio(a: list[float], reported: float, expected: bool | None) -> None:
    comp = _finding(a, BASE)
    ok, _cls, reason = judge_ratio(reported, comp, comp.result.band)
    assert ok is expected, reason


def test_env_diff_compares_gpu_model_and_public_versions() -> None:
    req = ReproRequest(environment=Environment(
        gpus=["NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"], driver="570.211.01",
        cuda_runtime="12.8.61", torch="2.10.0+cu128", engine_version="0.17.1"))
    same = env_diff(req, RunEnv(gpu="NVIDIA A100-SXM4-80GB", gpu_count=1, driver="570.211.01",
                                cuda="12.8", torch="2.10.0", engine_version="0.17.1"))
    diffs = {f.field: f.differs for f in same.fields}
    assert diffs == {"gpu": False, "gpu_count": True, "driver": False, "cuda": False,
                     "torch": False, "engine_version": False}
    assert "does not matter here" in same.sentence
    other = env_diff(req, RunEnv(gpu="NVIDIA H100 80GB HBM3", engine_version="0.18.1"))
    assert {f.field for f in other.fields if f.differs} == {"gpu", "engine_version"}
    assert "most likely to explain a mismatch: gpu" in other.sentence
    assert {f.field for f in other.fields if f.differs is None} == {
        "gpu_count", "driver", "cuda", "torch"}


def test_env_diff_without_a_runner_env_knows_nothing() -> None:
    diff = env_diff(ReproRequest(gpu="H100"), None)
    assert all(f.differs is None for f in diff.fields)


def test_env_diff_says_a_cpu_runner_ran_no_cuda() -> None:
    """A CPU run reports cuda 'none' (not its torch wheel's CUDA build), which differs
    from any reported CUDA and says why it matters."""
    req = ReproRequest(environment=Environment(gpus=["NVIDIA A100-SXM4-40GB"],
                                               cuda_runtime="12.8.61"))
    diff = env_diff(req, RunEnv(gpu="cpu: x86_64", gpu_count=0, cuda="none",
                                torch="2.13.0+cpu"))
    cuda = next(f for f in diff.fields if f.field == "cuda")
    assert (cuda.reported, cuda.ours, cuda.differs) == ("12.8.61", "none", True)
    assert "no CUDA kernel or CUDA graph ran" in cuda.note
    assert "cuda (12.8.61 vs none)" in diff.sentence
    count = next(f for f in diff.fields if f.field == "gpu_count")
    assert (count.ours, count.differs) == ("0", True)
    assert "gpu_count (1 vs 0)" in diff.sentence  # no GPU is not "enough GPUs"


def test_a_reported_token_rate_is_never_set_beside_a_cell_that_times_requests() -> None:
    # Seed 001 gives output tok/s from a serving benchmark; the cpu plan's vit_eager cell
    # runs `vllm bench mm-processor`, whose figure is requests per second.
    from triagebot.analyze.findings import analyze
    from triagebot.overrides import parse_overrides
    from triagebot.report import render_report
    from triagebot.run_result import RunMeasurement, RunResult

    request = parse_report(seed_path("001").read_bytes())
    plan = build_plan(request, parse_overrides(["gpu=cpu"]))
    runs = [RunMeasurement(output_tokens=100, seconds=1 / v, tok_s=v) for v in (3.0, 3.1)]
    results = {c.cell_id: [RunResult(cell_id=c.cell_id, engine="vllm", status="ok",
                                     runs=runs)] for c in plan.cells}
    findings = analyze(plan, results, request=request)
    assert findings.against_report is not None
    eager = next(m for m in findings.against_report.labels if m.label == "eager")
    assert eager.cell_label == "vit_eager" and not eager.comparable
    assert eager.ours_median is None and eager.reported_unit == "output tok/s"
    assert eager.reason.startswith("not comparable: we measured 3.05 req/s")
    assert "the report gives 451.65 output tok/s" in eager.reason
    assert findings.against_report.ratios == []
    report = render_report(plan, findings, scripts=[], command="triagebot run")
    row = next(line for line in report.splitlines() if line.startswith("| eager |"))
    assert "| 451.65 output tok/s | vit\\_eager | not comparable |" in row
