"""Plans for the `cpu` runner: vLLM's CPU build on stand-ins, and what it refuses."""

from __future__ import annotations

import pytest

from tests.conftest import seed_path
from triagebot.engines import mlx_standin, standins
from triagebot.engines.vllm_cpu import locked_releases, mm_releases
from triagebot.errors import PlanRejected
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan import cpu as C
from triagebot.plan.defaults import Choices
from triagebot.plan_model import CellWorkload, Plan, Sampling
from triagebot.render import render_cell


def plan_for(seed: str, *overrides: str) -> Plan:
    request = parse_report(seed_path(seed).read_bytes())
    return build_plan(request, parse_overrides(["gpu=cpu", *overrides]))


def test_locks_cover_an_old_a_middle_and_the_last_release() -> None:
    locked = locked_releases()
    assert C.LAST_CPU_RELEASE in locked
    assert any(C.version_key(v) < C.SPEC_SINCE for v in locked)
    assert any(C.SPEC_SINCE <= C.version_key(v) < (0, 32) for v in locked)


@pytest.mark.parametrize(("asked", "spec", "locked", "ran", "says"), [
    ("0.32.0", True, ["0.17.1", "0.25.1", "0.32.0"], "0.32.0", None),
    ("0.17.1", False, ["0.17.1", "0.25.1", "0.32.0"], "0.17.1", None),
    ("0.17.1", True, ["0.17.1", "0.25.1", "0.32.0"], "0.25.1", "refuses speculative"),
    ("0.33.0", True, ["0.17.1", "0.25.1", "0.32.0"], "0.32.0", "stops at 0.32.0"),
    ("0.29.0", True, ["0.17.1", "0.25.1", "0.32.0"], "0.32.0", "has no lock"),
    ("0.21.0", True, ["0.17.1", "0.25.1", "0.32.0"], "0.25.1", "has no lock"),
    ("0.20.0", True, ["0.17.1", "0.20.0", "0.25.1"], "0.25.1", "SYNTHETIC_MODE"),
    ("0.17.1", True, ["0.17.1", "0.20.0", "0.25.1"], "0.25.1", "0.20.0's CPU build crashes"),
    ("0.20.0", False, ["0.17.1", "0.20.0", "0.25.1"], "0.20.0", None),
])
def test_release_choice_names_the_substitute(asked: str, spec: bool, locked: list[str],
                                             ran: str, says: str | None) -> None:
    choices = Choices()
    assert C.choose_release(asked, spec, locked, choices) == ran
    if says is None:
        assert choices.notes == []
    else:
        assert len(choices.notes) == 1 and says in choices.notes[0]
        assert f"runs vLLM {ran}" in choices.notes[0]


def test_spec_before_the_first_capable_release_with_nothing_newer_is_refused() -> None:
    with pytest.raises(PlanRejected, match=r"from 0\.20\.0"):
        C.choose_release("0.17.1", True, ["0.17.1"], Choices())


def test_an_mtp_override_on_a_non_mtp_report_gets_the_mimo_standin() -> None:
    # Seed 003 reports EAGLE-3 on gpt-oss; spec=mtp needs a model with an MTP layer.
    plan = plan_for("003", "spec=mtp:1,none", "workload=offline")
    assert {c.model for c in plan.cells} == {standins.target("mimo").model_id}
    assert plan_for("003").cells[0].model == standins.target("llama").model_id


def test_seed_000_runs_mtp_eager_against_compiled_on_a_mimo_standin() -> None:
    plan = plan_for("000")
    assert plan.gpu_kind == "cpu"
    assert C.version_key(plan.engine_version or "") >= C.SPEC_SINCE
    assert any("0.17.1 cannot answer this" in n for n in plan.notes)
    target = standins.target("mimo").model_id
    assert {c.model for c in plan.cells} == {target}
    assert plan.stands_in_for == "zai-org/GLM-OCR"
    assert [c.label for c in plan.cells] == [
        "no_spec + eager", "no_spec + graph", "spec + eager", "spec + graph",
        "spec + graph (A/A)"]
    spec_graph = plan.cells[3]
    assert spec_graph.engine_args["speculative_config"] == {
        "method": "mtp", "num_speculative_tokens": 1}
    assert spec_graph.engine_args["enforce_eager"] is False
    assert spec_graph.engine_args["dtype"] == "float32"
    assert spec_graph.env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert spec_graph.workload.api == "generate" and spec_graph.workload.modality == "text"
    assert spec_graph.sampling.max_tokens <= C.CAPS["max_tokens"]
    assert any(n.startswith("what this CPU run answers") for n in plan.notes)
    assert any("'graph' means compiled" in n for n in plan.notes)
    assert plan.estimated_seconds <= plan.budget.time_limit_s


