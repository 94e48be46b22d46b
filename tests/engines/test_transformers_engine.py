"""transformers engine module and generate template, run for real on the tiny models.

The scripts build `tiny-random-llama` (and its draft) from a config, so they run on a CPU
with no downloads; each eager script takes a few seconds, mostly importing torch.

Reporters and runners bring their own transformers, so every script test runs twice: under
the project's locked environment (transformers 5.x) and under the locked 4.x environment in
tests/envs/transformers4, which `./dev test` syncs.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from triagebot.engines import adapter, standins
from triagebot.engines import transformers as tx
from triagebot.errors import PlanRejected
from triagebot.plan_model import Budget, Cell, CellWorkload, Plan, Sampling, SpecParams
from triagebot.render import render_cell
from triagebot.run_result import RunResult

NUM_PROMPTS, INPUT_LEN, MAX_TOKENS, K = 2, 48, 32, 3
RUNS, WARMUPS = 2, 1
ROOT = Path(__file__).resolve().parents[2]
PYTHONS = {
    "locked": Path(sys.executable),
    "transformers4": ROOT / "tests" / "envs" / "transformers4" / ".venv" / "bin" / "python",
}

pytest.importorskip("torch")
pytest.importorskip("transformers")


def make_cell(spec: SpecParams | None = None, **over: Any) -> Cell:
    fields: dict[str, Any] = {
        "cell_id": "c0123456789",
        "label": "transformers test cell",
        "engine": "transformers",
        "template": tx.TEMPLATES["offline"],
        "model": tx.TINY_TARGET,
        "spec": spec,
        "enforce_eager": True,
        "sampling": Sampling(temperature=0.0, max_tokens=MAX_TOKENS),
        "workload": CellWorkload(kind="offline", num_prompts=NUM_PROMPTS, input_len=INPUT_LEN),
    }
    fields.update(over)
    return Cell(**fields)


def draft(k: int = K, **over: Any) -> SpecParams:
    return SpecParams(method="draft_model", num_speculative_tokens=k, **over)


def ngram(k: int = K, **over: Any) -> SpecParams:
    return SpecParams(method="ngram", num_speculative_tokens=k, **over)


def planned(cell: Cell) -> Cell:
    """What the planner stores: the engine's arguments and environment on the cell."""
    return cell.model_copy(update={"engine_args": tx.engine_args(cell),
                                   "env": tx.engine_env(cell)})


def render(cell: Cell) -> str:
    plan = Plan(engine="transformers", gpu_kind="cpu", question="does spec help?",
                cells=[cell], budget=Budget(runs=RUNS, warmups=WARMUPS))
    return render_cell(plan, cell).text


def _script(where: Path, cell: Cell) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    script = where / "cell.py"
    script.write_text(render(planned(cell)))
    return script


@pytest.fixture(scope="module", params=sorted(PYTHONS))
def python(request: pytest.FixtureRequest) -> Path:
    """The interpreter the scripts run under: one per locked transformers major."""
    path = PYTHONS[request.param]
    if not path.exists():
        pytest.fail(f"{path} is missing: `./dev test` syncs tests/envs/{request.param}")
    return path


