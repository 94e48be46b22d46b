"""graph_modes: the cudagraph mode a spec cell's target and drafter ran, from vLLM's log.

No GPU ran here: every log below is a FAKE, written by hand from the message formats in
vLLM's sources (`Capturing CUDA graphs ({decode|mixed prefill-decode}, {MODE})` in the V1
runner, `... ({MODE})` in the V2 runner, the start-up warnings that lower the mode;
../shared/reference/engines.md §4.2-4.3), with vLLM's line prefix where vLLM's logger
writes the line and none where tqdm does.
"""

from __future__ import annotations

from tests.report import seed_request
from triagebot.analyze.findings import analyze
from triagebot.analyze.graph_modes import cudagraph_modes
from triagebot.overrides import parse_overrides
from triagebot.plan import build_plan
from triagebot.plan_model import Cell, SpecParams
from triagebot.report import render_report
from triagebot.run_result import RunEnv, RunMeasurement, RunResult
from triagebot.step_profile import StepProfile

H100 = RunEnv(gpu="NVIDIA H100 80GB HBM3", gpu_count=1, driver="580.159.04", cuda="13.0",
              torch="2.11.0+cu130")

FAKE_V1_FULL_AND_PIECEWISE = """\
INFO 05-12 10:00:01 [core.py:90] Initializing a V1 LLM engine (v0.20.2) with config: ...
Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:04<00:00]
Capturing CUDA graphs (decode, FULL): 100%|##########| 35/35 [00:02<00:00, 16.2it/s]
(EngineCore_DP0 pid=4242) INFO 05-12 10:00:09 [gpu_model_runner.py:4600] Graph capturing \
finished in 7 secs, took 0.61 GiB
"""
FAKE_V1_SPEC_LOWERED = """\
(EngineCore_DP0 pid=4242) WARNING 05-12 10:00:02 [compilation.py:900] CUDAGraphMode.\
FULL_AND_PIECEWISE is not supported with spec-decode for attention backend FlashInferBackend \
(support: AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE
Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:04<00:00]
"""
FAKE_EAGER = ("INFO 05-12 10:00:01 [vllm.py:700] Cudagraph is disabled under eager mode\n")
FAKE_V2_MTP = """\
Capturing CUDA graphs (FULL): 100%|##########| 35/35 [00:02<00:00]
(EngineCore_DP0 pid=4242) INFO 05-12 10:00:05 [speculator.py:114] Capturing model for \
multi-module MTP speculator...
Capturing multi-module MTP CUDA graphs (FULL): 100%|##########| 35/35 [00:01<00:00]
"""


def spec_cell(method: str = "eagle", **over: object) -> Cell:
    plan = build_plan(seed_request(), parse_overrides(["engine=vllm", "gpu=h100"]))
    cell = next(c for c in plan.cells if c.spec is not None and c.varies["graph"] == "graph")
    assert cell.spec is not None
    spec = SpecParams(method=method, num_speculative_tokens=3,  # type: ignore[arg-type]
                      draft_model=None if method == "ngram" else "org/draft")
    return cell.model_copy(update={"spec": spec, **over})


def test_a_v1_drafter_is_held_at_piecewise_beside_a_full_target() -> None:
    modes = cudagraph_modes(spec_cell(), FAKE_V1_FULL_AND_PIECEWISE)
    assert (modes.target, modes.drafter, modes.held_back) == ("FULL", "PIECEWISE", True)
    assert "the target ran FULL for decode batches and PIECEWISE for mixed" in modes.sentence
    assert "the drafter ran PIECEWISE: the V1 runner logs no line for it" in modes.sentence
    assert "known cause of a slow spec step" in modes.sentence
    assert "Capturing CUDA graphs (decode, FULL)" in modes.evidence


def test_a_mode_lowered_for_speculation_is_the_mode_the_target_ran() -> None:
    modes = cudagraph_modes(spec_cell(), FAKE_V1_SPEC_LOWERED)
    assert (modes.target, modes.drafter, modes.held_back) == ("PIECEWISE", "PIECEWISE", False)
    assert any("setting cudagraph_mode=PIECEWISE" in line for line in modes.evidence)


