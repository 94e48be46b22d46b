"""Map engine flags and Python keyword arguments to one vocabulary of settings.

Every engine spells the same knob differently (`-tp`, `--tp-size`, `tensor_parallel_size`);
the extractors see spellings, the rest of the parser sees these setting names.
"""

from __future__ import annotations

from typing import Any

# Programs that run the model (their flags describe the engine), as opposed to clients
# that only send requests (their flags describe the workload).
ENGINE_PROGRAMS = (
    "vllm serve", "vllm bench throughput", "vllm bench latency", "vllm bench mm-processor",
    "sglang.launch_server", "sglang.bench_one_batch", "sglang.bench_offline_throughput",
    "llama-server", "llama-cli", "llama-speculative", "vllm-mlx serve", "mlx_lm.server",
    "trtllm-serve", "trtllm-bench", "docker run",
)
CLIENT_PROGRAMS = ("vllm bench serve", "sglang.bench_serving", "benchmark_serving.py")

PROGRAM_ENGINE = {
    "vllm": "vllm", "sglang": "sglang", "llama": "llama.cpp", "vllm-mlx": "vllm-mlx",
    "mlx_lm": "vllm-mlx", "trtllm": "tensorrt-llm",
}

# Every engine's flag for the number of tokens drafted per step (SGLang's
# `--speculative-num-steps`, llama.cpp's `--draft-max`...): one setting, whatever the spelling.
_SPEC_TOKEN_FLAGS = (
    "--num-speculative-tokens", "--num-spec-tokens", "--speculative-num-steps",
    "--spec-draft-n-max", "--draft-max", "--draft-n-max", "--spec-tokens", "--draft-tokens",
    "--mtp-num-draft-tokens", "--num-draft-tokens", "--speculative-num-tokens", "--spec-k",
    "--draft",
)

# flag (lower case, `_` → `-`, leading dashes kept) → setting name
FLAGS: dict[str, str] = {
    "--model": "model", "--model-path": "model", "--model-dir": "model", "--model-id": "model",
    "--model-name-or-path": "model", "--target-model": "model",
    "--speculative-model": "draft", "--speculative-draft-model-path": "draft",
    "--speculative-draft-model": "draft", "--draft-model": "draft", "--model-draft": "draft",
    "-md": "draft", "--spec-model": "draft", "--eagle-dir": "draft", "--draft-model-path": "draft",
    "--assistant-model": "draft", "--draft-dir": "draft", "--speculator": "draft",
    "--speculative-config": "spec_config", "-sc": "spec_config",
    "--compilation-config": "compilation_config", "-cc": "compilation_config",
    "-o": "compilation_config",
    **dict.fromkeys(_SPEC_TOKEN_FLAGS, "num_speculative_tokens"),
    "--speculative-algorithm": "method", "--speculative-algo": "method",
    "--spec-method": "method", "--speculative-method": "method", "--method": "method",
    "--spec-decode-method": "method", "--spec-type": "method",
    # vLLM's legacy n-gram flags, and their prompt-lookup spellings elsewhere.
    "--ngram-prompt-lookup-max": "prompt_lookup", "--ngram-prompt-lookup-min": "prompt_lookup",
    "--prompt-lookup-max": "prompt_lookup", "--prompt-lookup-min": "prompt_lookup",
    "--prompt-lookup-num-tokens": "prompt_lookup", "--lookup-ngram-min": "prompt_lookup",
    "--enable-mtp": "mtp_flag",
    "--enforce-eager": "enforce_eager", "--disable-cuda-graph": "enforce_eager",
    "--no-cuda-graph": "enforce_eager",
    "--cudagraph-mode": "cudagraph_mode",
    "-tp": "tp", "--tensor-parallel-size": "tp", "--tp": "tp", "--tp-size": "tp",
    "-dp": "dp", "--data-parallel-size": "dp", "--dp": "dp", "--dp-size": "dp",
    "-ep": "ep", "--enable-expert-parallel": "ep", "--ep": "ep", "--ep-size": "ep",
    "--expert-parallel-size": "ep",
    "--temperature": "temperature", "--temp": "temperature",
    "--top-p": "top_p",
    "--max-tokens": "max_tokens", "--output-len": "max_tokens", "--random-output-len": "max_tokens",
    "--sharegpt-output-len": "max_tokens", "--hf-output-len": "max_tokens",
    "--max-new-tokens": "max_tokens", "--n-predict": "max_tokens", "--output-length": "max_tokens",
    "--max-concurrency": "concurrency", "--concurrency": "concurrency",
    "--max-num-seqs": "max_num_seqs",
    "--batch-size": "batch_size",
    "--dataset-name": "dataset", "--dataset": "dataset", "--dataset-path": "dataset_path",
    "--input-len": "input_len", "--random-input-len": "input_len", "--input-length": "input_len",
    "--num-prompts": "num_prompts", "--request-rate": "request_rate",
    "--ignore-eos": "ignore_eos", "--backend": "backend",
    "--attention-backend": "attention_backend",
    "--mm-encoder-attn-backend": "encoder_attention_backend",
    "--limit-mm-per-prompt": "mm_limits", "--random-mm-limit-mm-per-prompt": "mm_limits",
    "--random-mm-bucket-config": "mm_buckets",
    "--enable-vit-cuda-graph": "encoder_graph", "--mm-encoder-tp-mode": "encoder_tp_mode",
    "--modality": "modality", "--mllm": "mllm",
    "--trust-remote-code": "trust_remote_code",
    "--enable-torch-compile": "torch_compile",
}
# Flags whose meaning depends on the program.
LLAMA_FLAGS = {"-m": "model", "-n": "max_tokens", "-np": "parallel", "--parallel": "parallel"}

