"""The vLLM engine module and its templates: per-release arguments, env, argv, rendering,
and the rendered scripts run against the fake vLLM in tests/fakes/vllm_stub."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from triagebot.engines import adapter
from triagebot.engines import vllm as V
from triagebot.engines import vllm_catalog as cat
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell, CellWorkload, Plan, Sampling, SpecParams
from triagebot.render import render_cell
from triagebot.run_result import RunResult

FOUR = ("0.11.0", "0.17.1", "0.20.2", "0.33.0")
STUB = Path(__file__).resolve().parents[1] / "fakes" / "vllm_stub"


def _fake_spec() -> Any:
    """The fake engine's drafting rule, loaded by path so no fake `vllm` gets imported here."""
    loc = importlib.util.spec_from_file_location("fake_spec", STUB / "vllm" / "fake_spec.py")
    assert loc is not None and loc.loader is not None
    module = importlib.util.module_from_spec(loc)
    loc.loader.exec_module(module)
    return module


per_request = _fake_spec().per_request


def make_cell(kind: str = "offline", version: str = "0.33.0", **kw: Any) -> Cell:
    workload = kw.pop("workload", {})
    fields: dict[str, Any] = {
        "cell_id": "c0123456789",
        "label": "test cell",
        "engine": "vllm",
        "version": version,
        "template": V.TEMPLATES[kind],
        "model": "Qwen/Qwen3-8B",
        "sampling": Sampling(temperature=0.0, max_tokens=16),
        "workload": CellWorkload(kind=kind, num_prompts=4, input_len=64,
                                 concurrency=2, **workload),
    }
    fields.update(kw)
    return Cell(**fields)


def planned(cell: Cell) -> Cell:
    """What the planner stores: the cell with its engine args and env filled in."""
    return cell.model_copy(update={"engine_args": V.engine_args(cell),
                                   "env": V.engine_env(cell)})


def spec(method: str = "mtp", k: int = 1, **kw: Any) -> SpecParams:
    return SpecParams(method=method, num_speculative_tokens=k, **kw)


# --- versions ------------------------------------------------------------------------------


def test_adapter_and_versions() -> None:
    assert adapter("vllm") is V
    assert V.resolve_version(None) == "0.33.0" == cat.releases()[-1]
    assert V.resolve_version("v0.17.1+cu129") == "0.17.1"
    assert V.resolve_version("0.9.2") == "0.9.2"
    assert V.resolve_version("0.34.1") == "0.33.0"  # unknown: the nearest known release
    with pytest.raises(PlanRejected) as err:
        V.resolve_version("latest")
    assert err.value.field == "version" and "0.33.0" in err.value.accepted
    assert "latest" in str(err.value)


# --- engine arguments per release ----------------------------------------------------------

CASES: dict[str, dict[str, Any]] = {
    "baseline": {},
    "mtp_glm_ocr": {"spec": spec("mtp"), "extra_speculative_config": {"method": "glm_ocr_mtp"}},
    "eagle3_strict": {"spec": spec("eagle3", 3, draft_model="org/eagle3-head",
                                   rejection_sample_method="strict")},
    "eagle3_probabilistic": {"spec": spec("eagle3", 3, draft_model="org/eagle3-head",
                                          rejection_sample_method="probabilistic")},
    "ngram": {"spec": spec("ngram", 4, prompt_lookup_min=2, prompt_lookup_max=5)},
    "draft_model": {"spec": spec("draft_model", 4, draft_model="Qwen/Qwen3-0.6B")},
    "graph_full": {"cudagraph_mode": "FULL"},
    "encoder_graph": {"encoder_cudagraph": True,
                      "compilation_config": {"encoder_cudagraph_max_images_per_batch": 4},
                      "workload": {"modality": "image", "images_per_prompt": 1}},
    "parallel": {"tensor_parallel_size": 2, "data_parallel_size": 2, "expert_parallel": True,
                 "mm_encoder_tp_mode": "data", "trust_remote_code": True},
}


