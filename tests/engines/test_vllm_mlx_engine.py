"""vllm-mlx engine module and serve template, run against a fake `vllm-mlx` CLI
(tests/fakes/vllm_mlx_stub) whose /v1/status counters grow with every request."""

from __future__ import annotations

import ast
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.scripts import assert_gone, run_cell_script
from triagebot.engines import adapter, vllm_mlx
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell, CellWorkload, Plan, Sampling, SpecParams
from triagebot.render import render_cell
from triagebot.run_result import RunResult

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "vllm_mlx_stub" / "fake_vllm_mlx.py"
NUM_PROMPTS, MAX_TOKENS, RUNS, WARMUPS = 5, 6, 2, 1
# What the fake adds to /v1/status per completion (fake_vllm_mlx.py).
ATTEMPTED, ACCEPTED, REJECTED = 10, 7, 3


def make_cell(
    version: str | None = "0.4.1",
    concurrency: int | None = 4,
    spec: SpecParams | None = None,
    **over: Any,
) -> Cell:
    fields: dict[str, Any] = {
        "cell_id": "c00aa11bb22",
        "label": "vllm-mlx test cell",
        "engine": "vllm-mlx",
        "version": version,
        "template": vllm_mlx.TEMPLATES["serve"],
        "model": "mlx-community/Qwen3.5-4B-MTP",
        "spec": spec,
        "sampling": Sampling(temperature=0.0, max_tokens=MAX_TOKENS),
        "workload": CellWorkload(kind="serve", num_prompts=NUM_PROMPTS, input_len=12,
                                 concurrency=concurrency),
    }
    fields.update(over)
    return Cell(**fields)


def mtp(k: int = 3) -> SpecParams:
    return SpecParams(method="mtp", num_speculative_tokens=k)


def planned(cell: Cell) -> Cell:
    return cell.model_copy(update={"engine_args": vllm_mlx.engine_args(cell),
                                   "env": vllm_mlx.engine_env(cell)})


def plan_for(cell: Cell) -> Plan:
    return Plan(engine="vllm-mlx", gpu_kind="m3-max", question="does mtp help?",
                cells=[cell], budget=Budget(runs=RUNS, warmups=WARMUPS))


# --- versions and arguments --------------------------------------------------------------


def test_versions() -> None:
    assert adapter("vllm-mlx") is vllm_mlx
    assert vllm_mlx.resolve_version(None) == "0.6.0"
    assert vllm_mlx.resolve_version("0.4.0") == "0.4.0"
    assert vllm_mlx.resolve_version("0.5.2") == "0.5.0"
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.resolve_version("0.3.0")
    assert err.value.field == "version" and "0.4.0" in str(err.value)
    assert err.value.accepted == ["0.4.0", "0.4.1", "0.5.0", "0.6.0"]
    with pytest.raises(PlanRejected):
        vllm_mlx.resolve_version("0.7.0")


def test_batched_mtp_keeps_requested_and_expected_effective_draft_tokens() -> None:
    args = vllm_mlx.engine_args(make_cell(spec=mtp(3)))
    assert args["flags"] == {"continuous_batching": True, "enable_mtp": True,
                             "mtp_num_draft_tokens": 3}
    assert args["requested_draft_tokens"] == 3
    assert args["expected_effective_draft_tokens"] == 1


def test_single_stream_runs_simple_mode() -> None:
    args = vllm_mlx.engine_args(make_cell(concurrency=None, spec=mtp(2)))
    assert "continuous_batching" not in args["flags"]
    assert args["expected_effective_draft_tokens"] is None
    notes = vllm_mlx.template_context(make_cell(concurrency=1, spec=mtp(2)))["notes"]
    assert any("simple mode" in n for n in notes)


def test_plain_cell_has_no_mtp_flags_and_remote_code_only_when_asked() -> None:
    args = vllm_mlx.engine_args(make_cell())
    assert args == {"flags": {"continuous_batching": True}}
    trusted = vllm_mlx.engine_args(make_cell(trust_remote_code=True))
    assert trusted["flags"]["trust_remote_code"] is True


def test_text_counters_note_for_0_4_0() -> None:
    notes = vllm_mlx.template_context(make_cell("0.4.0", spec=mtp()))["notes"]
    assert any("0.4.1" in n for n in notes)


@pytest.mark.parametrize("method", ["eagle", "eagle3", "ngram", "draft_model", "dflash"])
def test_only_mtp_is_accepted(method: str) -> None:
    draft = "org/draft" if method in ("eagle", "eagle3", "draft_model", "dflash") else None
    spec = SpecParams(method=method, num_speculative_tokens=2, draft_model=draft)
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.engine_args(make_cell(spec=spec))
    assert err.value.field == "spec.method" and err.value.accepted == ["mtp"]
    assert "accepted: mtp" in str(err.value)


@pytest.mark.parametrize(("field", "value"), [
    ("enforce_eager", True),
    ("cudagraph_mode", "FULL"),
    ("model_runner", "v1"),
    ("encoder_cudagraph", False),
    ("tensor_parallel_size", 2),
    ("data_parallel_size", 2),
    ("expert_parallel", True),
])
def test_cuda_and_multi_device_fields_are_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.engine_args(make_cell(**{field: value}))
    assert err.value.field == field and field in str(err.value)


