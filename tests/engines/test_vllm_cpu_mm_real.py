"""The multimodal path on the real engine: `vllm bench mm-processor` on vLLM's CPU build.

A report that compares the vision encoder eager against ViT CUDA graphs is planned for the
cpu runner, and its one measured cell runs for real: the release's multimodal environment
(its lock plus torchvision and pandas) is installed or reused, the tiny GLM-4.1V stand-in
is built locally, and the rendered script runs under the runner's supervisor. The engine
starts once (one run, no warm-up run: the benchmark warms up itself). What needs a GPU,
the ViT-graph arm, is refused by the plan with its reason, and the test checks that too.

Deselect with `-m "not vllm_cpu"` for a quick run; `./dev test` runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from triagebot.engines import standins as recipes
from triagebot.engines import vllm_cpu as locks
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan import cpu as cpu_plan
from triagebot.plan_model import Plan
from triagebot.render import render_plan
from triagebot.run import standins, vllm_cpu
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.supervise import Limits, ScriptPaths, run_script

pytestmark = pytest.mark.vllm_cpu

REPORT = (b"ViT full CUDA graph for glm4_1v images\n\n```bash\n"
          b"vllm bench mm-processor --model zai-org/GLM-4.1V-9B-Thinking "
          b"--dataset-name random-mm --random-mm-base-items-per-request 1 "
          b"--random-mm-limit-mm-per-prompt '{\"image\": 1, \"video\": 0}' "
          b"--num-prompts 1000 --compilation-config '{\"cudagraph_mm_encoder\": true}'\n```\n")


def _plan() -> Plan:
    return build_plan(parse_report(REPORT), parse_overrides(["engine=vllm", "gpu=cpu"]))


def test_the_plan_keeps_the_eager_encoder_and_refuses_the_vit_graph_arm() -> None:
    plan = _plan()
    assert plan.engine_version in locks.mm_releases()
    measured = [c for c in plan.cells if not c.replica]
    assert len(measured) == 1
    cell = measured[0]
    assert cell.model == recipes.vision().model_id
    assert cell.encoder_cudagraph is False
    assert cell.workload.kind == "mm_processor" and cell.workload.modality == "image"
    refused = [n for n in plan.notes if "refuses the vit_graph arm" in n]
    assert refused and cpu_plan.VIT_GRAPH_WHY in refused[0], plan.notes


def test_the_eager_encoder_is_measured_on_the_vision_language_stand_in(
        tmp_path: Path) -> None:
    plan = _plan()
    cell = next(c for c in plan.cells if not c.replica)
    env, runner_env = vllm_cpu.prepare(
        plan.engine_version or "", {cell.model}, tmp_path, cache_dir=DEFAULT_CACHE,
        standins_dir=standins.DEFAULT_CACHE, multimodal=vllm_cpu.is_multimodal(plan))
    assert env.path.endswith("-mm")
    script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
    path = tmp_path / script.filename
    path.write_text(script.text)
    with vllm_cpu.per_run_dirs() as dirs:
        outcome = run_script(
            path, python=env.python,
            env={**cell.env, **runner_env, **dirs, "TRIAGEBOT_RUNS": "1"},
            paths=ScriptPaths(tmp_path / "result.json", tmp_path / "cell.log"),
            limits=Limits(wall_limit_s=900, silence_limit_s=600, gpu_settle_s=0), cwd=tmp_path)
    result = outcome.result
    assert result is not None, outcome.log_tail[-3000:]
    assert result.status == "ok", (result.error, outcome.log_tail[-3000:])
    # The CLI answers for the distribution "vllm" with the "+cpu" its platform looks for.
    assert result.engine_version == f"{plan.engine_version}+cpu", result.engine_version
    [run] = (result.model_extra or {})["mm_processor"]["runs"]
    encoder = run["mm_processor_stats"]["encoder_forward_ms"]
    assert encoder["mean"] > 0 and encoder["median"] > 0, run
    # One image a prompt, each encoded once.
    assert run["encoder_summary"]["total_encoder_calls"] == cell.workload.num_prompts, run
