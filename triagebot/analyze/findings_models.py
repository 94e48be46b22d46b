"""Pydantic shapes for the statistical part of Findings (design.md §3, §5).

Every number that a report may quote carries the run counts it rests on (`n`, `n_a`,
`n_b`, ...), and every verdict or flag carries the reason that decided it, so the report
never has to re-derive why. Undefined quantities are `None`, not NaN: NaN does not survive
JSON, and "we could not compute this" must be visible as such.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["DIFFERENT", "SAME", "UNKNOWN"]
BandSource = Literal["aa_pair", "default"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CellSummary(_Model):
    """One cell's throughput (or any higher-is-better metric) over its measured runs."""

    n: int
    median: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float = 0.95
    mean: float | None = None
    cv: float | None = Field(default=None, description="sample std (ddof=1) / mean")
    minimum: float | None = None
    maximum: float | None = None
    dropped: int = Field(default=0, description="non-finite samples left out")
    reason: str | None = Field(default=None, description="why a statistic is missing")


class NoiseBand(_Model):
    """The ratios that count as "no different from running the same thing twice".

    `low`/`high` are ratio bounds, symmetric on the log scale: low = 1/high.
    """

    low: float
    high: float
    half_width: float = Field(description="log-scale half-width δ; band = [e^-δ, e^δ]")
    source: BandSource
    floor: float
    aa_ratio: float | None = None
    aa_ci_low: float | None = None
    aa_ci_high: float | None = None
    aa_n_a: int = 0
    aa_n_b: int = 0
    note: str = ""


class ComparisonResult(_Model):
    """Numerator cell `a` over denominator cell `b` (ratio of medians)."""

    name: str = ""
    n_a: int
    n_b: int
    median_a: float | None = None
    median_b: float | None = None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float = 0.95
    p_value: float | None = None
    p_method: str | None = None
    alpha: float = Field(description="threshold the p-value was held to at this look")
    band: NoiseBand
    verdict: Verdict
    reason: str


class Interaction(_Model):
    """Ratio of ratios: (a1/b1) / (a2/b2), e.g. (spec/no_spec @ graph) / (... @ eager)."""

    name: str = ""
    n_a1: int
    n_b1: int
    n_a2: int
    n_b2: int
    ratio_1: float | None = None
    ratio_2: float | None = None
    ratio_of_ratios: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float = 0.95
    strict_ci_low: float | None = None
    strict_ci_high: float | None = None
    strict_ci_level: float = 0.99
    band: NoiseBand
    verdict: Verdict
    reason: str


class Decision(_Model):
    """What the runner should do after a look at one comparison (adaptive escalation)."""

    action: Literal["stop", "run_more"]
    more_runs_per_arm: int = 0
    runs_so_far: int
    max_runs: int
    look: int = Field(description="0-based index of this look in the schedule")
    looks_planned: int
    schedule: list[int]
    comparison: ComparisonResult
    reason: str


# --- speculative decoding --------------------------------------------------------------


class AcceptanceStats(_Model):
    """vLLM's definitions (engines.md §2): rate = accepted / draft tokens,
    mean length = 1 + accepted / drafts, per-position[i] = accepted_at_i / drafts."""

    num_drafts: int
    num_draft_tokens: int
    num_accepted_tokens: int
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position: list[float] = Field(default_factory=list)
    draft_tokens_per_draft: float | None = None
    notes: list[str] = Field(default_factory=list)


class StepCost(_Model):
    """Time per decoding step of the spec arm relative to the baseline arm.

    A spec step emits `acceptance_length` tokens on average, a baseline step one, so spec
    is faster only while the step costs less than `acceptance_length` baseline steps.
    """

    acceptance_length: float
    tok_s_spec: float
    tok_s_base: float
    step_seconds_spec: float
    step_seconds_base: float
    relative_cost: float = Field(description="spec step / baseline step")
    relative_cost_ci_low: float | None = None
    relative_cost_ci_high: float | None = None
    break_even_cost: float = Field(description="= acceptance_length")
    speedup: float = Field(description="tok_s_spec / tok_s_base")
    spec_pays_off: bool
    sentence: str


class StepCostFit(_Model):
    """Least-squares fit of step(k) = base + fixed + per_token * k over a k sweep."""

    ks: list[int]
    step_seconds: list[float]
    n_points: int
    base_seconds: float | None = None
    base_known: bool
    fixed_seconds: float | None = None
    per_token_seconds: float | None = None
    intercept_seconds: float | None = Field(
        default=None, description="base + fixed; what the fit sees at k = 0"
    )
    fixed_se: float | None = None
    per_token_se: float | None = None
    fixed_rel_base: float | None = None
    per_token_rel_base: float | None = None
    r_squared: float | None = None
    rmse_seconds: float | None = None
    max_rel_residual: float | None = None
    ok: bool
    reason: str


class CollapseFlag(_Model):
    arm: str
    kind: Literal["length_near_one", "rate_drop"]
    value: float
    reference_arm: str | None = None
    reference_value: float | None = None
    reason: str


class DivergenceResult(_Model):
    checked: bool
    diverged: bool = False
    groups: list[list[str]] = Field(
        default_factory=list, description="arms that produced identical tokens, per digest"
    )
    missing: list[str] = Field(default_factory=list)
    reason: str


class SpecDiagnostics(_Model):
    """Everything about the drafter and the harness for one spec arm."""

    arm: str
    acceptance: AcceptanceStats
    step_cost: StepCost | None = None
    collapse: list[CollapseFlag] = Field(default_factory=list)
