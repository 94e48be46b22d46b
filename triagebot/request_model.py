"""The request stage's contract: what a thread asks to be reproduced, as `parse` reads it.

The field names are the ones `triagebot parse --json` prints. Pydantic only: these models
cross module, process and network boundaries, so they validate on the way in and
serialise to plain JSON on the way out (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from triagebot.run_result import SCHEMA_VERSION

Engine = Literal[
    "vllm", "sglang", "vllm-mlx", "llama.cpp", "tensorrt-llm", "vllm-ascend", "transformers"
]
SpecMethod = Literal[
    "mtp", "eagle", "eagle3", "ngram", "draft_model", "suffix", "dflash", "medusa"
]
Mode = Literal[
    "spec", "no_spec", "eager", "cudagraph", "piecewise", "full", "vit_eager", "vit_cudagraph"
]
Symptom = Literal[
    "spec_slower_than_baseline",
    "graph_slower_than_eager",
    "acceptance_drop",
    "crash",
    "regression_between_versions",
    "accuracy",  # outputs or eval scores change: a correctness question, not speed
    "other",
]
Modality = Literal["text", "image", "video"]
WorkloadKind = Literal["offline", "serve", "mm_processor", "latency", "throughput"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Model):
    """Where a value came from: 1-based line in the normalised text and that line."""

    line: int
    text: str
    source: str = ""


class ReportedMetrics(_Model):
    throughput_tok_s: dict[str, float] | None = None
    acceptance_rate: float | None = None
    acceptance_length: float | None = None


class ReportedNumber(_Model):
    """One number the reporter saw, kept with its arm and unit for the report to quote."""

    metric: str
    value: float
    unit: str = ""
    arm: str | None = None
    evidence: Evidence


class Arm(_Model):
    """One configuration the reporter ran, as far as the text states it."""

    name: str
    spec: bool | None = None
    spec_method: SpecMethod | None = None
    num_speculative_tokens: int | None = None
    enforce_eager: bool | None = None
    cudagraph_mode: str | None = None
    model_runner: Literal["v1", "v2"] | None = None
    settings: dict[str, Any] = Field(default_factory=dict)


class Workload(_Model):
    kind: WorkloadKind | None = None
    api: Literal["generate", "chat"] | None = None
    backend: str | None = None
    dataset: str | None = None
    input_len: int | None = None
    output_len: int | None = None
    num_prompts: int | None = None
    request_rate: float | None = None
    ignore_eos: bool | None = None
    image_inputs: int | None = Field(default=None, description="images a prompt may carry "
                                     "(`limit_mm_per_prompt`)")
    video_inputs: int | None = Field(default=None, description="videos a prompt may carry "
                                     "(`limit_mm_per_prompt`)")
    image_size: tuple[int, int] | None = Field(
        default=None, description="height and width of the synthetic images, where every "
        "image bucket of `--random-mm-bucket-config` names the same")


class Environment(_Model):
    """What a pasted `collect_env` dump, `pip list` or prose says about the machine."""

    os: str | None = None
    python: str | None = None
    torch: str | None = None
    cuda_build: str | None = Field(default=None, description="`CUDA used to build PyTorch`")
    cuda_runtime: str | None = Field(default=None,
                                     description="`CUDA runtime version`, or nvcc's release")
    driver: str | None = None
    gpus: list[str] = Field(default_factory=list)
    engine_version: str | None = None
    engine_commit: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    sections: dict[str, dict[str, str]] = Field(default_factory=dict)


class Classification(_Model):
    """The words and evidence that decided scope and symptom, for the report to show."""

    in_scope_reasons: list[str] = Field(default_factory=list)
    spec_reasons: list[str] = Field(default_factory=list)
    out_of_scope_reasons: list[str] = Field(default_factory=list)
    symptom_reasons: list[str] = Field(default_factory=list)


class SourceInfo(_Model):
    title: str | None = None
    repo: str | None = None
    chars: int = 0
    lines: int = 0
    scraped_page: bool = False
    truncated: bool = False


class ReproRequest(_Model):
    """What a thread asks to be reproduced. The field names are the ones `triagebot parse
    --json` prints, which scorers and scripts read, so they do not change."""

    schema_version: int = SCHEMA_VERSION
    in_scope: bool = False
    is_spec_decode_perf_report: bool = False
    engine: Engine | None = None
    engine_version: str | None = None
    engine_commit: str | None = None
    models: list[str] = Field(default_factory=list)
    draft_models: list[str] = Field(default_factory=list)
    spec_method: SpecMethod | None = None
    num_speculative_tokens: list[int] = Field(default_factory=list)
    modes_compared: list[Mode] = Field(default_factory=list)
    tensor_parallel_size: int | None = None
    data_parallel_size: int | None = None
    expert_parallel: bool | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    concurrency: int | None = None
    modality: Modality | None = None
    reported_metrics: ReportedMetrics = Field(default_factory=ReportedMetrics)
    symptom: Symptom | None = None
    # Why the thread was taken up or not, in words (`triagebot parse --help` lists them);
    # the same as classification.in_scope_reasons or .out_of_scope_reasons.
    scope_reasons: list[str] = Field(default_factory=list)

    # What a reproduction needs beyond the fields a report is scored on.
    speculative_config: dict[str, Any] | None = None
    compilation_config: dict[str, Any] | None = None
    cudagraph_mode: str | None = None
    enforce_eager: bool | None = None
    model_runner: Literal["v1", "v2"] | None = None
    attention_backend: str | None = None
    env_vars: dict[str, str] = Field(default_factory=dict)
    arms: list[Arm] = Field(default_factory=list)
    workload: Workload = Field(default_factory=Workload)
    environment: Environment = Field(default_factory=Environment)
    reported: list[ReportedNumber] = Field(default_factory=list)

    classification: Classification = Field(default_factory=Classification)
    evidence: dict[str, list[Evidence]] = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    # Values the thread offers for a missing field without saying they ran (a draft
    # checkpoint named in passing): what a refusal can suggest, never what a plan uses.
    suggestions: dict[str, list[str]] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    source: SourceInfo = Field(default_factory=SourceInfo)