@pytest.mark.parametrize("version", FOUR)
@pytest.mark.parametrize("case", sorted(CASES))
def test_engine_args_hold_only_keys_the_release_accepts(version: str, case: str) -> None:
    try:
        args = V.engine_args(make_cell(version=version, **CASES[case]))
    except PlanRejected as exc:
        # A refusal names the key in its field and message and lists what is accepted.
        key = exc.field.rsplit(".", 1)[-1]
        assert key and key in str(exc) and exc.accepted, exc
        return
    assert set(args) <= set(cat.engine_arg_keys(version))
    assert set(args.get("speculative_config", {})) <= set(cat.spec_config_keys(version))
    assert set(args.get("compilation_config", {})) <= set(cat.compilation_config_keys(version))
    assert args["disable_log_stats"] is False
    assert args["model"] == "Qwen/Qwen3-8B" and args["seed"] == 0
    assert ("trust_remote_code" in args) == (case == "parallel")
    method = args.get("speculative_config", {}).get("method")
    assert method is None or method in cat.spec_methods(version)


EXPECTED_OUTCOME = {
    # (case, version) -> the field of the PlanRejected; everything else must plan.
    ("eagle3_strict", "0.11.0"): "speculative_config.rejection_sample_method",
    ("eagle3_strict", "0.17.1"): "speculative_config.rejection_sample_method",
    ("eagle3_probabilistic", "0.11.0"): "speculative_config.rejection_sample_method",
    ("eagle3_probabilistic", "0.17.1"): "speculative_config.rejection_sample_method",
    ("draft_model", "0.11.0"): "spec.method",
    ("encoder_graph", "0.11.0"): "compilation_config.encoder_cudagraph_max_images_per_batch",
    ("encoder_graph", "0.17.1"): "compilation_config.encoder_cudagraph_max_images_per_batch",
}


@pytest.mark.parametrize("version", FOUR)
@pytest.mark.parametrize("case", sorted(CASES))
def test_which_cells_each_release_refuses(version: str, case: str) -> None:
    expected = EXPECTED_OUTCOME.get((case, version))
    if expected is None:
        V.engine_args(make_cell(version=version, **CASES[case]))
        return
    with pytest.raises(PlanRejected) as err:
        V.engine_args(make_cell(version=version, **CASES[case]))
    assert err.value.field == expected


def spec_cfg(case: str, version: str) -> dict[str, Any]:
    return dict(V.engine_args(make_cell(version=version, **CASES[case]))["speculative_config"])


@pytest.mark.parametrize("version", FOUR)
def test_model_specific_mtp_method_becomes_mtp(version: str) -> None:
    assert spec_cfg("mtp_glm_ocr", version) == {"method": "mtp", "num_speculative_tokens": 1}


def test_rejection_methods_across_the_rename() -> None:
    assert spec_cfg("eagle3_strict", "0.20.2")["rejection_sample_method"] == "strict"
    assert spec_cfg("eagle3_strict", "0.33.0")["rejection_sample_method"] == "standard"
    new = spec_cfg("eagle3_probabilistic", "0.33.0")
    assert new["rejection_sample_method"] == "standard"
    assert new["draft_sample_method"] == "probabilistic"
    assert spec_cfg("eagle3_probabilistic", "0.20.2")["rejection_sample_method"] == (
        "probabilistic")


def test_encoder_graph_keys_across_the_rename() -> None:
    def comp(version: str) -> dict[str, Any]:
        args = V.engine_args(make_cell(version=version, **CASES["encoder_graph"]))
        return dict(args["compilation_config"])

    assert comp("0.19.1") == {"cudagraph_mm_encoder": True,
                              "encoder_cudagraph_max_images_per_batch": 4}
    for version in ("0.20.2", "0.33.0"):
        assert comp(version) == {"cudagraph_mm_encoder": True,
                                 "encoder_cudagraph_max_vision_items_per_batch": 4}
    # Off is said where the key exists and left out where encoder graphs do not exist.
    off = {"encoder_cudagraph": False, "workload": {"modality": "image"}}
    assert V.engine_args(make_cell(version="0.33.0", **off))["compilation_config"] == {
        "cudagraph_mm_encoder": False}
    assert "compilation_config" not in V.engine_args(make_cell(version="0.17.1", **off))
    with pytest.raises(PlanRejected) as err:
        V.engine_args(make_cell(version="0.17.1", encoder_cudagraph=True))
    assert err.value.field == "compilation_config.cudagraph_mm_encoder"
    assert "cudagraph_mode" in err.value.accepted