def test_seed_003_keeps_eagle3_and_graphs_and_says_why_the_runner_variants_go() -> None:
    plan = plan_for("003")
    head = standins.head("llama", "eagle3").model_id
    assert {c.spec.draft_model for c in plan.cells if c.spec} == {head}
    assert {c.varies.get("graph") for c in plan.cells} == {"eager", "graph"}
    assert "variant" not in plan.cells[0].varies
    # The reason carries the evidence: the release that was run and the line it prints.
    assert any("V1 model runner" in n and "0.32.0" in n and "Model Runner V2 requires Triton"
               in n for n in plan.notes), plan.notes
    assert plan.engine_version == C.LAST_CPU_RELEASE
    serve = plan.cells[0]
    assert serve.workload.kind == "serve"
    assert serve.workload.num_prompts <= C.CAPS["serve_prompts"]


def test_offline_text_engines_run_in_process_and_profile_only_their_own_batch() -> None:
    offline = plan_for("000").cells                        # offline, text
    serve = plan_for("003").cells                          # vllm bench serve, text
    images = plan_for("001", "spec=none").cells            # vllm bench mm-processor
    assert {c.workload.kind for c in serve} == {"serve"}
    assert {c.workload.modality for c in images} == {"image"}
    for cell in offline:
        assert cell.env.items() >= C.IN_PROCESS_ENV.items()
        need = cell.workload.num_prompts * cell.workload.input_len
        assert need < cell.engine_args["max_num_batched_tokens"] <= 1024
    for cell in serve:  # a server's engine core keeps its own process
        assert not cell.env.keys() & C.IN_PROCESS_ENV.keys()
        assert cell.engine_args["max_num_batched_tokens"] >= 512
    for cell in images:  # image tokens per prompt depend on the processor: vLLM's default
        assert not cell.env.keys() & C.IN_PROCESS_ENV.keys()
        assert "max_num_batched_tokens" not in cell.engine_args
    # A larger batch raises it, so that no prompt of the workload is split.
    cell = offline[0]
    big = cell.model_copy(update={"workload": cell.workload.model_copy(
        update={"num_prompts": 16, "input_len": 1000})})
    assert C.batched_tokens(big) >= 16 * 1000
    assert C.batched_tokens(big) % 256 == 0


def test_seed_003s_temperature_gives_way_to_greedy_where_cpu_verification_is_broken() -> None:
    assert plan_for("003").engine_version in C.RANDOM_SAMPLING_BROKEN
    request = parse_report(seed_path("003").read_bytes())
    assert request.temperature and request.temperature > 0
    plan = plan_for("003")
    assert {c.sampling.temperature for c in plan.cells} == {0.0}
    chosen = next(d for d in plan.defaults if d.field == "temperature")
    assert chosen.value == "0.0"
    # The reason names the cause and the measured evidence.
    assert "never writes it back" in chosen.reason and "0 of 177" in chosen.reason
    assert C.RANDOM_SAMPLING_WHY not in plan.notes
    # The report renders notes only: it must say the temperature run is not the report's.
    assert any("samples greedily" in n and "temperature=1" in n for n in plan.notes)


def test_an_explicit_temperature_is_kept_with_the_note() -> None:
    plan = plan_for("003", "temperature=1.0")
    assert {c.sampling.temperature for c in plan.cells} == {1.0}
    assert not any(d.field == "temperature" for d in plan.defaults)
    assert C.RANDOM_SAMPLING_WHY in plan.notes
    assert not any("samples greedily" in n for n in plan.notes)


def test_greedy_reports_and_plans_without_speculation_keep_their_temperature() -> None:
    hot = Sampling(temperature=1.0, top_p=1.0, max_tokens=8, ignore_eos=True)
    broken = C.RANDOM_SAMPLING_BROKEN[-1]
    for wants_spec, version in ((False, broken), (True, "0.99.0")):
        choices = Choices()
        assert C.sampling(hot, None, wants_spec, version, choices) == hot
        assert not choices.defaults and not choices.notes
    greedy = plan_for("003", "temperature=0")
    assert {c.sampling.temperature for c in greedy.cells} == {0.0}
    assert C.RANDOM_SAMPLING_WHY not in greedy.notes


