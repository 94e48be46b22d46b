"""The plan stage's contract: the cells a plan runs and what it compares, validated.

Everything here reaches a rendered script, so every string is held to an allowlist at
this boundary, and every number to a range. Issue text that does not fit is refused with
the rule it broke; nothing is cleaned up and passed on (docs/architecture.md).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from triagebot.request_model import SourceInfo
from triagebot.run_result import SCHEMA_VERSION


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


_HUB_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(?:/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?"
_LOCAL_PATH = r"/[A-Za-z0-9._/-]{1,200}"
_MODEL_ID = rf"^(?:{_HUB_ID}|{_LOCAL_PATH})$"
_REVISION = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_VERSION = r"^\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:\.\d{1,3})?(?:(?:rc|\.post|\.dev)\d{1,6})?$"
_COMMIT = r"^[0-9a-f]{7,40}$"
_ENV_NAME = r"^[A-Z][A-Z0-9_]{0,63}$"
_ENV_VALUE = r"^[A-Za-z0-9._,:=/+-]{0,128}$"
_CONFIG_KEY = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_CONFIG_STR = r"^[A-Za-z0-9._,:/+-]{0,200}$"
_GPU_KIND = r"^[a-z0-9][a-z0-9-]{0,31}$"

ModelId = Annotated[str, StringConstraints(pattern=_MODEL_ID)]
Revision = Annotated[str, StringConstraints(pattern=_REVISION)]
VersionStr = Annotated[str, StringConstraints(pattern=_VERSION)]
CommitSha = Annotated[str, StringConstraints(pattern=_COMMIT)]
EnvName = Annotated[str, StringConstraints(pattern=_ENV_NAME)]
EnvValue = Annotated[str, StringConstraints(pattern=_ENV_VALUE)]
GpuKind = Annotated[str, StringConstraints(pattern=_GPU_KIND)]

PlanEngine = Literal["vllm", "sglang", "vllm-mlx", "transformers"]
PlanSpecMethod = Literal[
    "mtp", "eagle", "eagle3", "ngram", "draft_model", "suffix", "dflash", "medusa"
]
CudagraphMode = Literal["NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE"]
RejectionMethod = Literal["standard", "strict", "probabilistic", "synthetic", "block", "fly"]
PlanWorkloadKind = Literal["offline", "serve", "mm_processor"]
ComparisonKind = Literal["ratio", "noise", "interaction"]


def check_inert(value: Any, path: str = "value", depth: int = 0) -> Any:
    """`value` if it is plain JSON data whose strings fit the config allowlist.

    Config dicts travel from issue text into `LLM(speculative_config=...)` and
    `--speculative-config '<json>'`; keeping them to identifiers, short safe strings,
    finite numbers and booleans means no rendering of them can become code.
    """
    if depth > 4:
        raise ValueError(f"{path}: nested too deeply")
    if value is None or isinstance(value, bool | int):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**12:
            raise ValueError(f"{path}: {value} is out of range")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value} is not a finite number")
        return value
    if isinstance(value, str):
        if not re.fullmatch(_CONFIG_STR, value):
            raise ValueError(
                f"{path}: {value[:40]!r} has characters outside [A-Za-z0-9._,:/+-] "
                "or is longer than 200"
            )
        return value
    if isinstance(value, list | tuple):
        if len(value) > 64:
            raise ValueError(f"{path}: more than 64 items")
        return [check_inert(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if len(value) > 64:
            raise ValueError(f"{path}: more than 64 keys")
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or not re.fullmatch(_CONFIG_KEY, k):
                raise ValueError(f"{path}: key {str(k)[:40]!r} is not an identifier")
            out[k] = check_inert(v, f"{path}.{k}", depth + 1)
        return out
    raise ValueError(f"{path}: {type(value).__name__} is not plain JSON data")


InertConfig = Annotated[dict[str, Any], AfterValidator(check_inert)]


class SpecParams(_Model):
    """The speculative method of one cell, in engine-neutral words."""

    method: PlanSpecMethod
    num_speculative_tokens: int = Field(ge=1, le=16)
    draft_model: ModelId | None = None
    rejection_sample_method: RejectionMethod | None = None
    prompt_lookup_min: int | None = Field(default=None, ge=1, le=64)
    prompt_lookup_max: int | None = Field(default=None, ge=1, le=64)
    draft_enforce_eager: bool | None = None
    # With rejection_sample_method "synthetic": the unconditional acceptance rate of each
    # draft position (non-increasing), which the engine then applies whatever was drafted.
    synthetic_acceptance_rates: list[Annotated[float, Field(ge=0.0, le=1.0)]] | None = Field(
        default=None, max_length=16)


class Sampling(_Model):
    temperature: float = Field(ge=0.0, le=5.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(ge=1, le=65536)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    ignore_eos: bool = True


class CellWorkload(_Model):
    """What the script drives: a batch through the offline API, a served benchmark, or
    the multimodal processor benchmark."""

    kind: PlanWorkloadKind
    api: Literal["generate", "chat"] = "generate"
    dataset: Literal["random", "random-mm", "synthetic"] = "random"
    num_prompts: int = Field(ge=1, le=100_000)
    input_len: int = Field(ge=1, le=1_000_000)
    concurrency: int | None = Field(default=None, ge=1, le=100_000)
    modality: Literal["text", "image", "video"] = "text"
    images_per_prompt: int = Field(default=0, ge=0, le=64)
    videos_per_prompt: int = Field(default=0, ge=0, le=16)
    # Height and width of the synthetic images; None: the engine module's default size.
    image_size: tuple[Annotated[int, Field(ge=1, le=8192)],
                      Annotated[int, Field(ge=1, le=8192)]] | None = None


class Cell(_Model):
    """One engine configuration of a plan: everything a template needs, validated."""

    cell_id: str = Field(pattern=r"^c[0-9a-f]{10}$")
    label: str = Field(pattern=r"^[A-Za-z0-9 _.,:=+/()@-]{1,80}$")
    engine: PlanEngine
    version: VersionStr | None = None
    commit: CommitSha | None = None
    template: str = Field(pattern=r"^[a-z_]+/[a-z_]+\.py\.j2$")
    model: ModelId
    revision: Revision | None = None
    trust_remote_code: bool = False
    spec: SpecParams | None = None
    enforce_eager: bool = False
    cudagraph_mode: CudagraphMode | None = None
    model_runner: Literal["v1", "v2"] | None = None
    encoder_cudagraph: bool | None = None
    mm_encoder_tp_mode: Literal["weights", "data"] | None = None
    tensor_parallel_size: int = Field(default=1, ge=1, le=64)
    data_parallel_size: int = Field(default=1, ge=1, le=64)
    expert_parallel: bool = False
    sampling: Sampling
    workload: CellWorkload
    # Keys the report wrote in its own configs beyond the fields above (e.g. encoder graph
    # token budgets), as written; the engine module translates them per release.
    compilation_config: InertConfig = Field(default_factory=dict)
    extra_speculative_config: InertConfig = Field(default_factory=dict)
    env: dict[EnvName, EnvValue] = Field(default_factory=dict)
    # The version-resolved arguments the engine module built from the fields above
    # (e.g. vLLM's speculative_config for that release). Templates print these verbatim.
    engine_args: InertConfig = Field(default_factory=dict)
    # The axis values that tell this cell apart from its siblings: {"spec": "mtp k=1"}.
    varies: dict[str, str] = Field(default_factory=dict)
    replica: int = Field(default=0, ge=0, le=8)


class Comparison(_Model):
    """numerator cell(s) over denominator cell(s); an interaction divides two comparisons."""

    name: str
    kind: ComparisonKind = "ratio"
    numerator: list[str] = Field(default_factory=list)
    denominator: list[str] = Field(default_factory=list)
    of: list[str] = Field(default_factory=list)
    question: str = ""


class Budget(_Model):
    max_cells: int = Field(default=12, ge=1, le=64)
    runs: int = Field(default=5, ge=1, le=100)
    max_runs: int = Field(default=30, ge=1, le=200)
    warmups: int = Field(default=1, ge=0, le=20)
    time_limit_s: int = Field(default=4 * 3600, ge=10, le=24 * 3600)
    cell_time_limit_s: int = Field(default=1200, ge=10, le=12 * 3600)


class PlanPolicy(_Model):
    """What the repo (or the maintainer on the command line) allows beyond safe defaults.

    `trust_remote_code` lists model ids (optionally `id@revision`) whose own Python code
    may run; nothing else ever gets `trust_remote_code=True`.
    """

    trust_remote_code: list[str] = Field(default_factory=list)

    def allows_remote_code(self, model: str, revision: str | None) -> bool:
        return model in self.trust_remote_code or (
            revision is not None and f"{model}@{revision}" in self.trust_remote_code)


class DefaultUsed(_Model):
    """A value the report did not give, the one the plan chose, and why."""

    field: str
    value: str
    reason: str


class NotCompared(_Model):
    """An axis the report compares that this plan cannot vary on its runner, and why.

    `why` is short, for a headline (the plan's notes give the evidence). `question` is True
    when the axis is the report's own question: it would have been the plan's primary
    axis, so the comparisons the plan does make are not the ones asked."""

    axis: str
    levels: list[str]
    why: str
    question: bool = False


class Plan(_Model):
    schema_version: int = SCHEMA_VERSION
    plan_hash: str = ""
    engine: PlanEngine
    engine_version: str | None = None
    gpu_kind: GpuKind
    question: str
    cells: list[Cell]
    comparisons: list[Comparison] = Field(default_factory=list)
    budget: Budget = Field(default_factory=Budget)
    policy: PlanPolicy = Field(default_factory=PlanPolicy)
    estimated_seconds: float = 0.0
    defaults: list[DefaultUsed] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    not_compared: list[NotCompared] = Field(default_factory=list)
    stands_in_for: str | None = None
    source: SourceInfo = Field(default_factory=SourceInfo)

    def cell(self, cell_id: str) -> Cell:
        for c in self.cells:
            if c.cell_id == cell_id:
                return c
        raise KeyError(cell_id)