def test_graph_mode_and_other_args() -> None:
    args = V.engine_args(make_cell(version="0.11.0", **CASES["parallel"]))
    assert args["data_parallel_size"] == 2 and args["enable_expert_parallel"] is True
    assert args["mm_encoder_tp_mode"] == "data" and args["trust_remote_code"] is True
    assert V.engine_args(make_cell(version="0.10.0", cudagraph_mode="FULL"))[
        "compilation_config"] == {"use_cudagraph": True, "full_cuda_graph": True}
    with pytest.raises(PlanRejected) as err:
        V.engine_args(make_cell(version="0.10.0", mm_encoder_tp_mode="data"))
    assert err.value.field == "engine_argument.mm_encoder_tp_mode"
    with pytest.raises(PlanRejected):
        V.engine_args(make_cell(cudagraph_mode="FULL",
                                compilation_config={"cudagraph_mode": "piecewise"}))
    text = V.engine_args(make_cell())
    assert text["max_model_len"] >= 64 + 16 and "limit_mm_per_prompt" not in text
    image = V.engine_args(make_cell(workload={"modality": "image", "images_per_prompt": 2}))
    assert image["limit_mm_per_prompt"] == {"image": 2} and "max_model_len" not in image


def test_mtp_before_generic_method_needs_the_model_type() -> None:
    deepseek = make_cell(version="0.10.0", model="deepseek-ai/DeepSeek-V3", spec=spec("mtp"))
    assert V.engine_args(deepseek)["speculative_config"]["method"] == "deepseek_mtp"
    glm = make_cell(version="0.10.2", model="zai-org/GLM-4.5-Air", spec=spec("mtp"))
    assert V.engine_args(glm)["speculative_config"]["method"] == "deepseek_mtp"
    with pytest.raises(PlanRejected) as err:
        V.engine_args(make_cell(version="0.10.0", spec=spec("mtp")))
    assert "Qwen/Qwen3-8B" in str(err.value) and "deepseek_mtp" in err.value.accepted


def test_draft_methods_need_a_draft() -> None:
    with pytest.raises(PlanRejected) as err:
        V.engine_args(make_cell(spec=spec("eagle3", 3)))
    assert err.value.field == "spec.draft_model"


def test_workload_limits_per_release() -> None:
    mm = {"workload": {"modality": "image", "images_per_prompt": 1}}
    with pytest.raises(PlanRejected) as err:
        V.engine_args(make_cell("mm_processor", "0.11.0", **mm))
    assert err.value.field == "workload.kind"
    V.engine_args(make_cell("mm_processor", "0.17.1", **mm))
    with pytest.raises(PlanRejected):
        V.engine_args(make_cell("mm_processor", "0.33.0"))  # text has no encoder to measure
    video = {"workload": {"modality": "video", "videos_per_prompt": 1}}
    with pytest.raises(PlanRejected):
        V.engine_args(make_cell("serve", "0.11.0", **video))
    V.engine_args(make_cell("serve", "0.17.1", **video))
    eos = {"sampling": Sampling(temperature=0.0, max_tokens=16, ignore_eos=False)}
    with pytest.raises(PlanRejected) as err:
        V.engine_args(make_cell("serve", "0.17.1", **eos))
    assert err.value.field == "sampling.ignore_eos"
    V.engine_args(make_cell("serve", "0.11.0", **eos))  # before the bench forced it
    V.engine_args(make_cell("offline", "0.33.0", **eos))


# --- environment ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", FOUR)
def test_model_runner_env(version: str) -> None:
    v2 = make_cell(version=version, model_runner="v2")
    v1 = make_cell(version=version, model_runner="v1")
    if cat.has_env_var(V.RUNNER_ENV, version):
        assert V.engine_env(v2) == {V.RUNNER_ENV: "1"}
        assert V.engine_env(v1) == {V.RUNNER_ENV: "0"}
        assert V.engine_env(planned(v2)) == {V.RUNNER_ENV: "1"}  # idempotent
    else:
        with pytest.raises(PlanRejected) as err:
            V.engine_env(v2)
        assert err.value.field == "model_runner" and err.value.accepted == ["v1"]
        assert V.engine_env(v1) == {}


