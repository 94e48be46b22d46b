"""SGLang engine module and templates: argument names per release, refusals, and the
rendered scripts run against a fake `sglang` package (tests/fakes/sglang_stub)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.scripts import assert_gone, run_cell_script
from triagebot.engines import adapter, sglang
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell, CellWorkload, Plan, Sampling, SpecParams
from triagebot.render import render_cell
from triagebot.run_result import RunResult

STUB = Path(__file__).resolve().parents[1] / "fakes" / "sglang_stub"
NUM_PROMPTS, MAX_TOKENS, RUNS, WARMUPS = 3, 8, 2, 1
# What the fake reports per request with speculation on (sglang/_fake.py).
VERIFY_CT, CORRECT, PER_POSITION = 4, 6, [3, 2, 1]


def make_cell(
    version: str | None = "0.5.23",
    kind: str = "offline",
    spec: SpecParams | None = None,
    **over: Any,
) -> Cell:
    fields: dict[str, Any] = {
        "cell_id": "c0123456789",
        "label": "sglang test cell",
        "engine": "sglang",
        "version": version,
        "template": sglang.TEMPLATES[kind],
        "model": "Qwen/Qwen3-8B",
        "spec": spec,
        "sampling": Sampling(temperature=0.0, max_tokens=MAX_TOKENS),
        "workload": CellWorkload(kind=kind, num_prompts=NUM_PROMPTS, input_len=5,
                                 concurrency=2 if kind == "serve" else None),
    }
    fields.update(over)
    return Cell(**fields)


def planned(cell: Cell) -> Cell:
    """What the planner stores: engine_args and env computed at plan time."""
    return cell.model_copy(update={"engine_args": sglang.engine_args(cell),
                                   "env": sglang.engine_env(cell)})


def eagle3(k: int = 3) -> SpecParams:
    return SpecParams(method="eagle3", num_speculative_tokens=k, draft_model="org/eagle3-draft")


def plan_for(cell: Cell) -> Plan:
    return Plan(engine="sglang", gpu_kind="h100", question="does spec help?", cells=[cell],
                budget=Budget(runs=RUNS, warmups=WARMUPS), plan_hash="abc123")


# --- versions ----------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "resolved"), [
    (None, "0.5.23"),
    ("0.5.23", "0.5.23"),
    ("0.5.15", "0.5.14"),
    ("0.5.14rc1", "0.5.12"),
    ("0.4.10", "0.4.10.post2"),
    ("0.5.9.post1", "0.5.8"),
])
def test_resolve_version_maps_to_nearest_lower_known(given: str | None, resolved: str) -> None:
    assert sglang.resolve_version(given) == resolved


@pytest.mark.parametrize(("version", "nearest"), [("0.4.9", "0.4.10.post2"),
                                                  ("0.3.6", "0.4.10.post2"),
                                                  ("0.5.24", "0.5.23"), ("0.6.0", "0.5.23")])
def test_versions_outside_the_table_plan_on_the_nearest_known(version: str,
                                                               nearest: str) -> None:
    assert sglang.resolve_version(version) == nearest


def test_a_version_that_is_not_one_is_refused_with_the_range() -> None:
    with pytest.raises(PlanRejected) as err:
        sglang.resolve_version("latest")
    assert err.value.field == "version" and "0.4.10.post2 to 0.5.23" in str(err.value)


def test_adapter_finds_the_module() -> None:
    assert adapter("sglang") is sglang


# --- speculative arguments ---------------------------------------------------------------


@pytest.mark.parametrize(("version", "algorithm"), [
    ("0.4.10.post2", "NEXTN"), ("0.5.12", "NEXTN"), ("0.5.22", "NEXTN"), ("0.5.23", "EAGLE"),
])
def test_mtp_algorithm_name_per_release(version: str, algorithm: str) -> None:
    args = sglang.engine_args(make_cell(version, spec=SpecParams(method="mtp",
                                                                  num_speculative_tokens=2)))
    assert args["speculative_algorithm"] == algorithm
    assert "speculative_draft_model_path" not in args


def test_k_sets_steps_topk_and_draft_tokens_together() -> None:
    args = sglang.engine_args(make_cell(spec=eagle3(k=5)))
    assert args["speculative_algorithm"] == "EAGLE3"
    assert args["speculative_draft_model_path"] == "org/eagle3-draft"
    assert (args["speculative_num_steps"], args["speculative_eagle_topk"],
            args["speculative_num_draft_tokens"]) == (5, 1, 6)


@pytest.mark.parametrize(("method", "too_old", "first", "algorithm"), [
    ("draft_model", "0.4.10.post2", "0.5.2", "STANDALONE"),
    ("ngram", "0.5.2", "0.5.5", "NGRAM"),
    ("dflash", "0.5.12", "0.5.14", "DFLASH"),
])
def test_algorithms_appear_in_their_release(
    method: str, too_old: str, first: str, algorithm: str
) -> None:
    draft = None if method == "ngram" else "org/draft"
    spec = SpecParams(method=method, num_speculative_tokens=3, draft_model=draft)
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(make_cell(too_old, spec=spec))
    assert err.value.field == "spec.method"
    assert method not in err.value.accepted and "eagle3" in err.value.accepted
    args = sglang.engine_args(make_cell(first, spec=spec))
    assert args["speculative_algorithm"] == algorithm
    assert args["speculative_num_draft_tokens"] == 4


def test_ngram_is_a_chain_of_k_and_dflash_uses_one_step() -> None:
    ngram = sglang.engine_args(make_cell(spec=SpecParams(method="ngram",
                                                         num_speculative_tokens=4)))
    assert ngram["speculative_ngram_max_bfs_breadth"] == 1
    assert "speculative_num_steps" not in ngram
    dflash = sglang.engine_args(make_cell(spec=SpecParams(
        method="dflash", num_speculative_tokens=7, draft_model="org/dflash")))
    assert dflash["speculative_num_steps"] == 1 and dflash["speculative_num_draft_tokens"] == 8


@pytest.mark.parametrize("method", ["suffix", "medusa"])
def test_methods_sglang_lacks_are_refused(method: str) -> None:
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(make_cell(spec=SpecParams(method=method, num_speculative_tokens=2)))
    assert err.value.field == "spec.method"
    assert f"spec.method={method}" in str(err.value)
    assert {"mtp", "eagle", "eagle3", "ngram", "draft_model", "dflash"} == set(
        err.value.accepted)


def test_eagle_without_a_draft_is_refused() -> None:
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(make_cell(spec=SpecParams(method="eagle", num_speculative_tokens=2)))
    assert err.value.field == "spec.draft_model"


# --- CUDA graphs and parallelism ---------------------------------------------------------


@pytest.mark.parametrize(("version", "max_bs", "bs"), [
    ("0.5.12", "cuda_graph_max_bs", "cuda_graph_bs"),
    ("0.5.14", "cuda_graph_max_bs_decode", "cuda_graph_bs_decode"),
    ("0.5.23", "cuda_graph_max_bs_decode", "cuda_graph_bs_decode"),
])
def test_cuda_graph_batch_size_names_per_release(version: str, max_bs: str, bs: str) -> None:
    cell = make_cell(version, compilation_config={"cuda_graph_max_bs": 32,
                                                  "cuda_graph_bs": [1, 2, 4]})
    args = sglang.engine_args(cell)
    assert args[max_bs] == 32 and args[bs] == [1, 2, 4]
    other = {"cuda_graph_max_bs", "cuda_graph_max_bs_decode"} - {max_bs}
    assert not other & set(args)


def test_per_phase_graph_names_are_refused_before_0_5_14() -> None:
    cell = make_cell("0.5.12", compilation_config={"cuda_graph_max_bs_prefill": 8})
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(cell)
    assert err.value.field == "compilation_config.cuda_graph_max_bs_prefill"
    assert err.value.accepted == ["cuda_graph_bs", "cuda_graph_max_bs"]
    assert sglang.engine_args(make_cell("0.5.14", compilation_config={
        "cuda_graph_max_bs_prefill": 8}))["cuda_graph_max_bs_prefill"] == 8


def test_bad_batch_size_is_refused() -> None:
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(make_cell(compilation_config={"cuda_graph_max_bs": "lots"}))
    assert err.value.field == "compilation_config.cuda_graph_max_bs"


@pytest.mark.parametrize("version", ["0.4.10.post2", "0.5.12", "0.5.14", "0.5.23"])
def test_enforce_eager_disables_cuda_graph(version: str) -> None:
    assert sglang.engine_args(make_cell(version, enforce_eager=True))["disable_cuda_graph"]
    assert "disable_cuda_graph" not in sglang.engine_args(make_cell(version))


def test_parallelism_seed_and_remote_code() -> None:
    plain = sglang.engine_args(make_cell())
    assert plain["tp_size"] == 1 and plain["random_seed"] == 0
    assert "trust_remote_code" not in plain and "dp_size" not in plain
    assert "ep_size" not in plain
    args = sglang.engine_args(make_cell(tensor_parallel_size=4, data_parallel_size=2,
                                        expert_parallel=True, trust_remote_code=True,
                                        revision="main"))
    assert (args["tp_size"], args["dp_size"], args["ep_size"]) == (4, 2, 4)
    assert args["trust_remote_code"] is True and args["revision"] == "main"


@pytest.mark.parametrize(("field", "value"), [
    ("cudagraph_mode", "FULL"),
    ("cudagraph_mode", "NONE"),
    ("model_runner", "v2"),
    ("encoder_cudagraph", True),
    ("mm_encoder_tp_mode", "data"),
])
def test_vllm_only_fields_are_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(make_cell(**{field: value}))
    assert err.value.field == field
    assert field in str(err.value)


def test_rejection_sampler_is_refused_by_name() -> None:
    spec = SpecParams(method="eagle3", num_speculative_tokens=2, draft_model="a/b",
                      rejection_sample_method="strict")
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(make_cell(spec=spec))
    assert err.value.field == "spec.rejection_sample_method"


def test_env_outside_sglang_is_refused() -> None:
    assert sglang.engine_env(make_cell(env={"SGLANG_SIMULATE_ACC_LEN": "2.5"})) == {
        "SGLANG_SIMULATE_ACC_LEN": "2.5"}
    with pytest.raises(PlanRejected) as err:
        sglang.engine_env(make_cell(env={"VLLM_USE_V1": "1"}))
    assert err.value.field == "env.VLLM_USE_V1"


# --- bench arguments ---------------------------------------------------------------------


def test_bench_args_and_module_per_release() -> None:
    cell = make_cell("0.5.23", kind="serve", spec=eagle3())
    ctx = sglang.template_context(cell)
    assert ctx["bench_module"] == "sglang.benchmark.serving"
    argv = ctx["bench_args"]
    assert argv[argv.index("--dataset-name") + 1] == "random"
    assert argv[argv.index("--max-concurrency") + 1] == "2"
    assert argv[argv.index("--random-output-len") + 1] == str(MAX_TOKENS)
    assert "--temperature" in argv and "--disable-ignore-eos" not in argv
    old = sglang.template_context(make_cell("0.5.12", kind="serve"))
    assert old["bench_module"] == "sglang.bench_serving"
    assert "--temperature" not in old["bench_args"]


def test_sampled_serving_needs_a_bench_with_temperature() -> None:
    hot = Sampling(temperature=0.7, max_tokens=8)
    with pytest.raises(PlanRejected) as err:
        sglang.engine_args(make_cell("0.5.12", kind="serve", sampling=hot))
    assert err.value.field == "sampling.temperature"
    assert sglang.engine_args(make_cell("0.5.12", kind="offline", sampling=hot))
    argv = sglang.template_context(make_cell("0.5.14", kind="serve", sampling=hot))["bench_args"]
    assert argv[argv.index("--temperature") + 1] == "0.7"


def test_estimate_is_positive_and_grows_with_runs() -> None:
    cell = make_cell(spec=eagle3())
    few = sglang.estimate_seconds(cell, Budget(runs=2))
    many = sglang.estimate_seconds(cell, Budget(runs=10))
    assert 0 < few < many


# --- rendering ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["offline", "serve"])
@pytest.mark.parametrize("version", ["0.4.10.post2", "0.5.12", "0.5.23"])
def test_templates_render_and_parse(kind: str, version: str) -> None:
    cell = planned(make_cell(version, kind=kind, spec=eagle3(), enforce_eager=True,
                             env={"SGLANG_SIMULATE_ACC_LEN": "2"}))
    text = render_cell(plan_for(cell), cell).text
    ast.parse(text)
    assert "trust_remote_code" not in text
    assert "main(measure)" in text


def test_trust_remote_code_is_printed_only_when_the_cell_says_so() -> None:
    cell = planned(make_cell(trust_remote_code=True))
    assert "'trust_remote_code': True" in render_cell(plan_for(cell), cell).text


# --- running the scripts against the fake ------------------------------------------------


def run_script(text: str, tmp_path: Path, **env: str) -> tuple[RunResult, list[dict[str, Any]]]:
    return run_cell_script(text, tmp_path, "FAKE_SGLANG_LOG", {"PYTHONPATH": str(STUB), **env})


def test_offline_script_reports_runs_and_spec_counters(tmp_path: Path) -> None:
    cell = planned(make_cell(spec=eagle3(k=3), env={"SGLANG_SIMULATE_ACC_LEN": "2"}))
    res, events = run_script(render_cell(plan_for(cell), cell).text, tmp_path)
    assert res.status == "ok", res.error
    assert res.engine == "sglang" and res.cell_id == cell.cell_id
    assert res.engine_version == "0.5.23" and res.warmups == WARMUPS
    assert len(res.runs) == RUNS
    assert all(r.output_tokens == NUM_PROMPTS * MAX_TOKENS for r in res.runs)
    n = RUNS * NUM_PROMPTS  # counters cover measured runs only
    assert res.spec is not None
    assert res.spec.num_drafts == n * VERIFY_CT
    assert res.spec.num_draft_tokens == n * VERIFY_CT * 3
    assert res.spec.num_accepted_tokens == n * CORRECT
    assert res.spec.per_position_accepted == [n * c for c in PER_POSITION]
    assert res.model_extra and res.model_extra["spec_source"] == "meta_info"
    assert res.outputs_digest is not None
    init = next(e for e in events if e["event"] == "engine_init")
    assert init["kwargs"] == cell.engine_args
    assert init["env"]["SGLANG_SIMULATE_ACC_LEN"] == "2"  # set before the engine started
    generates = [e for e in events if e["event"] == "generate"]
    assert len(generates) == WARMUPS + RUNS
    assert generates[0]["sampling_params"] == {"temperature": 0.0, "top_p": 1.0,
                                               "max_new_tokens": MAX_TOKENS,
                                               "ignore_eos": True}
    assert events[-1]["event"] == "shutdown"


def test_offline_old_release_derives_counters_from_verify_count(tmp_path: Path) -> None:
    cell = planned(make_cell("0.4.10.post2", spec=eagle3(k=2)))
    res, _ = run_script(render_cell(plan_for(cell), cell).text, tmp_path,
                        FAKE_SGLANG_SHAPE="verify_only")
    assert res.status == "ok", res.error
    n = RUNS * NUM_PROMPTS
    assert res.spec is not None
    assert res.spec.num_drafts == n * VERIFY_CT
    assert res.spec.num_draft_tokens == n * VERIFY_CT * 2
    assert res.spec.num_accepted_tokens == n * (MAX_TOKENS - VERIFY_CT)
    assert res.spec.per_position_accepted == []
    assert res.model_extra and res.model_extra["spec_source"] == "derived_from_verify_ct"
    assert res.outputs_digest is None  # 0.4.x text outputs carry no token ids


def test_offline_without_spec_has_no_counters(tmp_path: Path) -> None:
    cell = planned(make_cell())
    res, events = run_script(render_cell(plan_for(cell), cell).text, tmp_path)
    assert res.status == "ok" and res.spec is None
    assert "speculative_algorithm" not in events[0]["kwargs"]


def test_offline_engine_failure_is_recorded(tmp_path: Path) -> None:
    cell = planned(make_cell(spec=eagle3()))
    res, _ = run_script(render_cell(plan_for(cell), cell).text, tmp_path,
                        FAKE_SGLANG_FAIL="engine")
    assert res.status == "oom" and res.runs == []
    assert res.error and "out of memory" in res.error


def test_serve_script_benches_and_stops_the_server(tmp_path: Path) -> None:
    cell = planned(make_cell(kind="serve", spec=eagle3(k=3), enforce_eager=True))
    res, events = run_script(render_cell(plan_for(cell), cell).text, tmp_path)
    assert res.status == "ok", res.error
    assert len(res.runs) == RUNS
    for run in res.runs:
        assert run.output_tokens == NUM_PROMPTS * MAX_TOKENS
        assert run.tok_s > 0 and run.ttft_ms is not None
        assert run.tpot_ms == 1.5 and run.itl_ms == 1.25
    assert res.spec is None  # only an average accept length is available when served
    extra = res.model_extra or {}
    assert extra["accept_length"] == 2.5 and extra["accept_length_runs"] == [2.5] * RUNS
    start = next(e for e in events if e["event"] == "server_start")
    argv = start["argv"]
    for flag, value in (("--speculative-algorithm", "EAGLE3"), ("--speculative-num-steps", "3"),
                        ("--speculative-eagle-topk", "1"),
                        ("--speculative-num-draft-tokens", "4"),
                        ("--model-path", "Qwen/Qwen3-8B"), ("--host", "127.0.0.1")):
        assert argv[argv.index(flag) + 1] == value
    assert "--disable-cuda-graph" in argv and "--trust-remote-code" not in argv
    benches = [e for e in events if e["event"] == "bench"]
    assert len(benches) == WARMUPS + RUNS
    assert "--output-file" in benches[0]["argv"]
    assert_gone(start["pid"], start["helper_pid"])


def test_serve_start_failure_reports_the_log_and_cleans_up(tmp_path: Path) -> None:
    cell = planned(make_cell(kind="serve"))
    res, events = run_script(render_cell(plan_for(cell), cell).text, tmp_path,
                             FAKE_SGLANG_FAIL="start")
    assert res.status == "oom"  # the server log said so
    assert res.error and "before it was ready" in res.error
    start = next(e for e in events if e["event"] == "server_start")
    assert_gone(start["pid"], start["helper_pid"])
