"""Reports that used to be refused for the tool's reasons, not the reporter's: an old or
unknown vLLM release, a workload too big for the time limit, a drafted method with no
draft. Each now gets a plan that says what it changed, or a refusal naming what to add."""

from __future__ import annotations

import pytest

from triagebot.errors import PlanRejected
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Budget

OLD_RELEASE = """\
With vLLM 0.9 the MTP head of our model gives almost no speedup.

```
vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 \\
  --speculative-config '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'
```
Throughput without MTP is 41 tok/s and 43 tok/s with it.
"""


def test_a_minor_only_version_plans_on_that_minor_and_says_so() -> None:
    request = parse_report(OLD_RELEASE, title="MTP gives no speedup on vLLM 0.9")
    assert request.engine_version == "0.9"
    plan = build_plan(request)
    assert plan.engine_version == "0.9.0"
    assert any("vllm 0.9;" in n and "runs 0.9.0" in n for n in plan.notes), plan.notes


@pytest.mark.parametrize(("asked", "runs"), [("0.9.3", "0.9.2"), ("0.40.0", "0.33.0"),
                                             ("0.28.1rc1.dev380+g25268f0c9", "0.28.0")])
def test_an_unknown_version_plans_on_the_nearest_known_release(asked: str, runs: str) -> None:
    request = parse_report(OLD_RELEASE.replace("0.9", asked),
                           title="MTP gives no speedup")
    plan = build_plan(request)
    assert plan.engine_version == runs
    assert any(f"vllm {asked}" in n and f"runs {runs}" in n for n in plan.notes), plan.notes


def test_a_known_release_gets_no_stand_in_note() -> None:
    plan = build_plan(parse_report(OLD_RELEASE.replace("0.9", "0.17.1"), title="MTP"))
    assert plan.engine_version == "0.17.1"
    assert not any("nearest release" in n for n in plan.notes)


LONG_CONTEXT = """\
MTP is slower than no MTP for long prompts on vLLM 0.17.1.

```
vllm bench serve --model zai-org/GLM-4.6 --dataset-name random \\
  --random-input-len 64000 --random-output-len 8192 --num-prompts 400 \\
  --max-concurrency 8 --ignore-eos
```
with `--speculative-config '{"method": "mtp", "num_speculative_tokens": 3}'` the output
throughput is 210 tok/s against 260 tok/s without it.
"""


def test_a_workload_over_the_time_limit_is_shrunk_and_the_plan_says_what() -> None:
    request = parse_report(LONG_CONTEXT, title="Long-context MTP slower than baseline")
    budget = Budget(time_limit_s=240 * 60)
    plan = build_plan(request, budget=budget)
    assert plan.estimated_seconds <= budget.time_limit_s
    note = next(n for n in plan.notes if n.startswith("shrunk to fit"))
    assert "240 min" in note and "prompts" in note and "instead of 400" in note
    cell = plan.cells[0]
    assert cell.workload.input_len == 64000  # the long context is the question: kept
    assert cell.workload.num_prompts >= 2 * (cell.workload.concurrency or 1)


def test_values_the_maintainer_set_are_never_shrunk() -> None:
    request = parse_report(LONG_CONTEXT, title="Long-context MTP slower than baseline")
    plan = build_plan(request, parse_overrides(["prompts=64"]),
                      budget=Budget(time_limit_s=240 * 60))
    assert all(c.workload.num_prompts == 64 for c in plan.cells)
    assert any("max_tokens" in n and n.startswith("shrunk") for n in plan.notes)


def test_a_plan_that_cannot_fit_even_shrunk_is_refused_with_numbers() -> None:
    request = parse_report(LONG_CONTEXT, title="Long-context MTP slower than baseline")
    with pytest.raises(PlanRejected) as err:
        build_plan(request, budget=Budget(time_limit_s=60))
    assert err.value.field == "budget" and "even with the workload shrunk" in str(err.value)


SGLANG_EAGLE = """\
EAGLE on SGLang is slower than running the target alone.

```
python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3.1-8B-Instruct \\
  --speculative-algorithm EAGLE --speculative-num-steps 3
```
Someone suggested trying jamesliu1/sglang-EAGLE-Llama-3.1-Instruct-8B as the head.
Output throughput: 95 tok/s with EAGLE, 120 tok/s without.
"""


def test_a_drafted_method_without_a_draft_says_what_to_add() -> None:
    request = parse_report(SGLANG_EAGLE, title="SGLang EAGLE slower than baseline")
    assert request.draft_models == []  # named in passing, not as what ran
    with pytest.raises(PlanRejected) as err:
        build_plan(request)
    message = str(err.value)
    assert err.value.field == "draft"
    assert "add draft=ORG/NAME" in message and "--speculative-draft-model-path" in message
    assert "draft=jamesliu1/sglang-EAGLE-Llama-3.1-Instruct-8B" in message


def test_without_a_suggestion_the_refusal_still_names_the_override() -> None:
    text = SGLANG_EAGLE.replace("Someone suggested trying "
                                "jamesliu1/sglang-EAGLE-Llama-3.1-Instruct-8B as the head.", "")
    with pytest.raises(PlanRejected) as err:
        build_plan(parse_report(text, title="SGLang EAGLE slower than baseline"))
    assert "add draft=ORG/NAME" in str(err.value) and "mentions" not in str(err.value)


def test_the_suggested_draft_then_plans() -> None:
    request = parse_report(SGLANG_EAGLE, title="SGLang EAGLE slower than baseline")
    plan = build_plan(request, parse_overrides(
        ["draft=jamesliu1/sglang-EAGLE-Llama-3.1-Instruct-8B"]))
    spec_cells = [c for c in plan.cells if c.spec is not None]
    assert spec_cells and all(c.spec.draft_model ==  # type: ignore[union-attr]
                              "jamesliu1/sglang-EAGLE-Llama-3.1-Instruct-8B" for c in spec_cells)


def test_a_crash_report_is_planned_as_a_crash_check() -> None:
    text = """\
vLLM 0.11.0 dies while capturing CUDA graphs with EAGLE-3 on one L40S:

```
vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config \\
'{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 4}'
```

```
RuntimeError: CUDA error: an illegal memory access was encountered
```
"""
    request = parse_report(text, title="[Bug]: illegal memory access during CUDA graph capture")
    assert request.symptom == "crash"
    plan = build_plan(request)
    assert any("crash check" in n for n in plan.notes), plan.notes


def test_an_sglang_release_older_than_the_table_plans_on_the_oldest_known() -> None:
    text = SGLANG_EAGLE.replace("EAGLE on SGLang", "EAGLE on SGLang 0.4.9")
    request = parse_report(text, title="SGLang EAGLE slower than baseline")
    assert request.engine_version == "0.4.9"
    plan = build_plan(request, parse_overrides(
        ["draft=jamesliu1/sglang-EAGLE-Llama-3.1-Instruct-8B"]))
    assert plan.engine_version == "0.4.10.post2"
    assert any("sglang 0.4.9;" in n and "runs 0.4.10.post2" in n for n in plan.notes)