def test_env_names_checked_per_release() -> None:
    ok = {"VLLM_ATTENTION_BACKEND": "FLASH_ATTN", "NCCL_DEBUG": "INFO",
          "CUDA_VISIBLE_DEVICES": "0,1", "TORCH_LOGS": "recompiles"}
    assert V.engine_env(make_cell(version="0.11.0", env=ok)) == ok
    with pytest.raises(PlanRejected) as err:
        V.engine_env(make_cell(version="0.33.0", env={"VLLM_ATTENTION_BACKEND": "FLASH_ATTN"}))
    assert "VLLM_USE_V2_MODEL_RUNNER" in err.value.accepted
    assert all(n.startswith("VLLM_") for n in err.value.accepted)
    for name in ("VLLM_API_KEY", "VLLM_PLUGINS", "LD_PRELOAD", "PYTHONPATH", "HF_TOKEN"):
        with pytest.raises(PlanRejected) as err:
            V.engine_env(make_cell(env={name: "x"}))
        assert err.value.field == f"env.{name}"
    with pytest.raises(PlanRejected):
        V.engine_env(make_cell(model_runner="v2", env={V.RUNNER_ENV: "0"}))


def test_offline_cells_of_the_spec_axis_profile_one_batch() -> None:
    profiled = [make_cell(spec=spec("eagle3", 3, draft_model="org/eagle3-head")),
                make_cell(varies={"spec": "no_spec", "graph": "eager"})]
    for cell in profiled:
        assert V.engine_env(cell) == {V.PROFILE_ENV: "1"}
        assert V.engine_env(planned(cell)) == {V.PROFILE_ENV: "1"}  # idempotent
    # Nothing speculates beside it, or the script is not the offline one.
    for cell in (make_cell(varies={"graph": "eager"}),
                 make_cell("serve", spec=spec("ngram", 3))):
        assert V.engine_env(cell) == {}
    # Only the plan sets it.
    for cell in (make_cell(env={V.PROFILE_ENV: "1"}),
                 make_cell(spec=spec("ngram", 3), env={V.PROFILE_ENV: "0"})):
        with pytest.raises(PlanRejected) as err:
            V.engine_env(cell)
        assert err.value.field == f"env.{V.PROFILE_ENV}"


# --- argv ----------------------------------------------------------------------------------


def flat(lines: list[list[str]]) -> list[str]:
    return [a for line in lines for a in line]


@pytest.mark.parametrize("version", FOUR)
def test_serve_and_bench_argv(version: str) -> None:
    cell = planned(make_cell("serve", version, spec=spec("ngram", 4), enforce_eager=True,
                             trust_remote_code=True))
    ctx = V.template_context(cell)
    serve = flat(ctx["serve_args"])
    assert serve[:2] == ["serve", "Qwen/Qwen3-8B"]
    accepted = set(cat.engine_cli_flags(version))
    for arg in serve[2:]:
        if arg.startswith("--"):
            assert arg in accepted or "--" + arg.removeprefix("--no-") in accepted, arg
    assert "--enforce-eager" in serve and "--trust-remote-code" in serve
    assert "--disable-log-stats" not in serve  # the server logs stats by default
    sc = json.loads(serve[serve.index("--speculative-config") + 1])
    assert sc == cell.engine_args["speculative_config"]
    bench = flat(ctx["bench_args"])
    assert bench[:2] == ["bench", "serve"]
    for flag, value in (("--temperature", "0.0"), ("--top-p", "1.0"), ("--seed", "0"),
                        ("--backend", "openai"), ("--dataset-name", "random"),
                        ("--random-input-len", "64"), ("--random-output-len", "16"),
                        ("--max-concurrency", "2")):
        assert bench[bench.index(flag) + 1] == value
    assert "--ignore-eos" in bench and "--num-prompts" not in bench
    off = planned(make_cell("serve", version))
    assert "--no-enforce-eager" in flat(V.template_context(off)["serve_args"])


def test_bench_argv_for_chat_and_images() -> None:
    cell = planned(make_cell("serve", workload={"modality": "image", "images_per_prompt": 2}))
    bench = flat(V.template_context(cell)["bench_args"])
    assert bench[bench.index("--backend") + 1] == "openai-chat"
    assert bench[bench.index("--endpoint") + 1] == "/v1/chat/completions"
    assert bench[bench.index("--dataset-name") + 1] == "random-mm"
    assert json.loads(bench[bench.index("--random-mm-limit-mm-per-prompt") + 1]) == {
        "image": 2, "video": 0}
    assert ast.literal_eval(bench[bench.index("--random-mm-bucket-config") + 1]) == {
        V.IMAGE_BUCKET: 1.0}
    mm = planned(make_cell("mm_processor", encoder_cudagraph=True,
                           workload={"modality": "image", "images_per_prompt": 1}))
    args = flat(V.template_context(mm)["mm_bench_args"])
    assert args[:4] == ["bench", "mm-processor", "--model", "Qwen/Qwen3-8B"]
    assert json.loads(args[args.index("--compilation-config") + 1]) == {
        "cudagraph_mm_encoder": True}


