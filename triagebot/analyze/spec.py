"""Separate drafter quality (acceptance) from harness overhead (step cost).

A "-38 % throughput" headline does not say whether the drafter got worse or each step got
dearer. Acceptance comes from the engine's counters; step cost comes from combining the
acceptance length with throughput: a spec step emits `acceptance_length` tokens, a baseline
step emits one, so

    step_seconds_spec = acceptance_length / tok_s_spec,   step_seconds_base = 1 / tok_s_base

and spec pays off only while step_seconds_spec / step_seconds_base < acceptance_length.
When k (num_speculative_tokens) is swept, step(k) = base + fixed + per_token * k splits the
overhead into what every spec step pays (drafter launch, verify bookkeeping, graph
fallbacks) and what each drafted token adds (vllm#47277 did this by hand).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from triagebot.analyze.findings_models import (
    AcceptanceStats,
    CollapseFlag,
    DivergenceResult,
    RatioExplanation,
    SpecDiagnostics,
    StepCost,
    StepCostFit,
)
from triagebot.run_result import SpecCounters

COLLAPSE_LENGTH = 1.1
COLLAPSE_RATE_FRACTION = 0.5
MIN_K_POINTS = 3
# Tokens per step is a ratio of counts, not a timing: under greedy sampling two runs of the
# same build agree to well under 1 %, so 2 % apart is a changed drafter, not noise.
SAME_TOKENS_PER_STEP = 0.02


# --- acceptance -------------------------------------------------------------------------


def acceptance(counters: SpecCounters) -> AcceptanceStats:
    """Rate, mean length and per-position acceptance with vLLM's definitions (engines.md §2).

    Counters are deltas over the timed region. Inconsistent counters are reported in
    `notes` rather than raised: they come from engine logs we do not control.
    """
    drafts, drafted, accepted = (
        counters.num_drafts,
        counters.num_draft_tokens,
        counters.num_accepted_tokens,
    )
    notes: list[str] = []
    if min(drafts, drafted, accepted) < 0:
        notes.append("negative counter: not a before/after delta of cumulative counters?")
    if accepted > drafted:
        notes.append(f"accepted ({accepted}) exceeds drafted ({drafted})")
    per_pos_sum = sum(counters.per_position_accepted)
    if counters.per_position_accepted and per_pos_sum != accepted:
        notes.append(f"per-position accepted sums to {per_pos_sum}, total says {accepted}")
    ok_drafts = drafts > 0
    if not ok_drafts:
        notes.append("no drafts: spec decoding did not run in the timed region")
    return AcceptanceStats(
        num_drafts=drafts,
        num_draft_tokens=drafted,
        num_accepted_tokens=accepted,
        acceptance_rate=accepted / drafted if drafted > 0 else None,
        mean_acceptance_length=1.0 + accepted / drafts if ok_drafts else None,
        per_position=[p / drafts for p in counters.per_position_accepted] if ok_drafts else [],
        draft_tokens_per_draft=drafted / drafts if ok_drafts else None,
        notes=notes,
    )


# --- step cost --------------------------------------------------------------------------


def step_seconds(acceptance_length: float, tok_s: float) -> float:
    """Seconds per decoding step: tokens per step over tokens per second."""
    return acceptance_length / tok_s


def step_cost(
    acceptance_length: float,
    tok_s_spec: float,
    tok_s_base: float,
    *,
    ratio_ci: tuple[float, float] | None = None,
) -> StepCost | None:
    """The break-even comparison, or None when an input is not a positive finite number.

    `ratio_ci` is the interval of tok_s_spec / tok_s_base (the verdict's); since
    cost = length / ratio, it maps to the cost's CI with its ends swapped.
    """
    values = (acceptance_length, tok_s_spec, tok_s_base)
    if not all(math.isfinite(v) and v > 0 for v in values):
        return None
    spec_s = step_seconds(acceptance_length, tok_s_spec)
    base_s = step_seconds(1.0, tok_s_base)
    cost = spec_s / base_s
    lo = hi = None
    if ratio_ci and all(math.isfinite(v) and v > 0 for v in ratio_ci):
        lo, hi = acceptance_length / ratio_ci[1], acceptance_length / ratio_ci[0]
    pays = cost < acceptance_length
    sentence = (
        f"with acceptance length {acceptance_length:.2f} the spec step may cost at most "
        f"{acceptance_length:.2f}x the baseline step; it costs {cost:.1f}x"
        + (f" (CI {lo:.1f}x-{hi:.1f}x)" if lo is not None and hi is not None else "")
        + ("" if pays else ", so spec decoding is slower")
    )
    return StepCost(
        acceptance_length=acceptance_length,
        tok_s_spec=tok_s_spec,
        tok_s_base=tok_s_base,
        step_seconds_spec=spec_s,
        step_seconds_base=base_s,
        relative_cost=cost,
        relative_cost_ci_low=lo,
        relative_cost_ci_high=hi,
        break_even_cost=acceptance_length,
        speedup=tok_s_spec / tok_s_base,
        spec_pays_off=pays,
        sentence=sentence,
    )


def tokens_per_step(
    acceptance: AcceptanceStats | None, target_steps: int | None, output_tokens: int | None,
) -> tuple[float, str] | None:
    """Output tokens per target forward step, and where the number came from.

    Counted forward passes (the transformers engine records them) are the direct measure;
    otherwise a spec cell's mean acceptance length is the same quantity for one sequence.
    """
    if target_steps and output_tokens and target_steps > 0 and output_tokens > 0:
        return output_tokens / target_steps, "counted target forward passes"
    if acceptance is not None and acceptance.mean_acceptance_length:
        return acceptance.mean_acceptance_length, "acceptance length"
    return None


def explain_ratio(
    throughput_ratio: float,
    ratio_ci: tuple[float, float] | None,
    per_step_a: float,
    per_step_b: float,
    *,
    source: str = "acceptance length",
) -> RatioExplanation | None:
    """Split throughput A/B into tokens per step and step cost (RatioExplanation).

    The step cost is "unchanged" when its interval (the throughput interval carried
    through) contains 1; tokens per step is unchanged within SAME_TOKENS_PER_STEP.
    """
    values = (throughput_ratio, per_step_a, per_step_b)
    if not all(math.isfinite(v) and v > 0 for v in values):
        return None
    tps = per_step_a / per_step_b
    cost = tps / throughput_ratio
    lo = hi = None
    if ratio_ci and all(math.isfinite(v) and v > 0 for v in ratio_ci):
        lo, hi = tps / ratio_ci[1], tps / ratio_ci[0]
    tps_same = abs(math.log(tps)) < math.log1p(SAME_TOKENS_PER_STEP)
    cost_same = lo is not None and hi is not None and lo <= 1.0 <= hi
    share = None
    if abs(math.log(throughput_ratio)) > 1e-9:
        share = math.log(tps) / math.log(throughput_ratio)
    accept = f"{per_step_b:.2f} → {per_step_a:.2f} tokens per target step"
    cost_words = f"step cost {'up' if cost > 1 else 'down'} {abs(cost - 1):.0%}" + (
        f" [{lo - 1:+.0%}, {hi - 1:+.0%}]" if lo is not None and hi is not None else "")
    driver: Literal["acceptance", "step cost", "both", "neither"]
    if tps_same and cost_same:
        driver = "neither"
        sentence = f"acceptance unchanged ({accept}) and step cost unchanged ({cost_words})"
    elif tps_same:
        driver = "step cost"
        sentence = (f"acceptance unchanged ({accept}); {cost_words}: the change is in what "
                    "a step costs, not in the drafter")
    elif cost_same:
        driver = "acceptance"
        sentence = (f"throughput {throughput_ratio:.2f}x is fully explained by acceptance "
                    f"{accept} ({tps:.2f}x); step cost unchanged ({cost_words})")
    else:
        driver = "both"
        head = f"acceptance {accept} ({tps:.2f}x)"
        change = f"throughput change ({throughput_ratio:.2f}x)"
        if share is None or share < 0:
            sentence = f"{head} works against the {change}; {cost_words} outweighs it"
        elif share > 1:
            sentence = f"{head} more than explains the {change}; {cost_words} offsets part"
        else:
            sentence = f"{head} explains {share:.0%} of the {change}; {cost_words} makes the rest"
    return RatioExplanation(
        tokens_per_step_a=per_step_a, tokens_per_step_b=per_step_b, source=source,
        throughput_ratio=throughput_ratio, tokens_per_step_ratio=tps, step_cost_ratio=cost,
        step_cost_ci_low=lo, step_cost_ci_high=hi, acceptance_share=share,
        driver=driver,
        sentence=sentence)


# --- k sweep ----------------------------------------------------------------------------


def _points(ks: list[int], ys: list[float], base: float | None) -> dict[str, Any]:
    """The fit's inputs, as every StepCostFit reports them."""
    return {"ks": ks, "step_seconds": ys, "n_points": len(ks), "base_seconds": base,
            "base_known": base is not None}


def _fit_failure(ks: list[int], ys: list[float], base: float | None, why: str) -> StepCostFit:
    return StepCostFit(**_points(ks, ys, base), ok=False, reason=why)


def fit_step_cost(
    points: Sequence[tuple[int, float]], base_seconds: float | None = None
) -> StepCostFit:
    """Least squares of step(k) = base + fixed + per_token * k over (k, step_seconds).

    With the baseline step known (1 / tok_s of the no-spec arm), base is subtracted and
    the fit is y - base = fixed + per_token * k; without it only base + fixed is
    identifiable. Needs >= 3 distinct k so that the residual says how well a straight line
    explains the sweep (two points always fit exactly).
    """
    clean = [(int(k), float(y)) for k, y in points if math.isfinite(y) and y > 0 and k >= 1]
    ks = [k for k, _ in clean]
    ys = [y for _, y in clean]
    base = base_seconds if base_seconds and math.isfinite(base_seconds) else None
    if len(set(ks)) < MIN_K_POINTS:
        return _fit_failure(ks, ys, base, f"need >= {MIN_K_POINTS} distinct k >= 1 values")
    k_arr, y_arr = np.asarray(ks, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    design = np.column_stack([np.ones_like(k_arr), k_arr])
    coef, *_ = np.linalg.lstsq(design, y_arr, rcond=None)
    intercept, per_token = float(coef[0]), float(coef[1])
    resid = y_arr - design @ coef
    dof = len(ks) - 2
    rss = float(resid @ resid)
    tss = float(((y_arr - y_arr.mean()) ** 2).sum())
    cov = (rss / dof) * np.linalg.inv(design.T @ design) if dof > 0 else None
    fixed = intercept - base if base is not None else None
    return StepCostFit(
        **_points(ks, ys, base),
        fixed_seconds=fixed,
        per_token_seconds=per_token,
        intercept_seconds=intercept,
        fixed_se=float(math.sqrt(cov[0, 0])) if cov is not None else None,
        per_token_se=float(math.sqrt(cov[1, 1])) if cov is not None else None,
        fixed_rel_base=fixed / base if fixed is not None and base else None,
        per_token_rel_base=per_token / base if base else None,
        r_squared=1.0 - rss / tss if tss > 0 else None,
        rmse_seconds=math.sqrt(rss / len(ks)),
        max_rel_residual=float(np.max(np.abs(resid) / y_arr)),
        ok=True,
        reason="fit"
        + ("" if base is not None else ": no baseline step, fixed overhead not separable"),
    )


# --- collapse and divergence ------------------------------------------------------------


def detect_collapse(arms: Mapping[str, AcceptanceStats]) -> list[CollapseFlag]:
    """Flag arms whose drafter stopped working (an acceptance collapse is a functional
    regression, not a slowdown: vllm#54997 shows 0 % under graphs vs 92 % eager).

    length_near_one: mean acceptance length < 1.1. rate_drop: acceptance rate below half
    the best other arm's. The caller passes only arms that should accept alike (same
    model, drafter and k), since a different k legitimately changes the rate.
    """
    flags: list[CollapseFlag] = []
    for arm, st in arms.items():
        length = st.mean_acceptance_length
        if length is not None and length < COLLAPSE_LENGTH:
            flags.append(
                CollapseFlag(
                    arm=arm,
                    kind="length_near_one",
                    value=length,
                    reason=f"mean acceptance length {length:.2f} < {COLLAPSE_LENGTH}: "
                    "almost no draft token is accepted",
                )
            )
        ref = _best_other_rate(arms, arm)
        rate = st.acceptance_rate
        if ref and rate is not None and rate < COLLAPSE_RATE_FRACTION * ref[1]:
            flags.append(
                CollapseFlag(
                    arm=arm,
                    kind="rate_drop",
                    value=rate,
                    reference_arm=ref[0],
                    reference_value=ref[1],
                    reason=f"acceptance rate {rate:.1%} is below half of {ref[0]}'s {ref[1]:.1%}",
                )
            )
    return flags


def _best_other_rate(arms: Mapping[str, AcceptanceStats], arm: str) -> tuple[str, float] | None:
    rates = [
        (name, st.acceptance_rate)
        for name, st in arms.items()
        if name != arm and st.acceptance_rate is not None
    ]
    if not rates:
        return None
    return max(rates, key=lambda nr: nr[1])


def detect_divergence(
    digests: Mapping[str, str | None], *, lossless: bool = True
) -> DivergenceResult:
    """Greedy spec decoding and CUDA graphs must not change the generated tokens: arms that
    should be lossless (temperature 0, same model and prompts) must share one digest.

    `lossless=False` (sampling, or a lossy method) skips the check and says why. Arms
    without a digest are listed as missing; with fewer than two digests nothing is checked.
    """
    if not lossless:
        return DivergenceResult(checked=False, reason="arms are not expected to be lossless")
    missing = sorted(arm for arm, d in digests.items() if not d)
    groups: dict[str, list[str]] = {}
    for arm, d in digests.items():
        if d:
            groups.setdefault(d, []).append(arm)
    grouped = sorted(sorted(g) for g in groups.values())
    if sum(len(g) for g in grouped) < 2:
        return DivergenceResult(
            checked=False, groups=grouped, missing=missing, reason="fewer than 2 digests"
        )
    diverged = len(grouped) > 1
    reason = (
        "outputs differ between arms: " + " vs ".join("{" + ", ".join(g) + "}" for g in grouped)
        if diverged
        else "all arms produced the same tokens"
    )
    return DivergenceResult(
        checked=True, diverged=diverged, groups=grouped, missing=missing, reason=reason
    )


def spec_diagnostics(
    arm: str,
    counters: SpecCounters,
    *,
    tok_s_spec: float | None = None,
    tok_s_base: float | None = None,
    ratio_ci: tuple[float, float] | None = None,
    peers: Mapping[str, AcceptanceStats] | None = None,
) -> SpecDiagnostics:
    """Acceptance, step cost against the baseline (when throughputs are given) and the
    collapse flags of `arm` judged against `peers` (arms that should accept alike)."""
    acc = acceptance(counters)
    cost = None
    if acc.mean_acceptance_length is not None and tok_s_spec and tok_s_base:
        cost = step_cost(acc.mean_acceptance_length, tok_s_spec, tok_s_base, ratio_ci=ratio_ci)
    flags = [f for f in detect_collapse({**(peers or {}), arm: acc}) if f.arm == arm]
    return SpecDiagnostics(arm=arm, acceptance=acc, step_cost=cost, collapse=flags)
