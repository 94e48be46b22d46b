"""Pydantic shapes for the statistical part of Findings (README, "Statistics").

Every number that a report may quote carries the run counts it rests on (`n`, `n_a`,
`n_b`, ...), and every verdict or flag carries the reason that decided it, so the report
never has to re-derive why. Undefined quantities are `None`, not NaN: NaN does not survive
JSON, and "we could not compute this" must be visible as such.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from triagebot.analyze.against_report_models import AgainstReport
from triagebot.analyze.outcome_models import NeverEngaged, Outcome
from triagebot.analyze.step_split_models import StepSplitFinding
from triagebot.analyze.synthetic_models import PinnedMode
from triagebot.analyze.throughput_metric import TOKENS_PER_SECOND, ThroughputMetric
from triagebot.analyze.verdict_words import Verdict

BandSource = Literal["aa_pair", "default", "margin"]


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
    aa_ratio: float | None = Field(default=None, description="median(A) / median(A') of the "
                                   "A/A pair; None when the band is not measured")
    aa_ci_low: float | None = Field(default=None, description="with aa_ci_high, the 95 % "
                                    "bootstrap CI of aa_ratio")
    aa_ci_high: float | None = None
    aa_n_a: int = Field(default=0, description="runs in the pair's first cell (0: no pair)")
    aa_n_b: int = 0
    note: str = ""


class DriftCheck(_Model):
    """A linear trend of throughput in time within the cells of one comparison."""

    per_round: float = Field(description="relative change of throughput per round")
    p_value: float
    present: bool
    rounds: int
    note: str


class ComparisonResult(_Model):
    """Numerator cell `a` over denominator cell `b`, as `verdict.py` compares them."""

    name: str = ""
    n_a: int
    n_b: int
    median_a: float | None = None
    median_b: float | None = None
    ratio: float | None = Field(default=None,
                                description="ratio of geometric means, rounds as blocks")
    ci_low: float | None = Field(default=None, description="with ci_high, the interval the "
                                 "verdict holds to the margin at this look")
    ci_high: float | None = None
    ci_level: float = Field(default=0.95, description="the interval's nominal coverage, which "
                            "grows as looks are spent")
    p_value: float | None = None
    p_method: str | None = None
    alpha: float = Field(description="threshold the p-value was held to at this look")
    band: NoiseBand = Field(description="the SAME region: the practical margin")
    margin: float | None = Field(default=None, description="SAME means within ±margin")
    negligible: float = Field(default=0.0, ge=0.0,
                              description="DIFFERENT means beyond ±negligible (0: beyond 0)")
    method: str = ""
    signal: str = Field(default="throughput", description="the measurement that decided")
    look: int | None = Field(default=None, description="0-based look of the schedule")
    looks: int | None = None
    t_stat: float | None = None
    different_bound: float | None = Field(default=None, description="|T| needed for DIFFERENT")
    same_bound: float | None = Field(default=None, description="t multiplier of the interval")
    df: float | None = None
    rounds: int = Field(default=0, description="rounds in which both arms ran")
    run_cv: float | None = Field(default=None, description="run-to-run CV, blocks removed")
    target_runs: int | None = Field(
        default=None, description="runs per arm by which the DIFFERENT test spends all its "
        "error, for the noise measured so far (`looks.target_runs`)")
    different_closed: bool = Field(
        default=False, description="the DIFFERENT test reached its target runs at this or "
        "an earlier look: from here on only SAME can still be reached")
    drift: DriftCheck | None = None
    verdict: Verdict
    reason: str


class Interaction(_Model):
    """Ratio of ratios: (a1/b1) / (a2/b2), e.g. (spec/no_spec @ graph) / (... @ eager)."""

    name: str = ""
    n_a1: int
    n_b1: int
    n_a2: int
    n_b2: int
    ratio_1: float | None = Field(default=None, description="median(a1) / median(b1)")
    ratio_2: float | None = Field(default=None, description="median(a2) / median(b2)")
    ratio_of_ratios: float | None = None
    ci_low: float | None = Field(default=None, description="with ci_high, the bootstrap CI at "
                                 "ci_level: SAME when it lies inside the band")
    ci_high: float | None = None
    ci_level: float = 0.95
    strict_ci_low: float | None = Field(default=None, description="with strict_ci_high, the "
                                        "bootstrap CI at strict_ci_level (1 - alpha): "
                                        "DIFFERENT when it lies outside the band")
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


class RatioExplanation(_Model):
    """A throughput ratio split into tokens per target step and seconds per target step.

    tok/s = (tokens per target step) / (seconds per target step), so for A over B
    throughput ratio = tokens_per_step_ratio / step_cost_ratio, exactly. Tokens per step
    (the acceptance length, or output tokens over counted target forward passes) is nearly
    deterministic under greedy sampling, so it is read as exact; the step cost carries the
    throughput interval.
    """

    tokens_per_step_a: float
    tokens_per_step_b: float
    source: str = Field(description="where tokens per step came from")
    throughput_ratio: float
    tokens_per_step_ratio: float
    step_cost_ratio: float
    step_cost_ci_low: float | None = None
    step_cost_ci_high: float | None = None
    acceptance_share: float | None = Field(
        default=None, description="share of the log throughput change due to tokens per step")
    driver: Literal["acceptance", "step cost", "both", "neither"]
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


# --- findings: what analyze() hands to the report ---------------------------------------

Severity = Literal["info", "warning", "error"]
CellStatus = Literal[
    "ok", "failed", "oom", "timeout", "hang", "crashed", "config_rejected", "missing", "no_runs"
]


class EncoderTimes(_Model):
    """What `vllm bench mm-processor` measured per request, one value a measured run
    (that run's mean over its requests)."""

    encoder_forward_ms: list[float]
    preprocessor_ms: list[float] = Field(default_factory=list)
    encoder_calls: int = Field(default=0, description="encoder calls over all runs")


class CellFinding(_Model):
    """One plan cell after all its rounds of runs were merged."""

    cell_id: str
    label: str
    varies: dict[str, str] = Field(default_factory=dict)
    replica: int = 0
    status: CellStatus
    error: str | None = Field(default=None, description="why the cell has no usable runs")
    rounds: int = Field(default=0, description="RunResults merged into this cell")
    notes: list[str] = Field(default_factory=list)
    throughput: CellSummary
    cpu_throughput: CellSummary | None = Field(
        default=None, description="output tokens per CPU second of the engine's process "
                                  "tree, where every run recorded its CPU time; beside the "
                                  "wall-clock throughput the verdicts use")
    acceptance: AcceptanceStats | None = None
    tokens_per_step: float | None = Field(
        default=None, description="output tokens per target forward step")
    tokens_per_step_source: str | None = None
    outputs_digest: str | None = None
    encoder: EncoderTimes | None = Field(
        default=None, description="the multimodal encoder's times (mm-processor cells)")
    throughput_metric: ThroughputMetric = Field(
        default_factory=lambda: TOKENS_PER_SECOND,
        description="what `throughput` counts: only a figure of the same kind is set "
                    "beside it")


class ComparisonFinding(_Model):
    """A plan comparison (ratio or noise) with its statistics and, for spec vs no-spec
    pairs, the step cost."""

    name: str
    kind: Literal["ratio", "noise"]
    question: str = ""
    numerator: list[str]
    denominator: list[str]
    main: bool = Field(default=False, description="answers the plan's main question")
    result: ComparisonResult
    step_cost: StepCost | None = None
    explanation: RatioExplanation | None = None
    next_action: str = Field(default="", description="what escalation would do next")


class InteractionFinding(_Model):
    name: str
    question: str = ""
    of: list[str]
    result: Interaction


class StepFitFinding(_Model):
    """A k sweep of one spec method in one context, fitted to base + fixed + per_token*k."""

    context: str
    method: str
    cells: list[str]
    fit: StepCostFit


class DivergenceFinding(_Model):
    """Greedy outputs of cells that differ only in speculation, in one context."""

    context: str
    cells: list[str]
    result: DivergenceResult


class SignatureHit(_Model):
    """A known log message found in one cell's log."""

    id: str
    severity: Severity
    hint: str
    related: list[str] = Field(default_factory=list)
    cell_id: str = ""
    count: int = Field(description="matching lines, including those not kept as evidence")
    evidence: list[str] = Field(default_factory=list)


class Hint(_Model):
    """Something a maintainer should read, with the evidence that triggered it."""

    severity: Severity
    source: str = Field(description="signature id, 'collapse', 'divergence', 'run', ...")
    text: str
    cells: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)