def test_a_lowering_without_capture_lines_still_names_the_mode() -> None:
    log = FAKE_V1_SPEC_LOWERED.splitlines()[0].replace("=PIECEWISE", "=FULL_AND_PIECEWISE")
    modes = cudagraph_modes(spec_cell(), log)
    assert (modes.target, modes.drafter, modes.held_back) == ("FULL", "PIECEWISE", True)


def test_eager_runs_no_graphs_for_either_model() -> None:
    modes = cudagraph_modes(spec_cell(), FAKE_EAGER)
    assert (modes.target, modes.drafter, modes.held_back) == ("NONE", "NONE", False)


def test_an_eager_draft_runs_no_graphs_beside_a_full_target() -> None:
    cell = spec_cell()
    assert cell.spec is not None
    eager_draft = cell.model_copy(update={"spec": cell.spec.model_copy(
        update={"draft_enforce_eager": True})})
    modes = cudagraph_modes(eager_draft, FAKE_V1_FULL_AND_PIECEWISE)
    assert (modes.drafter, modes.held_back) == ("NONE", True)
    assert "as its speculative config asks" in modes.sentence


def test_a_v2_drafter_logs_its_own_capture() -> None:
    modes = cudagraph_modes(spec_cell("mtp", model_runner="v2"), FAKE_V2_MTP)
    assert (modes.target, modes.drafter, modes.held_back) == ("FULL", "FULL", False)
    assert "Capturing multi-module MTP CUDA graphs (FULL)" in modes.sentence


def test_a_v2_drafter_without_a_capture_line_is_unknown() -> None:
    modes = cudagraph_modes(spec_cell("mtp", model_runner="v2"), FAKE_V2_MTP.splitlines()[0])
    assert modes.target == "FULL" and modes.drafter is None and not modes.held_back
    assert "its mode is not known" in modes.sentence


def test_prompt_lookup_has_no_drafter_model() -> None:
    modes = cudagraph_modes(spec_cell("ngram"), FAKE_V1_FULL_AND_PIECEWISE)
    assert modes.drafter is None and not modes.held_back
    assert "proposes on the host" in modes.sentence


def test_a_log_without_graph_lines_says_the_mode_is_unknown() -> None:
    modes = cudagraph_modes(spec_cell(), "INFO 05-12 10:00:01 [core.py:90] started\n")
    assert modes.target is None and modes.drafter is None
    assert "an unknown mode for decode batches" in modes.sentence


def test_the_report_says_the_modes_of_a_gpu_spec_cell() -> None:
    plan = build_plan(seed_request(), parse_overrides(["engine=vllm", "gpu=h100"]))
    prof = StepProfile(profiler="torch.profiler (CPU, CUDA)", device="cuda", steps=64,
                       step_s=0.02, drafter_s=0.006, target_s=0.01, rejection_s=0.001,
                       host_s=0.003)
    runs = [RunMeasurement(output_tokens=512, seconds=1.0, tok_s=512.0)]
    results = {c.cell_id: [RunResult(cell_id=c.cell_id, engine="vllm", status="ok", env=H100,
                                     runs=runs, step_profile=prof)] for c in plan.cells}
    logs = {c.cell_id: FAKE_V1_FULL_AND_PIECEWISE for c in plan.cells}
    findings = analyze(plan, results, request=seed_request(), logs=logs)
    graph = next(f for f in findings.step_splits if f.context == "graph")
    modes = graph.cells[0].cudagraphs
    assert modes is not None and modes.held_back and modes.target == "FULL"
    # The no-spec cell has a target only.
    assert graph.baseline is not None and graph.baseline.cudagraphs is not None
    assert graph.baseline.cudagraphs.drafter is None
    assert graph.baseline.cudagraphs.sentence.endswith("; no drafter runs without speculation")
    text = render_report(plan, findings)
    assert "spec + graph: the target ran FULL for decode batches" in text
    assert "A drafter at PIECEWISE beside a target at FULL is a known cause" in text