def test_seed_004_cudagraph_modes_are_refused_with_the_reason() -> None:
    with pytest.raises(PlanRejected, match="CUDA graphs"):
        plan_for("004")


def test_seed_001_measures_the_eager_encoder_and_refuses_only_the_vit_graph_arm() -> None:
    plan = plan_for("001")
    assert plan.engine_version in mm_releases()
    measured = [c for c in plan.cells if not c.replica]
    assert len(measured) == 1 and len(plan.cells) == 2  # and its A/A duplicate
    cell = measured[0]
    assert cell.model == standins.vision().model_id
    assert cell.encoder_cudagraph is False and cell.enforce_eager
    assert cell.label == "vit_eager" and "vision encoder" in plan.question
    assert cell.workload.kind == "mm_processor" and cell.workload.modality == "image"
    assert cell.engine_args["limit_mm_per_prompt"] == {"image": 1, "video": 0}
    assert plan.budget.warmups == 0 and plan.budget.runs == plan.budget.max_runs
    refused = [n for n in plan.notes if "refuses the vit_graph arm" in n]
    assert len(refused) == 1 and C.VIT_GRAPH_WHY in refused[0]
    # Its arms are GPU counts and modalities, not model runner versions: not reproduced.
    assert any("GPU count" in n and "not reproduced" in n for n in plan.notes)
    assert not any("Model Runner V2" in n for n in plan.notes)


def test_asking_for_the_vit_graph_arm_by_name_is_refused_with_the_reason() -> None:
    with pytest.raises(PlanRejected, match="encoder \\(ViT\\) CUDA graphs need a GPU"):
        plan_for("001", "modes=vit_eager,vit_graph")


def test_a_multimodal_plan_runs_a_release_with_a_multimodal_lock() -> None:
    choices = Choices()
    assert C.choose_release("0.32.0", False, ["0.25.1"], choices, multimodal=True) == "0.25.1"
    assert len(choices.notes) == 1 and "torchvision" in choices.notes[0]
    with pytest.raises(PlanRejected, match="multimodal lock"):
        C.choose_release("0.32.0", False, [], Choices(), multimodal=True)


def test_a_multimodal_report_that_speculates_runs_a_text_stand_in() -> None:
    # The vision-language stand-in has no draft: spec= keeps today's text plan, and says
    # why the images are not sent.
    plan = plan_for("001", "spec=ngram:3,none")
    assert {c.workload.modality for c in plan.cells} == {"text"}
    assert {c.workload.kind for c in plan.cells} == {"offline"}
    assert standins.vision().model_id not in {c.model for c in plan.cells}
    assert any(C.MULTIMODAL_SPEC_WHY in n for n in plan.notes)
    # Another workload asked by name runs text too, and says how images are sent.
    choices = Choices()
    images = CellWorkload(kind="serve", dataset="random-mm", num_prompts=32, input_len=128,
                          concurrency=8, modality="image", images_per_prompt=1)
    workload, _ = C.scale(images, Sampling(temperature=0.0, max_tokens=64), choices)
    assert workload.modality == "text" and workload.images_per_prompt == 0
    assert any(C.MULTIMODAL_WORKLOAD_WHY in n for n in choices.notes)


def test_sglang_on_the_cpu_runner_is_refused_with_the_reason() -> None:
    with pytest.raises(PlanRejected, match="no CPU build") as refused:
        plan_for("003", "engine=sglang")
    assert refused.value.field == "runner"
    assert "GPU runner" in str(refused.value)
    # On a GPU runner the same report still plans.
    request = parse_report(seed_path("003").read_bytes())
    assert build_plan(request, parse_overrides(["engine=sglang"])).engine == "sglang"


def test_naming_a_gpu_only_axis_is_refused() -> None:
    with pytest.raises(PlanRejected, match="cudagraph modes"):
        plan_for("000", "modes=full,piecewise")


def test_draft_equal_to_target_is_the_invariant_cell() -> None:
    plan = plan_for("000", "spec=none,draft_model:3", "draft=target")
    spec = next(c for c in plan.cells if c.spec)
    assert spec.spec is not None and spec.spec.draft_model == spec.model


def test_unsupported_method_and_model_override_are_refused() -> None:
    with pytest.raises(PlanRejected, match="no stand-in"):
        plan_for("000", "spec=suffix:4")
    with pytest.raises(PlanRejected, match="stand-in models"):
        plan_for("000", "model=org/name")