class GraphCheck(_Model):
    """Whether a cell of the graph axis ran as its label says, on a runner with a GPU."""

    cell_id: str
    cell_label: str
    arm: Literal["graph", "eager"]
    state: Literal["replayed", "partial", "none", "eager", "unknown"] = Field(
        description="replayed: CUDA graphs ran every decode step; partial: some steps or "
                    "functions ran eager; none: no graph ran; eager: an eager cell that "
                    "launched none; unknown: no evidence either way")
    flagged: bool = Field(description="the cell did not run as its label says, or cannot "
                                      "show that it did")
    source: str | None = Field(default=None, description="where the evidence was read")
    sentence: str


class Findings(_Model):
    """Everything the report says, computed once, so the report only prints it."""

    schema_version: int = 1
    plan_hash: str = ""
    engine: str
    engine_version: str | None = None
    question: str = ""
    outcome: Outcome
    outcome_reason: str
    headline: str
    cells: list[CellFinding]
    noise: NoiseBand
    comparisons: list[ComparisonFinding] = Field(default_factory=list)
    interactions: list[InteractionFinding] = Field(default_factory=list)
    step_fits: list[StepFitFinding] = Field(default_factory=list)
    collapse: list[CollapseFlag] = Field(default_factory=list)
    never_engaged: list[NeverEngaged] = Field(default_factory=list)
    divergence: list[DivergenceFinding] = Field(default_factory=list)
    signatures: list[SignatureHit] = Field(default_factory=list)
    hints: list[Hint] = Field(default_factory=list)
    against_report: AgainstReport | None = None
    pinned: list[PinnedMode] = Field(default_factory=list)  # per mode: why slower or faster
    runner_env: dict[str, str | int | None] = Field(default_factory=dict)
    graphs: list[GraphCheck] = Field(
        default_factory=list, description="the graph axis's cells on a GPU runner")
    step_splits: list[StepSplitFinding] = Field(default_factory=list)
    margin: float = Field(default=0.03, description="SAME means within ±margin")
    negligible: float = Field(default=0.0, ge=0.0,
                              description="DIFFERENT means beyond ±negligible (0: beyond 0)")
    decided_by: str = Field(default="", description="the signal the outcome rests on")
    key_comparison: str = Field(default="", description="the main comparison the headline "
                                "leads with: the one that decided (empty: none ran)")
    needs_more_runs: dict[str, int] = Field(
        default_factory=dict, description="comparison name -> more runs per arm (an "
        "UNKNOWN ratio, or an A/A pair that came out DIFFERENT)")
    notes: list[str] = Field(default_factory=list)
