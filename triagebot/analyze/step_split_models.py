"""Pydantic shapes of the step split: where one decoding step's time goes, per mode."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PartName = Literal["drafter", "target", "rejection", "host"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepPart(_Model):
    name: PartName
    words: str = Field(description="what the part is, for the report")
    seconds: float | None = Field(default=None, description="per step; None: not measured")


class CudagraphModes(_Model):
    """How the target and the drafter ran CUDA graphs, read from the engine's log."""

    target: str | None = Field(default=None, description="e.g. FULL, PIECEWISE, NONE")
    drafter: str | None = None
    held_back: bool = Field(default=False, description="the drafter at PIECEWISE (or none) "
                            "while the target replays FULL graphs")
    sentence: str
    evidence: list[str] = Field(default_factory=list)


class CellSplit(_Model):
    """One cell's step, averaged over the profiled batches of its engine starts."""

    cell_id: str
    cell_label: str
    speculates: bool
    profiles: int = Field(description="distinct profiled batches (one per engine start)")
    steps: int = Field(description="engine steps over those batches")
    profiler: str
    device: str
    step_s: float | None = None
    parts: list[StepPart] = Field(default_factory=list)
    largest: PartName | None = Field(default=None, description="the part with most time")
    notes: list[str] = Field(default_factory=list)
    cudagraphs: CudagraphModes | None = Field(default=None, description="on a GPU only")


class StepSplitFinding(_Model):
    """The spec cells of one mode (the cells' context apart from speculation), each step
    split into its parts, beside the same mode's no-spec step where it was profiled."""

    context: str
    cells: list[CellSplit]
    baseline: CellSplit | None = Field(default=None,
                                       description="the mode's no-spec cell, profiled alike")
    sentences: list[str] = Field(default_factory=list,
                                 description="per spec cell: its largest part, and its step "
                                             "against the no-spec step")