# Python keyword arguments (LLM, SamplingParams, sgl.Engine, generate, from_pretrained).
KWARGS: dict[str, str] = {
    "model": "model", "model_path": "model", "pretrained_model_name_or_path": "model",
    "speculative_model": "draft", "speculative_draft_model_path": "draft",
    "assistant_model": "draft", "draft_model": "draft",
    "speculative_config": "spec_config", "compilation_config": "compilation_config",
    "num_speculative_tokens": "num_speculative_tokens",
    "speculative_num_steps": "num_speculative_tokens",
    "num_assistant_tokens": "num_speculative_tokens",
    "prompt_lookup_num_tokens": "prompt_lookup",
    "speculative_algorithm": "method",
    "enforce_eager": "enforce_eager", "disable_cuda_graph": "enforce_eager",
    "tensor_parallel_size": "tp", "tp_size": "tp", "data_parallel_size": "dp", "dp_size": "dp",
    "enable_expert_parallel": "ep", "ep_size": "ep",
    "temperature": "temperature", "top_p": "top_p", "max_tokens": "max_tokens",
    "max_new_tokens": "max_tokens", "ignore_eos": "ignore_eos", "do_sample": "do_sample",
    "max_num_seqs": "max_num_seqs", "attention_backend": "attention_backend",
    "disable_log_stats": "disable_log_stats", "trust_remote_code": "trust_remote_code",
    "limit_mm_per_prompt": "mm_limits",
}

SPEC_CONFIG_KEYS = {"method": "method", "num_speculative_tokens": "num_speculative_tokens",
                    "model": "draft", "draft_tensor_parallel_size": None,
                    "enforce_eager": "draft_enforce_eager"}


def norm_flag(flag: str) -> str:
    head = "--" if flag.startswith("--") else "-"
    return head + flag.lstrip("-").lower().replace("_", "-")


def flag_setting(program: str, flag: str) -> str | None:
    f = norm_flag(flag)
    if program.startswith("llama") and f in LLAMA_FLAGS:
        return LLAMA_FLAGS[f]
    return FLAGS.get(f)


def as_bool(value: Any) -> bool | None:
    """A flag's value: a bare flag is True; `--no-x`/`false`/`0` are False."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    return None


def as_int(value: Any, lo: int = 0, hi: int = 10_000_000) -> int | None:
    try:
        number = int(str(value).strip().strip("'\""))
    except (TypeError, ValueError):
        return None
    return number if lo <= number <= hi else None


def as_float(value: Any, lo: float = 0.0, hi: float = 1e9) -> float | None:
    try:
        number = float(str(value).strip().strip("'\""))
    except (TypeError, ValueError):
        return None
    if number != number:  # NaN
        return None
    return number if lo <= number <= hi else None