def test_estimate_is_rough_but_ordered() -> None:
    budget = Budget(runs=5, warmups=1)
    eager = V.estimate_seconds(make_cell(enforce_eager=True), budget)
    graph = V.estimate_seconds(make_cell(), budget)
    mm = V.estimate_seconds(make_cell("mm_processor", workload={"modality": "image",
                                                                "images_per_prompt": 1}), budget)
    assert 0 < eager < graph < mm


# --- rendering -----------------------------------------------------------------------------

WORKLOADS: dict[str, tuple[str, dict[str, Any]]] = {
    "offline_text": ("offline", {}),
    "offline_chat": ("offline", {"api": "chat"}),
    "offline_image_chat": ("offline", {"api": "chat", "modality": "image",
                                       "images_per_prompt": 2}),
    "offline_image": ("offline", {"modality": "image", "images_per_prompt": 1}),
    "offline_video": ("offline", {"modality": "video", "videos_per_prompt": 1}),
    "serve_text": ("serve", {}),
    "serve_chat": ("serve", {"api": "chat"}),
    "serve_image": ("serve", {"modality": "image", "images_per_prompt": 1}),
    "serve_video": ("serve", {"modality": "video", "videos_per_prompt": 1}),
    "mm_image": ("mm_processor", {"modality": "image", "images_per_prompt": 2}),
    "mm_video": ("mm_processor", {"modality": "video", "videos_per_prompt": 1}),
}


def render(cell: Cell, budget: Budget | None = None) -> str:
    plan = Plan(engine="vllm", engine_version=cell.version, gpu_kind="h100", question="q",
                cells=[cell], budget=budget or Budget())
    return render_cell(plan, cell).text


@pytest.mark.parametrize("version", FOUR)
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_every_template_renders_and_parses(version: str, workload: str) -> None:
    kind, w = WORKLOADS[workload]
    try:
        cell = planned(make_cell(kind, version, workload=w, spec=spec("ngram", 3)))
    except PlanRejected as exc:
        # Only the release gaps checked above may stop a workload from planning.
        assert (kind, version) == ("mm_processor", "0.11.0") or (
            workload == "serve_video" and version == "0.11.0"), exc
        return
    text = render(cell)
    ast.parse(text)
    assert "trust_remote_code" not in text and "--trust-remote-code" not in text
    head = text.index("os.environ.update(CELL_ENV)")
    assert "import vllm" not in text[:head]  # env first, engine after
    # Offline scripts can keep their engine between rounds (`run/live.py`); the rest run once.
    entry = "main_live(start, measure_runs)" if kind == "offline" else "main(measure)"
    assert f'if __name__ == "__main__":\n    {entry}' in text


def test_trust_remote_code_only_when_the_cell_says_so() -> None:
    cell = planned(make_cell(trust_remote_code=True))
    assert "'trust_remote_code': True" in render(cell)


# --- running the rendered scripts against the fake vLLM ------------------------------------


def run_script(text: str, tmp_path: Path, extra_env: dict[str, str] | None = None,
               runs: int = 3) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    script = tmp_path / "cell.py"
    script.write_text(text)
    record = tmp_path / "record.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": str(STUB),
        "PATH": f"{STUB / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "TRIAGEBOT_RESULT": str(tmp_path / "result.json"),
        "TRIAGEBOT_RUNS": str(runs),
        "TRIAGEBOT_SERVER_LOG": str(tmp_path / "server.log"),
        "TRIAGEBOT_BENCH_LOG": str(tmp_path / "bench.log"),
        "FAKE_VLLM_RECORD": str(record),
        "FAKE_VLLM_SERVER_PIDFILE": str(tmp_path / "server.pid"),
        **(extra_env or {}),
    }
    proc = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    result = json.loads((tmp_path / "result.json").read_text())
    RunResult.model_validate(result)
    events = [json.loads(line) for line in record.read_text().splitlines()] \
        if record.exists() else []
    assert (proc.returncode == 0) == (result["status"] == "ok"), proc.stdout + proc.stderr
    return result, events


