"""Where one decoding step's time went, as a script measured it in a profiled batch.

A RunResult carries this beside its spec counters (`triagebot/run_result.py`); it lives in a
module of its own only to keep the contracts module within its size. The script runs one
extra batch after its warm-ups under `torch.profiler`, with named ranges around the model
runner's step and the parts of it, and writes per-step means here. That batch is never
one of the measured runs, so the profiler's own cost stays out of every throughput.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# The parts of a step, in the order a report lists them.
PARTS = ("drafter", "target", "rejection", "host")
PART_WORDS = {"drafter": "drafter forward", "target": "target forward/verify",
              "rejection": "rejection sampling", "host": "host time between them"}


class StepProfile(BaseModel):
    """Per-step means, in seconds, over the profiled batch's engine steps (its prefill
    included). A part is None where this release has no method to time it by (see
    `notes`); 0.0 where the method exists but never ran (no drafter without speculation)."""

    model_config = ConfigDict(extra="forbid")

    profiler: str = Field(description="what measured it, e.g. 'torch.profiler (CPU)'")
    device: str = Field(description="'cpu' or 'cuda': where the engine ran")
    steps: int = Field(ge=0, description="engine steps in the profiled batch (target forwards)")
    step_s: float | None = Field(default=None, ge=0.0,
                                 description="the model runner's step: execute_model plus "
                                             "sample_tokens")
    drafter_s: float | None = Field(default=None, ge=0.0)
    target_s: float | None = Field(default=None, ge=0.0)
    rejection_s: float | None = Field(default=None, ge=0.0)
    host_s: float | None = Field(default=None, description="the step less the three parts "
                                 "(on a GPU, device work outside them too); None where a "
                                 "part is not measured")
    notes: list[str] = Field(default_factory=list,
                             description="what could not be measured, and why")

    def part(self, name: str) -> float | None:
        """The per-step seconds of one of `PARTS`."""
        value: float | None = getattr(self, f"{name}_s")
        return value
