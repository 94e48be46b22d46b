"""What `analyze/against_report.py` finds when it sets the runs beside the report: which
cell each of the reporter's labels names, their ratios and acceptance against ours, and how
the runner's environment differs from the reporter's."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from triagebot.analyze.verdict_words import Verdict


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LabelMatch(_Model):
    """A reporter's labelled throughput and the plan cell it names, if exactly one."""

    label: str
    reported_tok_s: float
    reported_unit: str = Field(default="tok/s", description="what the reporter's figure "
                               "counts, as the report states it")
    cell_id: str | None = Field(default=None,
                                description="the cell the label names; None for none or several")
    cell_label: str | None = None
    ours_median: float | None = None
    ours_unit: str | None = Field(default=None, description="what the cell's figure counts")
    comparable: bool = Field(default=True, description="False when the named cell measures "
                             "another kind of figure: no ratio is formed from this label")
    ours_n: int = 0
    reason: str


class ReportedRatio(_Model):
    """The reporter's ratio for one of our comparisons next to ours."""

    comparison: str
    numerator_label: str
    denominator_label: str
    reported: float
    ours: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n_a: int = 0
    n_b: int = 0
    verdict: Verdict
    reported_class: Literal["DIFFERENT", "SAME"] = Field(
        description="where the reporter's ratio falls against the margin"
    )
    reproduced: bool | None = Field(description="None: our verdict is UNKNOWN")
    sentence: str
    reason: str


class AcceptanceCheck(_Model):
    metric: Literal["acceptance_rate", "acceptance_length"]
    reported: float
    reported_arm: str | None = None
    cell_id: str
    cell_label: str
    ours: float | None = None
    runs: int = 0
    drafts: int = 0
    agrees: bool | None = None
    sentence: str


class EnvField(_Model):
    field: Literal["gpu", "gpu_count", "driver", "cuda", "torch", "engine_version"]
    reported: str | None = None
    ours: str | None = None
    differs: bool | None = Field(description="None when one side is unknown")
    note: str = ""


class EnvDiff(_Model):
    fields: list[EnvField] = Field(default_factory=list)
    sentence: str = ""


class AgainstReport(_Model):
    labels: list[LabelMatch] = Field(default_factory=list)
    unmatched: list[str] = Field(default_factory=list)
    ratios: list[ReportedRatio] = Field(default_factory=list)
    acceptance: list[AcceptanceCheck] = Field(default_factory=list)
    env: EnvDiff = Field(default_factory=EnvDiff)