def expected_spec(k: int, requests: int) -> dict[str, Any]:
    one = per_request(k)
    return {"num_drafts": one["num_drafts"] * requests,
            "num_draft_tokens": one["num_draft_tokens"] * requests,
            "num_accepted_tokens": one["num_accepted_tokens"] * requests,
            "per_position_accepted": [v * requests for v in one["per_position_accepted"]]}


@pytest.mark.parametrize("api", ["generate", "chat"])
def test_offline_script_against_fake_vllm(tmp_path: Path, api: str) -> None:
    cell = planned(make_cell(spec=spec("eagle3", 3, draft_model="org/eagle3-head"),
                             workload={"api": api}))
    result, events = run_script(render(cell, Budget(warmups=2, runs=5)), tmp_path, runs=3)
    assert result["status"] == "ok", result.get("error")
    init = next(e for e in events if e["event"] == "llm_init")
    assert init["kwargs"] == cell.engine_args  # every kwarg exactly as rendered
    assert init["kwargs"]["disable_log_stats"] is False
    assert init["kwargs"]["speculative_config"] == {
        "method": "eagle3", "num_speculative_tokens": 3, "model": "org/eagle3-head"}
    sampling = next(e for e in events if e["event"] == "sampling_params")["kwargs"]
    assert sampling == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 16, "seed": 0,
                        "ignore_eos": True}
    batches = [e for e in events if e["event"] == "batch"]
    assert len(batches) == 2 + 3 and {b["api"] for b in batches} == {api}
    # Warm-up drafts are not counted: 3 measured runs of 4 requests.
    assert result["spec"] == expected_spec(3, 3 * 4)
    assert [r["output_tokens"] for r in result["runs"]] == [4 * 16] * 3
    assert result["warmups"] == 2 and result["outputs_digest"]
    assert result["engine_version"] == "0.33.0"
    assert result["env"]["engine_commit"] == "0123abc45"


def test_a_release_without_the_profiled_methods_still_runs_and_says_so(tmp_path: Path) -> None:
    # The fake vLLM has no model runner or rejection sampler: nothing can be profiled,
    # no extra batch runs, and the runs are measured as ever.
    cell = planned(make_cell(spec=spec("ngram", 3)))
    assert cell.env == {V.PROFILE_ENV: "1"}
    result, events = run_script(render(cell, Budget(warmups=1, runs=2)), tmp_path, runs=2,
                                extra_env=cell.env)
    assert result["status"] == "ok", result.get("error")
    assert len([e for e in events if e["event"] == "batch"]) == 1 + 2
    profile = result["step_profile"]
    assert profile["steps"] == 0 and profile.get("step_s") is None
    assert profile["notes"][0] == "the step was not profiled"
    assert any(n.startswith("execute_model not measured: this release has no vllm.v1.worker."
                            "gpu_model_runner.GPUModelRunner.execute_model")
               for n in profile["notes"])
    assert any(n.startswith("rejection not measured") for n in profile["notes"])


def test_an_offline_run_repeats_its_batch_until_it_has_lasted_min_run_s(tmp_path: Path) -> None:
    """An offline script can size a measured run by the clock as it goes
    (TRIAGEBOT_MIN_RUN_S; bench/cpu_noise.py's `live:S` ways), not by a batch count fixed
    from the warm-ups: every run lasts at least that long and counts the tokens of every
    batch it ran."""
    cell = planned(make_cell())
    result, events = run_script(render(cell, Budget(warmups=0, runs=3)), tmp_path, runs=3,
                                extra_env={"TRIAGEBOT_MIN_RUN_S": "0.05"})
    assert result["status"] == "ok", result.get("error")
    runs = result["runs"]
    assert len(runs) == 3
    for run in runs:
        assert run["seconds"] >= 0.05
        assert run["output_tokens"] == run["batches"] * 4 * 16
    batches = [e for e in events if e["event"] == "batch"]
    assert len(batches) == sum(r["batches"] for r in runs)  # no batch spent on sizing


