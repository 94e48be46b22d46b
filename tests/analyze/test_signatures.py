"""The log-signature catalogue: every entry is valid, fires on its message, and matching
is bounded and prefix-tolerant."""

from __future__ import annotations

import pytest

from triagebot.analyze.signatures import (
    Signature,
    load_signatures,
    match_log,
    message_of,
    parse_signatures,
)

V017 = "(EngineCore_DP0 pid=4821) WARNING 03-14 10:00:06 [gpu_model_runner.py:4512] "
V010 = "INFO 03-14 10:00:06 [core.py:93] "
V031 = "(EngineCore pid=77) INFO 03-14 10:00:06 [vllm/config/vllm.py:612] "

# One line per catalogue entry, in the formats the engines print (engines.md §4).
SAMPLES = {
    "spec_decode_cudagraph_downgrade": V017 + "CUDAGraphMode.FULL_AND_PIECEWISE is not "
    "supported with spec-decode for attention backend FLASH_ATTN (support: "
    "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting cudagraph_mode=PIECEWISE",
    "dynamic_sd_cudagraph_override": V031 + "Dynamic speculative decoding changes the target "
    "verification length at runtime. Overriding cudagraph_mode from FULL_AND_PIECEWISE to "
    "PIECEWISE for reliability. Use VLLM_USE_V2_MODEL_RUNNER=1 if you want full graphs.",
    "dynamic_sd_disabled": V031 + "Dynamic speculative decoding is not supported with the "
    "'ngram' speculative method on Model Runner V1. Disabling "
    "num_speculative_tokens_per_batch_size and falling back to static num_speculative_tokens=3.",
    "cudagraph_sizes_rounding_failed": "ValueError: No valid cudagraph sizes after rounding to "
    "multiple of 4 (num_speculative_tokens + 1) please adjust num_speculative_tokens (3)",
    "cudagraph_backend_downgrade": V017 + "CUDAGraphMode.FULL is not supported with "
    "TRITON_ATTN backend (support: AttentionCGSupport.UNIFORM_BATCH); setting "
    "cudagraph_mode=FULL_AND_PIECEWISE",
    "cudagraph_piecewise_unavailable": V031 + "Cudagraph mode FULL_AND_PIECEWISE requires "
    "piecewise capture, but the loaded model provides neither a compiled submodule nor "
    "breakable CUDA graphs. Overriding to FULL_DECODE_ONLY.",
    "v2_runner_no_graphs_stock_compile": V031 + "CUDA graphs are not supported with stock "
    "torch.compile in Model Runner V2. Overriding cudagraph_mode FULL to NONE.",
    "cudagraph_mode_override": V031 + "Pooling models do not support full cudagraphs. "
    "Overriding cudagraph_mode to PIECEWISE.",
    "full_graphs_not_captured": V010 + "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)",
    "v2_runner_fallback": V031 + "Model Runner V2 does not yet support suffix speculative "
    "decoding; using the V1 model runner instead.",
    "encoder_graph_capture_skipped": V031 + "Skipping encoder and decoder CUDA graph capture. "
    "To enable encoder capture, ensure `cudagraph_mm_encoder` is enabled.",
    "encoder_graph_count": V031 + "Capturing 48 encoder CUDA graphs; capture axes multiply "
    "the per-budget graph count, consider pruning axis keys.",
    "deprecated_mtp_method": V010 + "method `glm_ocr_mtp` is deprecated and replaced with mtp.",
    "mtp_layer_reused": V010 + "Enabling num_speculative_tokens > 1 will run multiple times of "
    "forward on same MTP layer,which may result in lower acceptance rate",
    "lossy_verification": V031 + "FLy verification is a lossy speculative decoding method and "
    "may degrade model outputs.",
    "eager_mode": V010 + "Cudagraph is disabled under eager mode",
    "attention_backend_invalid": "ValueError: Selected backend FLASHINFER is not valid for "
    "this configuration. Reason: ['head_size not supported']",
    "spec_config_bad_key": "TypeError: LLM.__init__() got an unexpected keyword argument "
    "'cudagraph_mm_encoder'",
    "cuda_oom": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "cuda_illegal_access": "RuntimeError: CUDA error: an illegal memory access was encountered",
    "graph_capture_done": V010 + "Graph capturing finished in 14 secs, took 0.52 GiB",
    "sglang_decode_without_graph": "[2026-03-14 10:00:06] Decode batch, #running-req: 1, "
    "#token: 812, token usage: 0.01, accept len: 1.71, accept rate: 0.71, cuda graph: False, "
    "gen throughput (token/s): 88.10, #queue-req: 0",
}