def test_standin_ids_change_with_their_recipe() -> None:
    a = standins.target("llama")
    b = a.model_copy(update={"hidden": 128})
    assert a.model_id != b.model_id
    assert standins.is_standin(a.model_id)
    assert standins.family_for("Qwen/Qwen3-8B", None) == "qwen2"
    assert standins.family_for("zai-org/GLM-OCR", "mtp") == "mimo"
    assert standins.family_for("meta-llama/Llama-3.1-8B", "eagle3") == "llama"


def test_the_plan_states_what_the_runners_noise_lets_it_resolve() -> None:
    plan = plan_for("000")
    said = next(n for n in plan.notes if "run to run" in n)
    assert f"about {C.RUN_CV:.0%} run to run" in said
    assert f"within {plan.budget.max_runs} runs per arm" in said
    assert f"{C.resolvable_change(C.RUN_CV, plan.budget.max_runs):.0%} or more" in said


def test_resolvable_change_follows_noise_and_runs() -> None:
    # 3.42 sd of the log ratio: at CV 3 % and 30 runs per arm about 2.7 %.
    assert C.resolvable_change(0.03, 30) == pytest.approx(0.0268, abs=0.0005)
    assert C.resolvable_change(0.20, 24) > C.resolvable_change(0.20, 48)
    assert C.resolvable_change(0.30, 24) > C.resolvable_change(0.20, 24)


def _with_image_size(size: tuple[int, int] | None) -> Plan:
    request = parse_report(seed_path("001").read_bytes())
    request = request.model_copy(update={"workload": request.workload.model_copy(
        update={"image_size": size})})
    return build_plan(request, parse_overrides(["gpu=cpu"]))


def test_a_multimodal_cell_sends_the_reports_image_size() -> None:
    # Seed 001 sends 224x224 images (`--random-mm-bucket-config '{(224, 224, 1): 1.0}'`).
    plan = plan_for("001")
    assert all(c.workload.image_size == (224, 224) for c in plan.cells)
    assert "each image is 224x224 pixels, the report's size" in plan.notes
    script = render_cell(plan, plan.cells[0]).text
    assert "'--random-mm-bucket-config', '{(224, 224, 1): 1.0}'," in script


def test_an_image_larger_than_the_standin_takes_is_capped_with_a_note() -> None:
    plan = _with_image_size((1024, 768))
    assert plan.cells[0].workload.image_size == (512, 512)
    assert any("512x512 pixels where the report sends 1024x768" in n for n in plan.notes)


def test_without_a_stated_image_size_the_default_is_used_and_said() -> None:
    plan = _with_image_size(None)
    assert plan.cells[0].workload.image_size == (512, 512)
    assert any("512x512 pixels: the report states no image size" in n for n in plan.notes)


def test_vllm_mlx_mllm_reports_send_images_of_the_reports_size_capped_to_its_standin(
        ) -> None:
    # Seed 002 is about vllm-mlx's MLLM path: the vision-language stand-in, an image a
    # prompt, the report's size capped to what its processor takes.
    request = parse_report(seed_path("002").read_bytes())
    for size, expect, said in [(None, (224, 224), "224x224 pixels: the report states no"),
                               ((300, 200), (300, 200), "300x200 pixels, the report's size"),
                               ((1024, 768), (448, 448), "448x448 pixels where the report "
                                                         "sends 1024x768")]:
        sized = request.model_copy(update={"workload": request.workload.model_copy(
            update={"image_size": size})})
        plan = build_plan(sized, parse_overrides(["engine=vllm-mlx", "gpu=cpu"]))
        assert {c.model for c in plan.cells} == {mlx_standin.VL_STANDIN.model_id}
        assert all(c.workload.image_size == expect and c.engine_args["flags"]["mllm"]
                   for c in plan.cells)
        assert any(said in n for n in plan.notes), plan.notes


@pytest.mark.parametrize("config, sizes", [
    ("{(224, 224, 1): 1.0}", [(224, 224)]),
    ("{(224, 224, 8): 1.0}", []),  # a video bucket
    ("{(336, 448, 1): 0.5, (224, 224, 1): 0.5, (64, 64, 1): 0}", [(336, 448), (224, 224)]),
    ("not a bucket", []),
])
def test_image_buckets_are_read_from_a_bucket_config(config: str,
                                                     sizes: list[tuple[int, int]]) -> None:
    from triagebot.parse.decide.request import image_sizes
    assert image_sizes(config) == sizes
    assert parse_report(seed_path("001").read_bytes()).workload.image_size == (224, 224)