def test_offline_script_without_spec_and_with_video(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    cell = planned(make_cell(workload={"modality": "video", "videos_per_prompt": 1}))
    result, events = run_script(render(cell), tmp_path, runs=2)
    assert result["status"] == "ok", result.get("error")
    assert result["spec"] is None and len(result["runs"]) == 2
    first = next(e for e in events if e["event"] == "batch")["first"]
    assert first["prompt"].startswith("<user> <video> Request 1.")
    assert "shape=(16, 240, 320, 3), dtype=uint8" in first["multi_modal_data"]["video"]


def test_offline_script_reports_a_failed_engine(tmp_path: Path) -> None:
    cell = planned(make_cell())
    text = render(cell).replace("LLM(**LLM_ARGS)", "LLM(**LLM_ARGS, disable_log_stats=True)")
    result, _ = run_script(text, tmp_path)
    assert result["status"] == "failed" and "TypeError" in result["error"]


def server_stopped(tmp_path: Path) -> bool:
    pid = int((tmp_path / "server.pid").read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def port_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("version", ["0.11.0", "0.33.0"])
def test_serve_script_against_fake_vllm(tmp_path: Path, version: str) -> None:
    cell = planned(make_cell("serve", version, spec=spec("ngram", 2)))
    result, events = run_script(render(cell, Budget(warmups=1, runs=5)), tmp_path,
                                {"FAKE_VLLM_VERSION": version}, runs=2)
    assert result["status"] == "ok", result.get("error")
    serve = next(e for e in events if e["event"] == "serve")
    port = int(serve["argv"][serve["argv"].index("--port") + 1])
    assert serve["argv"][:-4] == flat(V.template_context(cell)["serve_args"])[1:]
    assert server_stopped(tmp_path) and port_closed(port)
    benches = [e["argv"] for e in events if e["event"] == "bench_serve"]
    assert len(benches) == 1 + 2
    warm = benches[0]
    assert warm[warm.index("--num-prompts") + 1] == str(V.template_context(cell)[
        "warmup_prompts"])
    # 0.33.0 reads the bench's spec_decode_* keys, 0.11.0 (no such keys) its own scrape
    # of /metrics; both count only the 2 measured runs of 4 requests.
    assert result["spec"] == expected_spec(2, 2 * 4)
    run = result["runs"][0]
    assert run["output_tokens"] == 4 * 16 and run["tok_s"] == pytest.approx(1000.0)
    assert (run["ttft_ms"], run["tpot_ms"], run["itl_ms"]) == (20.0, 5.0, 4.5)
    assert result["engine_version"] == version and "fake server" in result["log_tail"]


def test_serve_script_kills_a_server_that_ignores_sigterm(tmp_path: Path) -> None:
    cell = planned(make_cell("serve"))
    result, _ = run_script(render(cell, Budget(warmups=0)), tmp_path,
                           {"FAKE_VLLM_IGNORE_SIGTERM": "1", "TRIAGEBOT_STOP_GRACE_S": "1"},
                           runs=1)
    assert result["status"] == "ok" and result["spec"] is None
    assert server_stopped(tmp_path)


def test_serve_script_reports_a_server_that_dies(tmp_path: Path) -> None:
    cell = planned(make_cell("serve"))
    result, _ = run_script(render(cell), tmp_path, {"FAKE_VLLM_SERVE_FAIL": "1"})
    assert result["status"] == "failed"
    assert "before it was ready" in result["error"] and "no such model" in result["error"]


def test_mm_processor_script_against_fake_vllm(tmp_path: Path) -> None:
    tok_s = {}
    for on in (False, True):
        cell = planned(make_cell("mm_processor", encoder_cudagraph=on,
                                 workload={"modality": "image", "images_per_prompt": 1}))
        out = tmp_path / str(on)
        out.mkdir()
        result, events = run_script(render(cell, Budget(warmups=1)), out, runs=2)
        assert result["status"] == "ok", result.get("error")
        assert len([e for e in events if e["event"] == "bench_mm"]) == 1 + 2
        assert len(result["runs"]) == 2 and result["runs"][0]["output_tokens"] == 4
        assert len(result["mm_processor"]["runs"]) == 2
        tok_s[on] = result["runs"][0]["tok_s"]
    # The fake encodes faster with encoder graphs (80 vs 100 ms median): 1000 / median.
    assert tok_s == {False: pytest.approx(10.0), True: pytest.approx(12.5)}