def run_script(cell: Cell, where: Path, python: Path, runs: int = RUNS) -> RunResult:
    script = _script(where, cell)
    result = where / "result.json"
    env = {**os.environ, "TRIAGEBOT_RESULT": str(result), "TRIAGEBOT_RUNS": str(runs)}
    proc = subprocess.run([str(python), str(script)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return RunResult.model_validate(json.loads(result.read_text()))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, python: Path) -> dict[str, RunResult]:
    """The three eager greedy cells, run once per environment for every test that reads them."""
    base = tmp_path_factory.mktemp("tx")
    cells = {"no_spec": make_cell(), "draft": make_cell(draft()), "ngram": make_cell(ngram())}
    return {name: run_script(cell, base / name, python) for name, cell in cells.items()}


def assert_consistent_spec(res: RunResult, k: int = K) -> None:
    spec = res.spec
    assert spec is not None
    assert 0 < spec.num_drafts <= spec.num_draft_tokens <= k * spec.num_drafts
    assert 0 < spec.num_accepted_tokens < spec.num_draft_tokens  # partial: 0 < rate < 1
    per_pos = spec.per_position_accepted
    assert len(per_pos) <= k
    assert per_pos == sorted(per_pos, reverse=True)
    assert sum(per_pos) == spec.num_accepted_tokens
    assert per_pos[0] <= spec.num_drafts


def assert_ran(res: RunResult) -> None:
    assert res.status == "ok" and res.error is None
    assert res.cell_id == "c0123456789" and res.engine == "transformers"
    assert res.engine_version and res.env.torch
    assert len(res.runs) == RUNS and res.warmups == WARMUPS
    for run in res.runs:
        # EOS is off, so every prompt generates exactly max_tokens.
        assert run.output_tokens == NUM_PROMPTS * MAX_TOKENS
        assert run.seconds > 0 and run.tok_s > 0
    extra = res.model_extra or {}
    assert extra["runs_agree"] is True
    # A CPU run used no CUDA, whatever its torch build; and took no CUDA graph reading.
    assert res.env.cuda == "none" and res.env.gpu_count == 0
    assert res.cuda_graphs is None


# --- scripts, run ---------------------------------------------------------------------


def test_no_spec_eager(results: dict[str, RunResult]) -> None:
    res = results["no_spec"]
    assert_ran(res)
    assert res.spec is None
    # Plain decoding: one target forward per generated token, no draft.
    assert (res.model_extra or {})["forward_passes"] == {
        "target": RUNS * NUM_PROMPTS * MAX_TOKENS, "draft": 0}


def test_draft_model_eager_counts_are_real_and_consistent(
    results: dict[str, RunResult],
) -> None:
    res = results["draft"]
    assert_ran(res)
    assert_consistent_spec(res)
    assert res.spec is not None
    passes = (res.model_extra or {})["forward_passes"]
    # Fewer verify steps than tokens; each drafted token cost one draft forward.
    assert passes["target"] < RUNS * NUM_PROMPTS * MAX_TOKENS
    assert passes["draft"] == res.spec.num_draft_tokens
    # Every verify step adds its accepted candidates plus one token of the target's own.
    steps_with_drafts = res.spec.num_drafts
    assert passes["target"] >= steps_with_drafts
    tokens = sum(r.output_tokens for r in res.runs)
    assert tokens == passes["target"] + res.spec.num_accepted_tokens


def test_ngram_eager_counts_are_real_and_consistent(results: dict[str, RunResult]) -> None:
    res = results["ngram"]
    assert_ran(res)
    assert_consistent_spec(res)
    assert res.spec is not None
    passes = (res.model_extra or {})["forward_passes"]
    assert passes["draft"] == 0
    tokens = sum(r.output_tokens for r in res.runs)
    assert tokens == passes["target"] + res.spec.num_accepted_tokens


def test_greedy_spec_is_lossless(results: dict[str, RunResult]) -> None:
    digests = {name: res.outputs_digest for name, res in results.items()}
    assert digests["no_spec"] is not None
    assert digests["draft"] == digests["no_spec"]
    assert digests["ngram"] == digests["no_spec"]


def test_compiled_ngram_cell_slow(tmp_path: Path, python: Path) -> None:
    """torch.compile of the target: about 20-40 s on 2 CPU cores with a cold inductor cache
    (most of it compiling), under 15 s with a warm one."""
    res = run_script(make_cell(ngram(), enforce_eager=False), tmp_path, python)
    assert_ran(res)
    assert_consistent_spec(res)


def test_pretrained_path_loads_local_weights(tmp_path: Path, python: Path) -> None:
    """Any model id but the tiny ones goes through from_pretrained; a local copy of the
    tiny pair stands in for real weights, so nothing is downloaded."""
    helpers = runpy.run_path(str(_script(tmp_path / "builder", make_cell(draft()))),
                             run_name="triagebot_test")
    target = helpers["build_tiny_target"]()
    helpers["build_tiny_draft"](target).save_pretrained(tmp_path / "draft")
    target.save_pretrained(tmp_path / "target")
    cell = make_cell(draft(draft_model=str(tmp_path / "draft")), model=str(tmp_path / "target"))
    res = run_script(cell, tmp_path / "run", python)
    assert_ran(res)
    assert_consistent_spec(res)


def test_counting_refuses_readings_no_verify_step_can_give(tmp_path: Path) -> None:
    """The script's counter turns an unexpected release into words, never into numbers."""
    helpers = runpy.run_path(str(_script(tmp_path, make_cell(ngram()))), run_name="triagebot_test")
    verify = helpers["verify_steps"]
    # Prompt of 10: prefill with 3 candidates keeps 2 (+1), then a step with none.
    assert verify([(13, 13), (1, 14)], 10) == ([(3, 2), (0, 0)], None)
    steps, reason = verify([(13, 13), (1, None)], 10)
    assert steps is None and "not followed by a decoding step" in reason
    steps, reason = verify([(11, 14)], 10)  # one candidate cannot add three tokens
    assert steps is None and "grew the sequence from 10 to 14" in reason
    tally = helpers["SpecTally"]()
    tally.add([(11, 14)], 10)
    tally.add([(13, 13)], 10)  # nothing is counted after the first bad reading
    assert tally.result() is None and "no verify step can do" in tally.unmeasured


# --- engine arguments -----------------------------------------------------------------


def test_adapter_and_versions() -> None:
    assert adapter("transformers") is tx
    assert tx.resolve_version(None) is None
    assert tx.resolve_version("5.23.0") == "5.23.0"
    assert tx.resolve_version("4.56") == "4.56"
    with pytest.raises(PlanRejected) as err:
        tx.resolve_version("4.40.2")
    assert err.value.field == "version" and "4.56" in str(err.value)


def test_no_spec_args() -> None:
    args = tx.engine_args(make_cell())
    assert args["assistant"] is None and args["compile"] is False
    assert args["max_new_tokens"] == MAX_TOKENS and args["do_sample"] is False
    assert args["cache_implementation"] == {"cuda": "static", "cpu": "dynamic"}
    assert args["tiny"] is True


def test_draft_and_lookup_mapping() -> None:
    args = tx.engine_args(make_cell(draft(4)))
    assert args["assistant"] == "draft" and args["assistant_model"] == tx.TINY_DRAFT
    assert args["num_assistant_tokens"] == 4 and args["stands_in_for"] is None
    assert args["num_assistant_tokens_schedule"] == "constant"
    assert args["assistant_confidence_threshold"] == 0.0

    args = tx.engine_args(make_cell(ngram(5, prompt_lookup_max=4)))
    assert args["assistant"] == "prompt_lookup" and args["prompt_lookup_num_tokens"] == 5
    assert args["max_matching_ngram_size"] == 4 and args["assistant_model"] is None


@pytest.mark.parametrize("method", ["eagle", "eagle3", "mtp", "medusa", "dflash"])
def test_model_based_methods_stand_in_as_draft(method: str) -> None:
    spec = SpecParams(method=method, num_speculative_tokens=2, draft_model="org/head-ckpt")
    args = tx.engine_args(make_cell(spec))
    assert args["assistant"] == "draft" and args["assistant_model"] == tx.TINY_DRAFT
    assert args["stands_in_for"] == method
    ctx = tx.template_context(planned(make_cell(spec)))
    assert any(method in note for note in ctx["notes"])


def test_suffix_stands_in_as_prompt_lookup() -> None:
    args = tx.engine_args(make_cell(SpecParams(method="suffix", num_speculative_tokens=3)))
    assert args["assistant"] == "prompt_lookup" and args["stands_in_for"] == "suffix"


def test_compile_and_sampling_args() -> None:
    args = tx.engine_args(make_cell(draft(), enforce_eager=False))
    assert args["compile"] is True and args["compile_draft"] is False
    assert args["compile_mode"] == {"cuda": "reduce-overhead", "cpu": "default"}
    # CUDA graphs need static shapes; a CPU compiles with dynamic ones.
    assert args["compile_dynamic"] == {"cuda": False, "cpu": True}
    assert args["static_assisted_since"] == [5, 24]
    args = tx.engine_args(make_cell(draft(draft_enforce_eager=False), enforce_eager=False))
    assert args["compile_draft"] is True
    sampled = Sampling(temperature=0.7, top_p=0.9, max_tokens=8, seed=3)
    args = tx.engine_args(make_cell(sampling=sampled))
    assert args["do_sample"] is True and args["temperature"] == 0.7 and args["seed"] == 3


@pytest.mark.parametrize("size", standins.SIZES)
@pytest.mark.parametrize("method", ["mtp", "eagle3", "draft_model"])
def test_standin_target_brings_its_own_draft(size: standins.Size, method: str) -> None:
    """A trained stand-in target (the GPU check's) is drafted for by the trained draft of
    its size, which shares its tokenizer; MTP and EAGLE are stood in for by it."""
    target = standins.target("llama", size).model_id
    spec = SpecParams(method=method, num_speculative_tokens=2)
    args = tx.engine_args(make_cell(spec, model=target))
    assert args["assistant"] == "draft" and args["tiny"] is False
    assert args["assistant_model"] == standins.draft("llama", size).model_id
    assert args["stands_in_for"] == (None if method == "draft_model" else method)
    with pytest.raises(PlanRejected) as err:
        tx.engine_args(make_cell(draft(draft_model="org/small-lm"), model=target))
    assert "shares its vocabulary only with" in str(err.value)


def test_real_model_with_own_draft() -> None:
    cell = make_cell(draft(draft_model="org/small-lm"), model="org/big-lm")
    args = tx.engine_args(cell)
    assert args["assistant_model"] == "org/small-lm" and args["tiny"] is False
    assert args["dtype"] == "auto"


REJECTED: list[tuple[dict[str, Any], str, str]] = [
    ({"cudagraph_mode": "FULL"}, "cudagraph_mode", "no cudagraph modes"),
    ({"model_runner": "v2"}, "model_runner", "no transformers equivalent"),
    ({"encoder_cudagraph": True}, "encoder_cudagraph", "no transformers equivalent"),
    ({"mm_encoder_tp_mode": "data"}, "mm_encoder_tp_mode", "no transformers equivalent"),
    ({"commit": "abcdef1"}, "commit", "no transformers equivalent"),
    ({"tensor_parallel_size": 2}, "tensor_parallel_size", "one device"),
    ({"data_parallel_size": 2}, "data_parallel_size", "one device"),
    ({"expert_parallel": True}, "expert_parallel", "one device"),
    ({"compilation_config": {"mode": 3}}, "compilation_config.mode", "no transformers"),
    ({"extra_speculative_config": {"x": 1}}, "extra_speculative_config.x", "no transformers"),
    ({"workload": CellWorkload(kind="serve", num_prompts=2, input_len=8)},
     "workload.kind", "no transformers template"),
    ({"workload": CellWorkload(kind="mm_processor", num_prompts=2, input_len=8)},
     "workload.kind", "no transformers template"),
    ({"workload": CellWorkload(kind="offline", api="chat", num_prompts=2, input_len=8)},
     "workload.api", "token-id prompts"),
    ({"workload": CellWorkload(kind="offline", modality="image", num_prompts=2, input_len=8)},
     "workload.modality", "token-id prompts"),
    ({"workload": CellWorkload(kind="offline", num_prompts=2, input_len=8, concurrency=8)},
     "workload.concurrency", "one at a time"),
    ({"workload": CellWorkload(kind="offline", num_prompts=2, input_len=20000)},
     "workload.input_len", "too long"),
    ({"spec": draft(rejection_sample_method="strict")}, "spec.rejection_sample_method",
     "speculative sampling"),
    ({"spec": ngram(prompt_lookup_min=2)}, "spec.prompt_lookup_min", "1-gram"),
    ({"spec": draft(prompt_lookup_max=3)}, "spec.prompt_lookup_max", "prompt lookup"),
    ({"spec": ngram(draft_model="org/x")}, "spec.draft_model", "uses no draft"),
    ({"spec": draft(draft_model="org/small-lm")}, "spec.draft_model", tx.TINY_DRAFT),
    ({"spec": SpecParams(method="eagle3", num_speculative_tokens=2), "model": "org/big-lm"},
     "spec.method", "standalone small causal LM"),
    ({"spec": draft(), "model": "org/big-lm"}, "spec.method", "draft_model with"),
    ({"version": "4.30.0"}, "version", "predates"),
]


@pytest.mark.parametrize(("over", "field", "words"), REJECTED,
                         ids=[r[1] + "-" + str(i) for i, r in enumerate(REJECTED)])
def test_engine_args_rejects(over: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(PlanRejected) as err:
        tx.engine_args(make_cell(**over))
    assert err.value.field == field
    assert words in str(err.value)
    assert "accepted" in str(err.value)


def test_cudagraph_rejection_names_the_graph_axis() -> None:
    with pytest.raises(PlanRejected) as err:
        tx.engine_args(make_cell(cudagraph_mode="PIECEWISE"))
    assert "eager vs torch.compile only" in str(err.value)


def test_env_allowlist() -> None:
    env = {"OMP_NUM_THREADS": "2", "TORCHINDUCTOR_CACHE_DIR": "/tmp/ind", "TORCH_LOGS": "+dynamo",
           "TOKENIZERS_PARALLELISM": "false", "CUDA_VISIBLE_DEVICES": "0"}
    assert tx.engine_env(make_cell(env=env)) == env
    for name in ("LD_PRELOAD", "PYTHONPATH", "VLLM_USE_V1", "HF_TOKEN"):
        with pytest.raises(PlanRejected) as err:
            tx.engine_env(make_cell(env={name: "x"}))
        assert err.value.field == f"env.{name}"
        assert "OMP_NUM_THREADS" in err.value.accepted and "TORCH_*" in err.value.accepted


def test_estimate_grows_with_compile_and_work() -> None:
    budget = Budget(runs=5, warmups=1)
    eager = tx.estimate_seconds(make_cell(), budget)
    compiled = tx.estimate_seconds(make_cell(enforce_eager=False), budget)
    bigger = tx.estimate_seconds(make_cell(sampling=Sampling(temperature=0, max_tokens=512)),
                                 budget)
    assert 0 < eager < compiled and eager < bigger


# --- rendering ------------------------------------------------------------------------


def test_rendered_script_prints_settings_as_literals() -> None:
    text = render(planned(make_cell(draft(), env={"OMP_NUM_THREADS": "2"})))
    assert "ASSISTANT = 'draft'" in text
    assert "NUM_ASSISTANT_TOKENS = 3" in text
    assert "CELL_ENV = {'OMP_NUM_THREADS': '2'}" in text
    assert text.index("os.environ.update(CELL_ENV)") < text.index("import torch")
    assert "TRUST_REMOTE_CODE = False" in text and "trust_remote_code=True" not in text
    assert 'if __name__ == "__main__":\n    main(measure)' in text


def test_rendered_script_carries_the_cuda_choices() -> None:
    """The device is found at run time, so the script holds both devices' settings, and
    its helpers pick the CUDA ones there (exercised for real only on a GPU: bench/)."""
    text = render(planned(make_cell(draft(), enforce_eager=False)))
    assert "CACHE_IMPLEMENTATION = {'cuda': 'static', 'cpu': 'dynamic'}" in text
    assert "COMPILE_DYNAMIC = {'cuda': False, 'cpu': True}" in text
    assert "COMPILE_MODE = {'cuda': 'reduce-overhead', 'cpu': 'default'}" in text
    assert "STATIC_ASSISTED_SINCE = tuple([5, 24])" in text


def test_script_helpers_pick_per_device_and_gate_prefills(tmp_path: Path) -> None:
    helpers = runpy.run_path(str(_script(tmp_path, make_cell(draft()))),
                             run_name="triagebot_test")
    on_device = helpers["on_device"]
    assert on_device({"cuda": "static", "cpu": "dynamic"}, "cuda") == "static"
    assert on_device({"cuda": "static", "cpu": "dynamic"}, "cpu") == "dynamic"
    assert on_device("dynamic", "cuda") == "dynamic"  # a plan from before the split
    gate = helpers["FirstForward"]()
    assert gate({}) is False
    gate.arm()
    assert [gate({}), gate({}), gate({})] == [True, False, False]
    assert helpers["empty_cache"]({}) is True
    # Assisted generation over a static cache: refused before 5.24, in words.
    check = helpers["check_static_assisted"]
    check("5.24.0")
    check("6.1.0.dev0")
    with pytest.raises(Exception, match="refuses assisted generation over a static") as err:
        check("5.17.0")
    assert type(err.value).__name__ == "ConfigRejected"


def test_trust_remote_code_only_when_the_cell_says_so() -> None:
    cell = make_cell(draft(draft_model="org/small-lm"), model="org/big-lm",
                     trust_remote_code=True)
    assert "TRUST_REMOTE_CODE = True" in render(planned(cell))
