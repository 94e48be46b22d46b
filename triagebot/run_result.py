"""What every rendered script writes back: a RunResult, its runs, its counters.

Scripts run in the engine's own environment and write JSON; these models read it back at
the boundary (re-exported by `triagebot.model` with the other contracts).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from triagebot.step_profile import StepProfile

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- Runs ------------------------------------------------------------------------------
RunStatus = Literal["ok", "failed", "oom", "timeout", "hang", "crashed", "config_rejected"]


class RunEnv(_Model):
    """The machine a script ran on, as the script's own process saw it."""

    gpu: str | None = None
    gpu_count: int | None = None
    driver: str | None = None
    cuda: str | None = Field(
        default=None, description="the CUDA the run used (torch.version.cuda where a GPU was "
                                  "usable), 'none' where it ran without one")
    torch: str | None = None
    engine_version: str | None = None
    engine_commit: str | None = None


class RunMeasurement(_Model):
    """One measured run; the latencies are medians over its requests, where the workload's
    benchmark reports them (served runs)."""

    output_tokens: int
    seconds: float
    tok_s: float
    ttft_ms: float | None = Field(default=None, description="time to first token")
    tpot_ms: float | None = Field(default=None, description="time per output token")
    itl_ms: float | None = Field(default=None, description="inter-token latency")
    cpu_s: float | None = Field(
        default=None, ge=0.0,
        description="CPU seconds the script's process tree used during the run (every "
                    "thread of the front end and the engine), where the script measures it")
    batches: int | None = Field(default=None, ge=1,
                                description="batches the run repeated to last long enough")


class SpecCounters(_Model):
    """Speculative-decoding counters, summed over the measured runs (warmups left out)."""

    num_drafts: int = Field(description="draft steps the target verified")
    num_draft_tokens: int = Field(description="tokens the drafter proposed")
    num_accepted_tokens: int = Field(description="proposed tokens the target accepted")
    per_position_accepted: list[int] = Field(
        default_factory=list,
        description="accepted tokens by position in the draft; empty where not counted",
    )


class CudaGraphEvidence(_Model):
    """How a script's cell used CUDA graphs, read from torch itself during one profiled
    generate after the measured runs (the transformers engine on CUDA)."""

    source: str = Field(description="what the figures were read from, e.g. torch.profiler")
    graph_launches: int | None = Field(default=None, description="cudaGraphLaunch calls")
    kernel_launches: int | None = Field(default=None,
                                        description="kernels launched one by one, not in a graph")
    target_forwards: int | None = Field(default=None,
                                        description="the target's forward passes in that generate")
    prefills: int = Field(default=1, description="of those, prefills (eager in every cell)")
    cudagraph_skips: int | None = Field(
        default=None, description="times inductor skipped CUDA graphs for a compiled function "
                                  "(dynamo's counters, over the whole process)")
    error: str | None = Field(default=None, description="why the figures could not be read")


class RunResult(_Model):
    """What every rendered script writes to `$TRIAGEBOT_RESULT`."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    cell_id: str
    engine: str
    engine_version: str | None = None
    status: RunStatus
    error: str | None = None
    env: RunEnv = Field(default_factory=RunEnv)
    runs: list[RunMeasurement] = Field(default_factory=list)
    warmups: int = 0
    spec: SpecCounters | None = None
    outputs_digest: str | None = None
    # What the script could not measure on this engine release, in words for the report.
    notes: list[str] = Field(default_factory=list)
    log_tail: str = ""
    # Where the script reads it (transformers on CUDA); None elsewhere.
    cuda_graphs: CudaGraphEvidence | None = None
    # The plan round this result measured, set by the runner (a script does not know it);
    # compared cells are paired round by round on it.
    round: int | None = Field(default=None, ge=0)
    # One profiled batch's step split, outside the runs (vLLM offline, spec axis cells).
    step_profile: StepProfile | None = None