def test_spec_extras_and_env_are_checked() -> None:
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.engine_args(make_cell(spec=SpecParams(method="mtp", num_speculative_tokens=2,
                                                       draft_model="org/x")))
    assert err.value.field == "spec.draft_model"
    optimistic = vllm_mlx.engine_args(make_cell(spec=mtp(),
                                                extra_speculative_config={"optimistic": True}))
    assert optimistic["flags"]["mtp_optimistic"] is True
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.engine_args(make_cell(spec=mtp(), extra_speculative_config={"method": "x"}))
    assert err.value.field == "extra_speculative_config.method"
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.engine_env(make_cell(env={"SGLANG_X": "1"}))
    assert err.value.field == "env.SGLANG_X"
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.engine_args(make_cell(workload=CellWorkload(kind="offline", num_prompts=1,
                                                             input_len=1)))
    assert err.value.field == "workload.kind"


def test_image_cells_are_served_by_the_mllm_engine_and_videos_refused() -> None:
    image = CellWorkload(kind="serve", num_prompts=2, input_len=8, concurrency=4,
                         modality="image", images_per_prompt=1, image_size=(96, 128))
    cell = planned(make_cell(spec=mtp(5), workload=image))
    assert cell.engine_args["flags"]["mllm"] is True
    text = render_cell(plan_for(cell), cell).text
    ast.parse(text)
    assert "IMAGE_SIZE = [96, 128]" in text and "IMAGES_PER_PROMPT = 1" in text
    assert any("1 generated 96x128 image(s)" in n
               for n in vllm_mlx.template_context(cell)["notes"])
    assert "mllm" not in vllm_mlx.engine_args(make_cell(spec=mtp(5)))["flags"]
    with pytest.raises(PlanRejected) as err:
        vllm_mlx.engine_args(make_cell(workload=image.model_copy(
            update={"modality": "video", "images_per_prompt": 0, "videos_per_prompt": 1})))
    assert err.value.field == "workload.modality"


def test_estimate() -> None:
    cell = make_cell(spec=mtp())
    assert 0 < vllm_mlx.estimate_seconds(cell, Budget(runs=1)) < vllm_mlx.estimate_seconds(
        cell, Budget(runs=5))


@pytest.mark.parametrize("concurrency", [None, 4])
def test_template_renders_and_parses(concurrency: int | None) -> None:
    cell = planned(make_cell(concurrency=concurrency, spec=mtp(),
                             env={"MLX_METAL_DEBUG": "0"}))
    text = render_cell(plan_for(cell), cell).text
    ast.parse(text)
    assert "trust_remote_code" not in text and "main(measure)" in text


# --- running the script against the fake -------------------------------------------------


def run_script(text: str, tmp_path: Path) -> tuple[RunResult, list[dict[str, Any]]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "vllm-mlx"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    return run_cell_script(text, tmp_path, "FAKE_VLLM_MLX_LOG", {"PATH": path})


def test_batched_run_reports_counter_deltas(tmp_path: Path) -> None:
    cell = planned(make_cell(spec=mtp(3)))
    res, events = run_script(render_cell(plan_for(cell), cell).text, tmp_path)
    assert res.status == "ok", res.error
    assert len(res.runs) == RUNS and res.warmups == WARMUPS
    for run in res.runs:
        assert run.output_tokens == NUM_PROMPTS * MAX_TOKENS
        assert run.tok_s > 0 and run.ttft_ms is None
    n = RUNS * NUM_PROMPTS  # warm-up requests are outside every before/after pair
    assert res.spec is not None
    assert res.spec.num_drafts == n * ATTEMPTED
    assert res.spec.num_draft_tokens == n * ATTEMPTED * 1
    assert res.spec.num_accepted_tokens == n * ACCEPTED
    assert res.spec.per_position_accepted == [n * ACCEPTED]
    extra = res.model_extra or {}
    assert extra["requested_draft_tokens"] == 3 and extra["effective_draft_tokens"] == 1
    assert extra["mtp_counters"]["rejected"] == n * REJECTED
    assert extra["bypass_counts"] == {"prefill": n, "no_active_batch": 2 * n,
                                      "cache_mismatch": 0}
    assert [d["attempted"] for d in extra["mtp_runs"]] == [NUM_PROMPTS * ATTEMPTED] * RUNS
    assert any("requested 3 draft tokens" in w for w in extra["warnings"])
    start = next(e for e in events if e["event"] == "server_start")
    argv = start["argv"]
    assert argv[:2] == ["serve", "mlx-community/Qwen3.5-4B-MTP"]
    assert "--continuous-batching" in argv and "--enable-mtp" in argv
    assert argv[argv.index("--mtp-num-draft-tokens") + 1] == "3"
    assert_gone(start["pid"], start["helper_pid"])


def test_simple_mode_reports_no_counters_and_says_why(tmp_path: Path) -> None:
    cell = planned(make_cell(concurrency=1, spec=mtp(2)))
    res, events = run_script(render_cell(plan_for(cell), cell).text, tmp_path)
    assert res.status == "ok", res.error
    assert res.spec is None
    extra = res.model_extra or {}
    assert extra["mtp_enabled"] is False
    assert any('{"enabled": false}' in w for w in extra["warnings"])
    start = next(e for e in events if e["event"] == "server_start")
    assert "--continuous-batching" not in start["argv"]
    assert_gone(start["pid"], start["helper_pid"])


def test_baseline_has_no_spec_and_no_counter_warning(tmp_path: Path) -> None:
    cell = planned(make_cell())
    res, _ = run_script(render_cell(plan_for(cell), cell).text, tmp_path)
    assert res.status == "ok", res.error
    assert res.spec is None
    extra = res.model_extra or {}
    assert extra["requested_draft_tokens"] is None
    assert not any("counters" in w for w in extra["warnings"])
