"""What a verdict means, in code: a group-sequential test with equivalence.

The quantity is theta = log(geometric mean of A / geometric mean of B) of per-run
throughput, estimated with rounds as blocks (`blocks.fit`), with standard error se on df
degrees of freedom, and T = theta / se. docs/statistics.md states the design and links
the measurements that back it (in `bench/results/`); this docstring says only what the
code does and why.

**Error budget**, held over every look however many there are: DIFFERENT when nothing
changed at most `alpha`, two-sided; SAME when the true ratio is outside the margin at
most `same_alpha` on each side (TOST, the two one-sided tests of equivalence).

**Margin.** SAME means "within ±margin" (`[verdict] margin_pct` in the repo config): the
size below which a maintainer does not care, stated in the report. The A/A pair measures
the runner's noise and drift and is reported beside the verdicts; it does not gate them.

**Looks.** Runs per arm at the looks follow `look_schedule` up to `max_runs`; after the
plan's first runs every look adds one round (`run/schedule.py`), and a look too close to
the last is passed over. Both boundaries come from error spending (`sequential.py`),
carried from z to Student t on the look's degrees of freedom.

* DIFFERENT is information-based (Lan & DeMets; Mehta & Tsiatis; the constants named
  here are in `looks.py`): its spending clock is the share of the runs the test needs
  (`target_runs`, the size of a one-look z test that finds a `DESIGN_EFFECT` change,
  re-estimated at every look from an upper confidence limit of the noise, so a lucky low
  estimate does not spend early). A quiet comparison
  spends its error early and stops; a noisy one keeps most of it for the last look.
  Looks before `MIN_TARGET` runs spend as if the noise were unknown, and once a look
  reaches its target the test is closed for good. The per-side budget is alpha/2 less a
  margin (`SPEND_WITHIN`, `SPEND_BEYOND`) that pays for the t carry and for estimating
  the target from the runs the test reads.
* SAME spends `same_alpha` with a Pocock-like function of the share of the schedule, so
  an unchanged build is called SAME as soon as the data allow.

Then, in this order: SAME iff theta ± e_k·se lies inside ±log(1 + margin) (a real
difference smaller than the margin is SAME, and the report says it is real but small);
DIFFERENT iff |T| >= c_k; UNKNOWN otherwise. More runs are asked for until the last look,
except when the DIFFERENT test is closed and the estimate lies outside the margin: only
SAME could still be reached and the estimate says it will not be, so the comparison stops
(a futility stop, which can only lower both error rates). Each stopping rule can only
lower the other's chance, so each bound holds with the other in place (non-binding).

**Negligible band.** By default DIFFERENT tests "no difference at all", so a steady small
difference is called DIFFERENT whenever it is detected before SAME is. A repo can set
`[verdict] negligible_pct` (below `margin_pct`): T then measures the distance from the
band, T = sign(theta)·max(|theta| - log(1 + negligible), 0) / se, testing
H0: |log ratio| <= log(1 + negligible), at the price of power; the default keeps the band
at 0 because no setting keeps both (docs/statistics.md).

**Whose noise.** se comes from the pair's own runs. Pooling the noise over every cell of
the plan was measured and not adopted: it lets too much through when one cell of the pair
is noisier than the rest.

**Drift.** Rounds alternate their order (ABBA) and are blocks of the model, so drift
between rounds cancels and a linear drift within rounds cancels over each pair of rounds.
A trend in time is still tested (`blocks.trend`) and reported when present.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Final, TypedDict, Unpack

import numpy as np
from scipy.stats import t as student_t

from triagebot.analyze import blocks
from triagebot.analyze.arrays import FloatArray, Samples
from triagebot.analyze.findings_models import (
    ComparisonResult,
    Decision,
    DriftCheck,
    NoiseBand,
)
from triagebot.analyze.looks import DEFAULT_ALPHA as DEFAULT_ALPHA
from triagebot.analyze.looks import DEFAULT_MARGIN as DEFAULT_MARGIN
from triagebot.analyze.looks import DEFAULT_NEGLIGIBLE as DEFAULT_NEGLIGIBLE
from triagebot.analyze.looks import (
    DEFAULT_RULE,
    DIFFERENT,
    MIN_RUNS,
    RUN_STEP,
    SAME,
    UNKNOWN,
    Look,
    Rule,
    judge,
    look_schedule,
    next_look,
)
from triagebot.analyze.verdict_words import Verdict

TREND_ALPHA: Final = 0.01
METHOD: Final = ("information-based group-sequential t on log throughput, rounds as blocks "
                 "(ABBA)")
VERDICTS: Final[dict[int, Verdict]] = {UNKNOWN: "UNKNOWN", DIFFERENT: "DIFFERENT", SAME: "SAME"}


def margin_band(margin: float = DEFAULT_MARGIN) -> NoiseBand:
    """The SAME region as a band of ratios, [1/(1+m), 1+m]."""
    half = math.log1p(margin)
    return NoiseBand(low=math.exp(-half), high=math.exp(half), half_width=half,
                     source="margin", floor=margin,
                     note=f"SAME means within ±{margin:.0%} (the practical margin)")


# --- one comparison ---------------------------------------------------------------------


def _clean_rounds(rounds: Sequence[Samples]) -> tuple[list[FloatArray], int, bool]:
    """Finite values per round, how many were dropped, and whether any was <= 0."""
    out: list[FloatArray] = []
    dropped = 0
    nonpositive = False
    for r in rounds:
        x = np.asarray(r, dtype=np.float64).ravel()
        keep = np.isfinite(x)
        dropped += int(x.size - keep.sum())
        x = x[keep]
        nonpositive |= bool(np.any(x <= 0))
        out.append(x)
    return out, dropped, nonpositive


def _problem(a: list[FloatArray], b: list[FloatArray], bad: bool) -> tuple[str | None, bool]:
    """(why the pair cannot be judged, whether more runs could fix it)."""
    if bad:
        return "non-positive throughput (a 0 tok/s run is a failed run)", False
    for arm, label in ((a, "a"), (b, "b")):
        n = sum(x.size for x in arm)
        if n < 2:
            return f"arm {label} has {n} finite run(s); need at least 2", True
    if not any(x.size and y.size for x, y in zip(a, b, strict=False)):
        return "the arms never ran in the same round", True
    if np.ptp(np.concatenate(a)) == 0 and np.ptp(np.concatenate(b)) == 0:
        return "no run-to-run spread in either arm: the interval would be a point", False
    return None, True


def _drift(log_a: list[FloatArray], log_b: list[FloatArray]) -> DriftCheck | None:
    rounds = sum(1 for x, y in zip(log_a, log_b, strict=False) if x.size or y.size)
    tr = blocks.trend([x[None, :] for x in log_a], [y[None, :] for y in log_b])
    slope, se, df = float(tr.slope[0]), float(tr.se[0]), float(tr.df[0])
    if rounds < 2 or not (math.isfinite(slope) and math.isfinite(se)) or se <= 0 or df <= 0:
        return None
    p = float(2.0 * student_t.sf(abs(slope / se), df))
    per_round = math.expm1(slope)
    present = p < TREND_ALPHA
    note = (f"throughput {'rose' if slope > 0 else 'fell'} {abs(per_round):.1%} per round "
            f"over {rounds} rounds (p={p:.2g}); rounds are blocks and alternate their order, "
            "so the ratio is not biased by it" if present else
            f"no drift over {rounds} rounds ({per_round:+.1%} per round, p={p:.2g})")
    return DriftCheck(per_round=per_round, p_value=p, present=present, rounds=rounds,
                      note=note)


def evaluate(
    a_rounds: Sequence[Samples],
    b_rounds: Sequence[Samples],
    *,
    look: int,
    schedule: Sequence[int],
    rule: Rule = DEFAULT_RULE,
    name: str = "",
) -> tuple[ComparisonResult, bool]:
    """The verdict of one look, and whether more runs could turn UNKNOWN into a verdict."""
    margin, negligible = rule.margin, rule.negligible
    a, da, bad_a = _clean_rounds(a_rounds)
    b, db, bad_b = _clean_rounds(b_rounds)
    flat_a = np.concatenate(a) if a else np.empty(0)
    flat_b = np.concatenate(b) if b else np.empty(0)
    med_a = float(np.median(flat_a)) if flat_a.size else None
    med_b = float(np.median(flat_b)) if flat_b.size else None
    base = {"name": name, "n_a": int(flat_a.size), "n_b": int(flat_b.size),
            "median_a": med_a, "median_b": med_b, "band": margin_band(margin),
            "margin": margin, "negligible": negligible, "method": METHOD, "look": look,
            "looks": len(schedule)}
    dropped = f" ({da + db} non-finite run(s) dropped)" if da + db else ""
    problem, fixable = _problem(a, b, bad_a or bad_b)
    if problem:
        ratio = med_a / med_b if med_a and med_b and med_a > 0 and med_b > 0 else None
        return ComparisonResult(**base, ratio=ratio, alpha=0.0, verdict="UNKNOWN",
                                reason=problem + dropped), fixable
    log_a, log_b = [np.log(x) for x in a], [np.log(x) for x in b]
    fit = blocks.fit([x[None, :] for x in log_a], [y[None, :] for y in log_b])
    judge_at = partial(judge, schedule=schedule, rule=rule)
    before, decided = _history(log_a, log_b, schedule, look, judge_at)
    if decided is not None:
        rounds, at = decided
        res, _ = evaluate(a_rounds[:rounds], b_rounds[:rounds], look=at, schedule=schedule,
                          rule=rule, name=name)
        later = max(flat_a.size - res.n_a, flat_b.size - res.n_b)
        return res.model_copy(update={"reason": (
            f"{res.reason}; decided at {res.n_a} v {res.n_b} runs, before the {later} "
            "more per arm that ran for other comparisons")}), False
    seen = judge_at(fit, look=look, closed_before=np.array([before]))
    theta, se, df = float(fit.theta[0]), float(fit.se[0]), float(fit.df[0])
    if not (math.isfinite(se) and se > 0):
        return ComparisonResult(**base, ratio=math.exp(theta) if math.isfinite(theta) else None,
                                alpha=0.0, verdict="UNKNOWN",
                                reason=f"too few runs to estimate the noise (df={df:.0f})"
                                + dropped), True
    verdict = VERDICTS[int(seen.codes[0])]
    t_stat = float(seen.t_stat[0])
    different_bound, same_bound = float(seen.different_t[0]), float(seen.same_t[0])
    target, closed = int(seen.target[0]), bool(seen.closed[0])
    lo, hi = math.exp(theta - same_bound * se), math.exp(theta + same_bound * se)
    p = float(2.0 * student_t.sf(abs(t_stat), df))
    look_alpha = (float(2.0 * student_t.sf(different_bound, df))
                  if math.isfinite(different_bound) else 0.0)
    where = f"look {look + 1} of {len(schedule)}"
    interval = f"[{lo:.3f}, {hi:.3f}]"
    inside = f"±{margin:.0%}"
    if verdict == "SAME":
        real = (f"; the {math.expm1(theta):+.1%} difference is real (|T|={abs(t_stat):.1f}) "
                "but inside the margin" if abs(t_stat) >= different_bound else "")
        reason = f"{interval} lies inside {inside} at {where}{real}"
    elif verdict == "DIFFERENT":
        beyond = f" beyond the ±{negligible:.1%} negligible band" if negligible > 0 else ""
        reason = (f"|T|={abs(t_stat):.1f}{beyond} ≥ {different_bound:.2f} at {where} "
                  f"(p={p:.2g} ≤ {look_alpha:.2g})")
    elif before:
        reason = (f"{interval} crosses the {inside} margin, and the DIFFERENT test spent "
                  f"its error by an earlier look (target {target} runs per arm)")
    else:
        reason = (f"{interval} crosses the {inside} margin and |T|={abs(t_stat):.1f} is below "
                  f"{different_bound:.2f} at {where}")
    futile = bool(seen.futile[0])
    if futile and look < len(schedule) - 1:
        reason += (f"; the estimate ({math.expm1(theta):+.1%}) lies outside the margin and "
                   f"the DIFFERENT test has spent its error by {target} runs per arm, so "
                   "more runs could at best reach SAME, which the estimate makes unlikely")
    res = ComparisonResult(
        **base,
        ratio=math.exp(theta),
        ci_low=lo,
        ci_high=hi,
        ci_level=max(0.0, 1.0 - 2.0 * float(student_t.sf(same_bound, df))),
        p_value=p,
        p_method="t on log throughput, rounds as blocks",
        alpha=look_alpha,
        t_stat=t_stat,
        different_bound=different_bound if math.isfinite(different_bound) else None,
        same_bound=same_bound,
        df=df,
        rounds=fit.rounds,
        run_cv=math.expm1(float(fit.sigma[0])),
        target_runs=target,
        different_closed=closed,
        drift=_drift(log_a, log_b),
        verdict=verdict,
        reason=reason + dropped,
    )
    return res, not futile


def _history(log_a: list[FloatArray], log_b: list[FloatArray], schedule: Sequence[int],
             look: int, judge_at: Callable[..., Look]) -> tuple[bool, tuple[int, int] | None]:
    """The earlier looks replayed: (whether the DIFFERENT test reached its target still
    UNKNOWN before `look`, and the (rounds, look) of the first look that decided).

    The runner looks after its first mirrored pair of rounds and then after every round,
    so each such prefix that reaches an earlier look is judged as that look was. A
    comparison whose cells ran on after it was decided (for another comparison) keeps the
    verdict of the look that decided it: the error was spent there.
    """
    closed = np.array([False])
    for p in range(2, max(len(log_a), len(log_b))):
        pa, pb = log_a[:p], log_b[:p]
        runs = min(sum(x.size for x in pa), sum(x.size for x in pb))
        reached = [j for j, n in enumerate(schedule) if n <= runs]
        if not reached or reached[-1] >= look:
            continue
        fit = blocks.fit([x[None, :] for x in pa], [y[None, :] for y in pb])
        seen = judge_at(fit, look=reached[-1], closed_before=closed)
        if seen.codes[0] != UNKNOWN:
            return bool(closed[0]), (p, reached[-1])
        closed = closed | seen.closed
    return bool(closed[0]), None


class VerdictTerms(TypedDict, total=False):
    """What `compare` and `next_step` pass on to `evaluate` as its `Rule` and name; the
    defaults live in `Rule` alone."""

    margin: float
    negligible: float
    alpha: float
    same_alpha: float
    name: str


class _RuleAndName(TypedDict):
    rule: Rule
    name: str


def _rule_and_name(terms: VerdictTerms) -> _RuleAndName:
    defaults = DEFAULT_RULE
    rule = Rule(margin=terms.get("margin", defaults.margin),
                negligible=terms.get("negligible", defaults.negligible),
                alpha=terms.get("alpha", defaults.alpha),
                same_alpha=terms.get("same_alpha", defaults.same_alpha))
    return {"rule": rule, "name": terms.get("name", "")}


def compare(
    a_rounds: Sequence[Samples],
    b_rounds: Sequence[Samples],
    **terms: Unpack[VerdictTerms],
) -> ComparisonResult:
    """A single, final look (fixed sample): the A/A pair and one-off comparisons."""
    runs = max(1, min(sum(len(r) for r in a_rounds), sum(len(r) for r in b_rounds)))
    return evaluate(a_rounds, b_rounds, look=0, schedule=[runs], **_rule_and_name(terms))[0]


def next_step(
    a_rounds: Sequence[Samples],
    b_rounds: Sequence[Samples],
    runs_so_far: int,
    max_runs: int,
    *,
    min_runs: int = MIN_RUNS,
    step: int = RUN_STEP,
    **terms: Unpack[VerdictTerms],
) -> Decision:
    """Look at a comparison after `runs_so_far` runs per arm: stop, or how many more.

    The look is the last schedule point <= runs_so_far, so a caller that follows the
    decisions spends each look's error once. Before the first point the answer is always
    "run more" and nothing is decided.
    """
    schedule = look_schedule(max_runs, min_runs, step)
    reached = [i for i, n in enumerate(schedule) if n <= runs_so_far]
    look = reached[-1] if reached else 0
    result, fixable = evaluate(a_rounds, b_rounds, look=look, schedule=schedule,
                               **_rule_and_name(terms))
    common = {"runs_so_far": runs_so_far, "max_runs": max_runs, "look": look,
              "looks_planned": len(schedule), "schedule": schedule}
    if not reached:
        more = schedule[0] - runs_so_far
        result = result.model_copy(update={
            "verdict": "UNKNOWN", "reason": f"before the first look ({schedule[0]} runs)"})
        return Decision(**common, comparison=result, action="run_more",
                        more_runs_per_arm=more,
                        reason=f"fewer than {schedule[0]} runs per arm: run {more} more")
    if result.verdict != "UNKNOWN":
        return Decision(**common, comparison=result, action="stop",
                        reason=f"{result.verdict} at {runs_so_far} runs per arm")
    if not fixable:
        return Decision(**common, comparison=result, action="stop",
                        reason=f"more runs cannot help: {result.reason}")
    if look == len(schedule) - 1:
        return Decision(**common, comparison=result, action="stop",
                        reason=f"UNKNOWN after {runs_so_far} runs per arm: budget spent")
    more = schedule[next_look(schedule, look, runs_so_far, step)] - runs_so_far
    return Decision(**common, comparison=result, action="run_more", more_runs_per_arm=more,
                    reason=f"UNKNOWN ({result.reason}): run {more} more per arm")