def test_catalogue_loads_with_unique_ids_and_a_sample_for_each() -> None:
    sigs = load_signatures()
    assert sorted(s.id for s in sigs) == sorted(SAMPLES)


@pytest.mark.parametrize("sig_id", sorted(SAMPLES))
def test_each_signature_fires_on_its_own_message_only(sig_id: str) -> None:
    engine = "sglang" if sig_id.startswith("sglang") else "vllm"
    hits = match_log(SAMPLES[sig_id], engine=engine)
    assert [h.id for h in hits] == [sig_id]
    assert hits[0].evidence == [SAMPLES[sig_id].strip()]


def test_prefix_is_removed_in_every_release_format() -> None:
    for prefix in (V010, V017, V031):
        assert message_of(prefix + "hello") == "hello"
    assert message_of("Traceback (most recent call last):") == "Traceback (most recent call last):"


def test_full_capture_vetoes_the_piecewise_only_signature() -> None:
    log = "\n".join([SAMPLES["full_graphs_not_captured"],
                     V010 + "Capturing CUDA graphs (decode, FULL)"])
    assert "full_graphs_not_captured" not in [h.id for h in match_log(log)]


def test_evidence_is_bounded_and_counts_every_line() -> None:
    line = SAMPLES["cuda_oom"] + " x" * 1000
    hits = match_log("\n".join([line] * 100), cell_id="c0123456789")
    assert hits[0].count == 100 and len(hits[0].evidence) == 5
    assert all(len(e) <= 300 for e in hits[0].evidence)
    assert hits[0].cell_id == "c0123456789"


def test_engine_filter_keeps_engine_specific_signatures_apart() -> None:
    assert match_log(SAMPLES["sglang_decode_without_graph"], engine="vllm") == []
    assert match_log(SAMPLES["eager_mode"], engine="sglang") == []
    # engine-neutral entries (OOM) apply everywhere
    assert [h.id for h in match_log(SAMPLES["cuda_oom"], engine="sglang")] == ["cuda_oom"]


def test_colour_codes_do_not_hide_a_message() -> None:
    log = "\x1b[33m" + SAMPLES["eager_mode"] + "\x1b[0m"
    assert [h.id for h in match_log(log)] == ["eager_mode"]


@pytest.mark.parametrize("entry, message", [
    ({"id": "x", "severity": "info", "pattern": "(", "hint": "h"}, "regex"),
    ({"id": "x", "severity": "loud", "pattern": "a", "hint": "h"}, "severity"),
    ({"id": "x", "severity": "info", "pattern": "a", "hint": "h", "related": ["#12"]},
     "owner/repo"),
])
def test_bad_entries_are_refused(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError):
        parse_signatures([entry])


def test_duplicate_ids_are_refused() -> None:
    entry = {"id": "x", "severity": "info", "pattern": "a", "hint": "h"}
    with pytest.raises(ValueError, match="duplicate"):
        parse_signatures([entry, entry])


def test_custom_catalogue_is_used_when_given() -> None:
    sig = Signature(id="mine", severity="info", pattern="hello", hint="said hello")
    assert [h.id for h in match_log("hello there", [sig])] == ["mine"]


def test_a_line_expected_on_the_runner_is_claimed_but_not_reported() -> None:
    line = V031 + "Model Runner V2 requires Triton; using the V1 model runner instead."
    assert [h.id for h in match_log(line, engine="vllm")] == ["v2_runner_fallback"]
    assert [h.id for h in match_log(line, engine="vllm", runner="h100")] == ["v2_runner_fallback"]
    # vLLM's CPU build prints it at every start; on the cpu runner it says nothing.
    assert match_log(line, engine="vllm", runner="cpu") == []
