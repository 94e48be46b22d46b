"""vllm-mlx for real, on MLX's Linux CPU build: its two MTP paths on the stand-ins.

Nothing here is faked: the locked vllm-mlx environment is installed (or reused) from
`triagebot/engines/locks`, the stand-ins with their MTP layers are built locally (trained
inside that environment), and the rendered scripts start `vllm-mlx serve` under the same
supervisor the runner uses. Seed 002's plan takes the multimodal (MLLM) path: the Qwen3.5
vision-language stand-in, served with --mllm and sent images. A text report of ours
takes the text continuous-batching path on the Qwen3-Next stand-in. Each path starts two
servers (MTP off, MTP on), a few seconds each once the stand-ins exist.

Deselect with `-m "not vllm_mlx_cpu"` for a quick run; `./dev test` runs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import seed_path
from triagebot.analyze.findings import analyze
from triagebot.analyze.mtp_status import mtp_totals
from triagebot.engines import mlx_standin
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Cell, Plan
from triagebot.render import render_plan
from triagebot.run import standins, vllm_mlx
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.supervise import Limits, ScriptPaths, run_script
from triagebot.run_result import RunResult

pytestmark = pytest.mark.vllm_mlx_cpu

VERSION = "0.6.0"
# A text report of ours, for the text path.
TEXT_REPORT = Path(__file__).resolve().parents[1] / "parse" / "fixtures" / "reports" / (
    "vllm_mlx_mtp.md")
# --mtp-num-draft-tokens: seed 002's, and our text report's.
REQUESTED = {"mllm": 5, "text": 3}


def _seed_plan(*overrides: str) -> Plan:
    seed = seed_path("002")
    words = ["engine=vllm-mlx", "gpu=cpu", *overrides]
    return build_plan(parse_report(seed.read_bytes()), parse_overrides(words))


def _text_plan(*overrides: str) -> Plan:
    words = ["gpu=cpu", f"version={VERSION}", *overrides]
    return build_plan(parse_report(TEXT_REPORT.read_bytes()), parse_overrides(words))


def test_seed_002_plans_the_vision_language_stand_in_on_the_mllm_path() -> None:
    plan = _seed_plan()
    assert plan.engine_version == VERSION and plan.gpu_kind == "cpu"
    assert {c.model for c in plan.cells} == {mlx_standin.VL_STANDIN.model_id}
    spec = next(c for c in plan.cells if c.spec is not None and not c.replica)
    flags = spec.engine_args["flags"]
    assert flags["enable_mtp"] and flags["mtp_num_draft_tokens"] == REQUESTED["mllm"]
    assert flags["continuous_batching"] and flags["mllm"]
    assert spec.workload.modality == "image" and spec.workload.images_per_prompt == 1
    assert spec.workload.image_size == (224, 224)
    assert any("multimodal (MLLM) MTP path" in n for n in plan.notes)


def test_a_text_report_plans_the_text_stand_in() -> None:
    plan = _text_plan()
    assert {c.model for c in plan.cells} == {mlx_standin.STANDIN.model_id}
    assert all(c.workload.modality == "text" and "mllm" not in c.engine_args["flags"]
               for c in plan.cells)
    assert not any("MLLM" in n for n in plan.notes)


def test_a_release_without_a_lock_runs_the_locked_one_and_says_so() -> None:
    plan = _seed_plan("version=0.4.1", "model=Qwen/Qwen3.5-27B")
    assert plan.engine_version == VERSION
    assert any("0.4.1 has no lock on the cpu runner" in n for n in plan.notes)
    assert any("in place of Qwen/Qwen3.5-27B" in n for n in plan.notes)


@pytest.fixture(scope="module", params=["mllm", "text"])
def ran(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[Plan, dict[str, RunResult]]:
    out = tmp_path_factory.mktemp(f"vllm-mlx-{request.param}")
    small = ("runs=2", "warmups=1", "prompts=8")
    plan = _seed_plan(*small) if request.param == "mllm" else _text_plan(*small)
    env, runner_env = vllm_mlx.prepare(VERSION, out, cache_dir=DEFAULT_CACHE,
                                       standins_dir=standins.DEFAULT_CACHE,
                                       models={c.model for c in plan.cells})
    results = {}
    for cell in plan.cells:
        if not cell.replica:
            results["spec" if cell.spec else "none"] = _run(plan, cell, env.python,
                                                            runner_env, out)
    return plan, results


def _run(plan: Plan, cell: Cell, python: str, runner_env: dict[str, str],
         out: Path) -> RunResult:
    script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
    path = out / "scripts" / script.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script.text)
    with vllm_mlx.per_run_dirs() as dirs:
        outcome = run_script(
            path, python=python, env={**cell.env, **runner_env, **dirs,
                                      "TRIAGEBOT_RUNS": "2"},
            paths=ScriptPaths(out / "results" / f"{cell.cell_id}.json",
                              out / "logs" / f"{cell.cell_id}.log"),
            limits=Limits(wall_limit_s=900, silence_limit_s=600, gpu_settle_s=0), cwd=out)
    assert outcome.result is not None, outcome.log_tail[-3000:]
    assert outcome.result.status == "ok", (outcome.result.error, outcome.log_tail[-3000:])
    return outcome.result


def _path(plan: Plan) -> str:
    return "mllm" if plan.cells[0].workload.modality == "image" else "text"


def test_the_server_reports_requested_against_effective_draft_tokens(ran) -> None:
    plan, results = ran
    spec = results["spec"]
    assert spec.engine_version == VERSION
    assert len(spec.runs) == 2 and all(r.tok_s > 0 for r in spec.runs)
    totals = mtp_totals([spec])
    assert totals is not None
    # vllm-mlx 0.6.0's batched MTP paths draft one token per verify step whatever is
    # asked.
    assert totals["requested_draft_tokens"] == REQUESTED[_path(plan)]
    assert totals["effective_draft_tokens"] == 1
    assert totals["errors"] == 0
    assert totals["attempted"] == totals["accepted"] + totals["rejected"] > 0
    assert set(totals["bypass_counts"]) >= {"prefill", "no_active_batch"}
    # Each path counts its own bypass conditions: the MLLM generator's include
    # requests that did not ask for an assistant drafter, the text scheduler's a cache
    # mismatch. So these say which path drafted.
    own = "assistant_not_requested" if _path(plan) == "mllm" else "cache_mismatch"
    assert own in totals["bypass_counts"]
    counters = spec.spec
    assert counters is not None and counters.num_drafts == totals["attempted"]


def test_the_trained_mtp_layer_is_accepted_between_the_extremes(ran) -> None:
    # A random MTP layer is accepted ~0 %, one that copied the body ~100 %: either would
    # hide what the counters say. The stand-in's layer lands between.
    totals = mtp_totals([ran[1]["spec"]])
    assert totals is not None
    rate = totals["accepted"] / totals["attempted"]
    assert 0.02 < rate < 0.9, totals


def test_mtp_off_reports_no_counters(ran) -> None:
    none = ran[1]["none"]
    assert none.spec is None and all(r.tok_s > 0 for r in none.runs)
    assert (none.model_extra or {}).get("mtp_enabled") is False


def test_the_findings_say_the_engines_own_figures(ran) -> None:
    plan, results = ran
    by_cell = {c.cell_id: [results["spec" if c.spec else "none"]] for c in plan.cells
               if not c.replica}
    findings = analyze(plan, by_cell)
    [said] = [n for n in findings.notes if "vllm-mlx /v1/status" in n]
    assert (f"requested {REQUESTED[_path(plan)]} draft tokens, effective 1 per verify step"
            in said)
    spec = next(c for c in findings.cells if c.label == "spec")
    assert spec.acceptance is not None and spec.acceptance.acceptance_rate is not None
