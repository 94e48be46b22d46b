"""The plans the five seed reports produce: what varies, what is compared, what is fixed."""

from __future__ import annotations

import pytest

from tests.conftest import seed_path
from triagebot.errors import PlanRejected
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan_model import Plan
from triagebot.render import render_plan


def plan_for(seed: str, *overrides: str) -> Plan:
    request = parse_report(seed_path(seed).read_bytes())
    return build_plan(request, parse_overrides(overrides))


def names(plan: Plan) -> list[str]:
    return [c.name for c in plan.comparisons]


def test_seed_000_is_spec_by_graph_with_an_aa_pair() -> None:
    plan = plan_for("000")
    assert (plan.engine, plan.engine_version) == ("vllm", "0.17.1")
    assert [c.label for c in plan.cells] == [
        "no_spec + eager", "no_spec + graph", "spec + eager", "spec + graph",
        "spec + graph (A/A)"]
    assert names(plan) == [
        "A/A spec + graph", "spec/no_spec @ eager", "spec/no_spec @ graph",
        "graph/eager @ no_spec", "graph/eager @ spec",
        "(spec/no_spec @ graph) / (spec/no_spec @ eager)"]
    spec_graph = plan.cells[3]
    assert spec_graph.engine_args["speculative_config"] == {
        "method": "mtp", "num_speculative_tokens": 1}
    assert spec_graph.engine_args["enforce_eager"] is False
    assert plan.cells[2].engine_args["enforce_eager"] is True
    assert spec_graph.sampling.max_tokens == 500
    assert spec_graph.workload.kind == "offline" and spec_graph.workload.api == "chat"
    assert spec_graph.workload.modality == "image"
    aa = plan.comparisons[0]
    assert aa.kind == "noise" and aa.denominator == [spec_graph.cell_id]
    # the duplicate differs only by its replica number, so it runs the same config
    replica = plan.cell(aa.numerator[0])
    assert replica.engine_args == spec_graph.engine_args and replica.replica == 1


def test_seed_001_varies_encoder_graphs_over_the_reporters_setups() -> None:
    plan = plan_for("001", "runs=3")
    assert {c.varies["encoder_graph"] for c in plan.cells} == {"vit_eager", "vit_graph"}
    variants = {c.varies["variant"] for c in plan.cells}
    assert len(variants) == 4
    on = [c for c in plan.cells if c.varies["encoder_graph"] == "vit_graph"]
    assert all(c.engine_args["compilation_config"]["cudagraph_mm_encoder"] for c in on)
    assert {c.workload.modality for c in plan.cells} == {"image", "video"}
    assert {c.mm_encoder_tp_mode for c in plan.cells} == {None, "data"}
    assert all(c.workload.kind == "mm_processor" for c in plan.cells)
    # The images are the size the report's bucket config gives; the video arms send none.
    for cell, script in zip(plan.cells, render_plan(plan), strict=False):  # + the runner
        image = cell.workload.modality == "image"
        assert cell.workload.image_size == ((224, 224) if image else None), cell.label
        assert ("{(224, 224, 1): 1.0}" in script.text) == image, cell.label


def test_seed_002_needs_a_model_and_then_compares_mtp_on_and_off() -> None:
    with pytest.raises(PlanRejected, match="names no model; pass model="):
        plan_for("002")
    plan = plan_for("002", "model=Qwen/Qwen3.6-27B")
    assert plan.engine == "vllm-mlx" and plan.gpu_kind == "apple-silicon"
    assert names(plan)[1] == "spec/no_spec"
    spec = plan.cells[1].spec
    assert spec is not None and (spec.method, spec.num_speculative_tokens) == ("mtp", 5)
    # The report is about vllm-mlx's MLLM path: every cell takes it, with an image a prompt.
    for cell in plan.cells:
        assert cell.engine_args["flags"]["mllm"] is True
        assert (cell.workload.modality, cell.workload.api, cell.workload.images_per_prompt,
                cell.workload.image_size) == ("image", "chat", 1, (224, 224))
    assert any("multimodal (MLLM) MTP path" in n for n in plan.notes)


def test_seed_003_runs_v1_and_v2_with_both_rejection_styles_eager_and_graph() -> None:
    plan = plan_for("003")
    assert [c.varies["variant"] for c in plan.cells[:6:2]] == [
        "v1", "v2 strict", "v2 probabilistic"]
    env = {c.label: c.env.get("VLLM_USE_V2_MODEL_RUNNER") for c in plan.cells}
    assert env["v1 + graph"] == "0" and env["v2 strict + graph"] == "1"
    cfg = {c.label: c.engine_args["speculative_config"] for c in plan.cells}
    # 0.33.0 has no strict/probabilistic: both are "standard", the draft sampling differs
    assert cfg["v2 strict + graph"]["rejection_sample_method"] == "standard"
    assert cfg["v2 probabilistic + graph"]["draft_sample_method"] == "probabilistic"
    assert cfg["v1 + graph"]["model"] == "RedHatAI/gpt-oss-20b-speculator.eagle3"
    assert plan.cells[0].sampling.temperature == 1.0
    assert "graph/eager @ v2 probabilistic" in names(plan)


def test_seed_004_is_full_vs_piecewise_at_tp8_with_expert_parallel() -> None:
    plan = plan_for("004")
    assert [c.label for c in plan.cells] == ["PIECEWISE", "FULL", "FULL (A/A)"]
    assert names(plan) == ["A/A FULL", "FULL/PIECEWISE"]
    full = plan.cells[1]
    assert full.engine_args["compilation_config"] == {"cudagraph_mode": "FULL"}
    assert full.tensor_parallel_size == 8 and full.expert_parallel
    assert full.engine_args["speculative_config"] == {"method": "mtp",
                                                      "num_speculative_tokens": 1}
    assert full.workload.kind == "serve" and full.workload.concurrency == 64
    assert full.sampling.temperature == 0.0 and full.sampling.max_tokens == 2048


def test_defaults_are_listed_with_reasons() -> None:
    plan = plan_for("004")
    fields = {d.field: d for d in plan.defaults}
    assert fields["engine_version"].value == "0.33.0"
    assert all(d.reason for d in plan.defaults)


def test_plans_are_deterministic() -> None:
    assert plan_for("000").plan_hash == plan_for("000").plan_hash
    assert plan_for("000").plan_hash != plan_for("000", "runs=7").plan_hash


def test_trust_remote_code_only_for_allowlisted_models() -> None:
    from triagebot.plan_model import PlanPolicy

    def trusts(text: str) -> bool:
        return "'trust_remote_code': True" in text or "'--trust-remote-code'" in text

    request = parse_report(seed_path("001").read_bytes())
    plan = build_plan(request)
    assert not any(c.trust_remote_code for c in plan.cells)
    assert any("not on the trust_remote_code allowlist" in n for n in plan.notes)
    assert not any(trusts(s.text) for s in render_plan(plan))
    allowed = build_plan(request, policy=PlanPolicy(
        trust_remote_code=["zai-org/GLM-4.6V-Flash"]))
    assert {c.model for c in allowed.cells if c.trust_remote_code} == {"zai-org/GLM-4.6V-Flash"}
    for cell, script in zip(allowed.cells, render_plan(allowed), strict=False):
        assert trusts(script.text) == cell.trust_remote_code, cell.label
