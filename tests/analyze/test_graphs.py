"""graph_checks: a graph cell on a GPU must show CUDA graphs, an eager cell none.

The readings here are written by hand in the shape the transformers script reports them
(`cuda_graphs` in its RunResult); the script's own CUDA branch runs only on a GPU
(bench/gpu_check.sh, whose output tests/run/test_gpu_fixtures.py reads).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.report import seed_request
from triagebot.analyze.findings import analyze
from triagebot.analyze.graphs import graph_checks, on_gpu
from triagebot.model import (
    CudaGraphEvidence,
    Plan,
    RunEnv,
    RunMeasurement,
    RunResult,
)
from triagebot.overrides import parse_overrides
from triagebot.plan import build_plan
from triagebot.report import render_report

H100 = RunEnv(gpu="NVIDIA H100 80GB HBM3", gpu_count=1, driver="580.159.04", cuda="13.0",
              torch="2.11.0+cu130")
CPU = RunEnv(gpu="cpu: x86_64", gpu_count=0, cuda="none", torch="2.13.0+cpu")


def gpu_plan() -> Plan:
    return build_plan(seed_request(), parse_overrides(["engine=transformers", "gpu=h100"]))


def reading(launches: int, forwards: int = 64, skips: int = 0, **over: Any) -> CudaGraphEvidence:
    return CudaGraphEvidence(source="torch.profiler", graph_launches=launches,
                             kernel_launches=40 if launches else 4000,
                             target_forwards=forwards, cudagraph_skips=skips, **over)


def result(cell_id: str, env: RunEnv, graphs: CudaGraphEvidence | None) -> RunResult:
    runs = [RunMeasurement(output_tokens=256, seconds=0.5 + i / 100, tok_s=256 / (0.5 + i / 100))
            for i in range(3)]
    return RunResult(cell_id=cell_id, engine="transformers", status="ok", env=env, runs=runs,
                     cuda_graphs=graphs)


def results_for(plan: Plan, env: RunEnv,
                graph: CudaGraphEvidence | None,
                eager: CudaGraphEvidence | None) -> dict[str, list[RunResult]]:
    return {c.cell_id: [result(c.cell_id, env, eager if c.enforce_eager else graph)]
            for c in plan.cells}


def test_every_graph_axis_cell_is_checked_on_a_gpu() -> None:
    plan = gpu_plan()
    checks = graph_checks(plan, results_for(plan, H100, reading(63), reading(0)))
    assert len(checks) == len(plan.cells) == 5
    by_arm = {c.arm: c for c in checks}
    assert by_arm["graph"].state == "replayed" and not by_arm["graph"].flagged
    assert "63 CUDA graph launches" in by_arm["graph"].sentence
    assert "over 63 decode steps" in by_arm["graph"].sentence
    assert by_arm["eager"].state == "eager" and not by_arm["eager"].flagged


@pytest.mark.parametrize(("graph", "state", "words"), [
    (reading(0), "none", "ran without CUDA graphs"),
    (reading(20), "partial", "only partly ran as CUDA graphs"),
    (reading(63, skips=2), "partial", "skipped CUDA graphs 2 time(s)"),
    (CudaGraphEvidence(source="torch.profiler", error="RuntimeError: CUPTI"), "unknown",
     "the CUDA graph reading failed (RuntimeError: CUPTI)"),
    (None, "unknown", "no evidence that CUDA graphs ran"),
])
def test_a_graph_cell_without_replays_is_flagged(graph: CudaGraphEvidence | None, state: str,
                                                 words: str) -> None:
    plan = gpu_plan()
    results = results_for(plan, H100, graph, reading(0))
    logs = {c.cell_id: "triagebot: run 1/3: 256 tokens in 0.50 s" for c in plan.cells}
    checks = [c for c in graph_checks(plan, results, logs) if c.arm == "graph"]
    assert checks and all(c.state == state and c.flagged for c in checks)
    assert words in checks[0].sentence
    findings = analyze(plan, results, request=seed_request(), logs=logs)
    hints = [h for h in findings.hints if h.source == "graphs"]
    assert len(hints) == len(checks)
    assert {h.severity for h in hints} == {"warning" if state == "unknown" else "error"}
    report = render_report(plan, findings)
    assert "<summary>CUDA graphs</summary>" in report and "**not as labelled**" in report


def test_an_eager_cell_that_launched_graphs_is_flagged() -> None:
    plan = gpu_plan()
    checks = graph_checks(plan, results_for(plan, H100, reading(63), reading(5)))
    eager = [c for c in checks if c.arm == "eager"]
    assert eager and all(c.flagged and c.state == "partial" for c in eager)
    assert "labelled eager but launched CUDA graphs" in eager[0].sentence


def test_the_worst_start_decides_and_says_how_many() -> None:
    plan = gpu_plan()
    cell = next(c for c in plan.cells if not c.enforce_eager)
    rounds = [result(cell.cell_id, H100, reading(63)), result(cell.cell_id, H100, reading(0))]
    check = next(c for c in graph_checks(plan, {cell.cell_id: rounds})
                 if c.cell_id == cell.cell_id)
    assert check.state == "none" and "(in 1 of 2 starts)" in check.sentence


def test_a_vllm_log_line_is_evidence_of_capture() -> None:
    plan = gpu_plan()
    results = results_for(plan, H100, None, None)
    logs = {c.cell_id: "INFO [gpu_model_runner.py:2602] Graph capturing finished in 5 secs, "
                       "took 0.48 GiB" for c in plan.cells}
    checks = graph_checks(plan, results, logs)
    graph = next(c for c in checks if c.arm == "graph")
    assert graph.state == "replayed" and graph.source == "engine log"
    assert "Graph capturing finished in 5 secs" in graph.sentence
    eager = next(c for c in checks if c.arm == "eager")
    assert eager.state == "unknown" and not eager.flagged


def test_no_check_on_a_cpu_or_without_anything_to_read() -> None:
    plan = gpu_plan()
    assert graph_checks(plan, results_for(plan, CPU, None, None), logs={}) == []
    # Results without readings or logs (a library call on bare results): not judged.
    assert graph_checks(plan, results_for(plan, H100, None, None)) == []
    assert not on_gpu(CPU) and not on_gpu(RunEnv()) and on_gpu(H100)
