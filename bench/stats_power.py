"""Error rates and runs used by triagebot's verdict, beside the old procedure and the seeds'.

Run from the repo root:  .venv/bin/python bench/stats_power.py [--pairs N] [--legacy-pairs N]
                         .venv/bin/python bench/stats_power.py --goals-only   (the goals, settled)

Simulation. Per-run throughput is lognormal with the given CV around 100 tok/s for B and
100·(1+effect) for A ("norm" rows: normal noise, to show the t test does not lean on the
lognormal shape). Runs happen in time, and the machine can move:

* none    - no drift;
* trend   - the machine slows by 0.2 % per run, steadily: arms run one after the other with
            5 runs each (the old order) then differ by 1 %, the issue's "1 % per-arm offset";
* blocks  - every round (a start of each arm's script) shifts both arms by N(0, 1 %);
* process - every script start gets its own offset N(0, 1 %), arm by arm: a breach of the
            model's assumption that a start adds nothing beyond run-to-run noise;
* arm     - arm A is always 1 % faster: a real difference, by construction, inside the
            ±3 % margin (SAME is the right answer, DIFFERENT is true but unwanted).

Procedures, each with its own run order:

* new: `triagebot.analyze.verdict` (information-based group-sequential t on log
  throughput with rounds as blocks and a ±3 % margin) at looks of 4, 6, 8, ..., 28, 30
  runs per arm, in the runner's order (`runner_rounds`): the plan's 5 first runs in a
  mirrored pair of rounds, then one round per look, each reversing (or, where the rounds
  before lean the other way, repeating) the order of the one before
  (`triagebot.run.schedule`). The whole batch of simulated requests is judged in one
  vectorised call per look (`looks.judge`), futility stops included.
* old: the procedure before issue 16 (`bench/legacy_verdict.py`): looks at 5..20, one
  round per look in a random order, Mann-Whitney at a Bonferroni alpha and a bootstrap CI
  of the ratio of medians against a 5 v 5 A/A band. One request at a time, so fewer pairs.
* seeds ±2 % / seeds t: the seed reports' protocol (5 runs per arm, A then B): the ratio
  of means beyond ±2 %, or Welch's t at p < 0.05.

Rows marked "band1%" run the new procedure with `[verdict] negligible_pct = 1` (not the
default): DIFFERENT then means beyond ±1 %, which holds the 'arm' rows to the error budget
and costs power. The goals section prints, for every goal not met, the arithmetic that
shows whether any procedure could meet it, and a trade-off over other designs of the
DIFFERENT boundary (spending shapes, looks every 2 runs, one round per look).

The whole-plan section (`render_plan`; `--plan-only` prints just it) runs the sample's plan
as the runner does (`bench/runner_sim.py`: five cells, four ratio comparisons escalated
together, the A/A replica in the first pair of rounds only) and judges it twice on the same
simulated runs: with each pair's own noise (the verdict as it is) and with the noise
pooled over the plan's cells behind a homogeneity guard (`bench/pooled_noise.py`, the
design evaluated and not adopted), including rows where one cell has twice the others' sd.
It prints the goal rows side by side and a trade-off of pooled designs.

Fixed seeds: the same command prints the same table.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.stats import norm, ttest_ind

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import legacy_verdict, runner_sim
from triagebot.analyze import blocks, looks, verdict
from triagebot.run.schedule import split_runs

MAX_RUNS = 30
INITIAL_RUNS = 5  # the plan budget's runs (`model.Budget`)
SAME_BY = 20
SEEDS_RUNS = 5
NAIVE_BAND = 0.02
DRIFT_PER_RUN = 0.002
SHIFT_SD = 0.01
ARM_OFFSET = 0.01
BASE = math.log(100.0)
MASTER_SEED = 20240611
GOAL_FPR = 0.01
GOAL_SAME = 0.90
GOAL_FOUND_CV5 = 0.80
BAND = 0.01  # the negligible band of the "band" rows: the 'arm' rows' offset


@dataclass(frozen=True)
class Scenario:
    cv: float
    effect: float
    drift: str
    pairs: int
    seed: int
    dist: str = "lognormal"
    margin: float = verdict.DEFAULT_MARGIN  # 0: SAME can never stop a request
    negligible: float = verdict.DEFAULT_NEGLIGIBLE  # DIFFERENT must clear ±negligible
    # A design other than the product's, for the trade-off lines only: the spending
    # shape, the power the target is sized for, the looks, and the previous design's
    # spending by share of the schedule with every look's runs in a mirrored pair of
    # rounds (`by_schedule`).
    gamma: float = looks.GAMMA_DIFFERENT
    power: float = looks.DESIGN_POWER
    looks: tuple[int, ...] | None = None
    by_schedule: bool = False

    @property
    def label(self) -> str:
        kind = "A/A" if self.effect == 0 else f"+{self.effect:.0%}"
        dist = " norm" if self.dist == "normal" else ""
        band = f" band{self.negligible:.0%}" if self.negligible else ""
        return f"{kind:>4} CV {self.cv:.0%} {self.drift}{dist}{band}"


@dataclass
class Outcome:
    """Per simulated request: verdict (DIFFERENT/SAME/UNKNOWN/WRONG) and runs per arm."""

    verdicts: np.ndarray
    runs: np.ndarray
    extra: dict[str, float] = field(default_factory=dict)

    def rate(self, what: str) -> float:
        return float(np.mean(self.verdicts == what))

    def rate_by(self, what: str, runs: int) -> float:
        return float(np.mean((self.verdicts == what) & (self.runs <= runs)))


def _noise(rng: np.random.Generator, sc: Scenario, shape: tuple[int, ...]) -> np.ndarray:
    if sc.dist == "normal":
        return np.log(np.clip(1.0 + sc.cv * rng.normal(size=shape), 1e-3, None))
    return rng.normal(0.0, math.sqrt(math.log1p(sc.cv**2)), shape)


def _slot_shift(rng: np.random.Generator, sc: Scenario, pairs: int) -> tuple[np.ndarray, ...]:
    """(shift of A's slot, shift of B's slot) for one round."""
    if sc.drift == "blocks":
        s = rng.normal(0.0, SHIFT_SD, pairs)
        return s, s
    if sc.drift == "process":
        return rng.normal(0.0, SHIFT_SD, pairs), rng.normal(0.0, SHIFT_SD, pairs)
    zero = np.zeros(pairs)
    return zero, zero


def _level(sc: Scenario) -> tuple[float, float]:
    a = BASE + math.log1p(sc.effect) + (math.log1p(ARM_OFFSET) if sc.drift == "arm" else 0.0)
    return a, BASE


# --- the new procedure ------------------------------------------------------------------


def runner_rounds(schedule: list[int], initial: int = INITIAL_RUNS, paired: bool = False,
                  step: int = looks.RUN_STEP) -> list[tuple[int, int]]:
    """(look index, runs per arm) of every round, in the runner's order: the plan's initial
    runs in a mirrored pair of rounds, then one round per look (its order is
    `simulate_new`'s, as `schedule.balanced_turn` picks it), skipping a look fewer than
    `step` runs away as `verdict.next_step` does; the look comes after the last round of
    its index.
    `paired`: every look's runs in a mirrored pair of rounds (the previous design)."""
    reached = [k for k, n in enumerate(schedule) if n <= initial]
    look = reached[-1] if reached else 0
    done = min(initial, schedule[-1])
    out = [(look, m) for m in split_runs(done, 2)]
    if not reached:  # before the first look: run up to it
        out.extend((0, m) for m in split_runs(schedule[0] - done, 2 if paired else 1))
        done = schedule[0]
    while look < len(schedule) - 1:
        look = looks.next_look(schedule, look, done, step)
        out.extend((look, m) for m in split_runs(schedule[look] - done, 2 if paired else 1))
        done = schedule[look]
    return out


def simulate_new(sc: Scenario) -> Outcome:
    rng = np.random.default_rng(sc.seed)
    schedule = list(sc.looks) if sc.looks else looks.look_schedule(MAX_RUNS)
    level_a, level_b = _level(sc)
    log_a: list[np.ndarray] = []
    log_b: list[np.ndarray] = []
    clock = np.zeros(sc.pairs)
    verdicts = np.full(sc.pairs, "UNKNOWN", dtype=object)
    runs = np.full(sc.pairs, schedule[-1])
    alive = np.ones(sc.pairs, dtype=bool)
    closed = np.zeros(sc.pairs, dtype=bool)
    fixed = np.full(sc.pairs, schedule[-1], dtype=np.int64) if sc.by_schedule else None
    rounds = runner_rounds(schedule, paired=sc.by_schedule)
    done = 0  # runs per arm so far: the first look sees the plan's 5, not its nominal 4
    # The first round draws an order; every later one reverses or repeats the round
    # before, whichever evens out the runs each order has had (`balanced_turn`).
    first = rng.random(sc.pairs) < 0.5
    sign = np.ones(sc.pairs)
    lean = np.zeros(sc.pairs)
    for i, (k, m) in enumerate(rounds):
        done += m
        if i:
            sign = runner_sim.turn(sign, lean)
        lean = lean + sign * m * m
        a_first = first == (sign > 0)
        within = np.arange(m)[None, :]
        t_a = clock[:, None] + np.where(a_first[:, None], within, m + within)
        t_b = clock[:, None] + np.where(a_first[:, None], m + within, within)
        clock = clock + 2 * m
        shift_a, shift_b = _slot_shift(rng, sc, sc.pairs)
        drift = DRIFT_PER_RUN if sc.drift == "trend" else 0.0
        log_a.append(level_a + shift_a[:, None] - drift * t_a + _noise(rng, sc, (sc.pairs, m)))
        log_b.append(level_b + shift_b[:, None] - drift * t_b + _noise(rng, sc, (sc.pairs, m)))
        if i + 1 < len(rounds) and rounds[i + 1][0] == k:
            continue  # the look comes after the last round of its index
        fit = blocks.fit(log_a, log_b)
        seen = looks.judge(fit, schedule, k, closed, looks.Rule(
            margin=sc.margin, negligible=sc.negligible, gamma=sc.gamma, power=sc.power),
            target=fixed)
        closed = seen.closed
        codes = seen.codes
        decided = alive & ((codes != looks.UNKNOWN) | seen.futile)
        wrong = decided & (codes == looks.DIFFERENT) & (fit.theta * sc.effect < 0)
        verdicts[decided & (codes == looks.SAME)] = "SAME"
        verdicts[decided & (codes == looks.DIFFERENT)] = "DIFFERENT"
        verdicts[wrong] = "WRONG"
        runs[decided] = done
        alive &= ~decided
    return Outcome(verdicts, runs)


# --- the old procedure and the seeds' protocol -------------------------------------------


def simulate_old(sc: Scenario, pairs: int) -> tuple[Outcome, float, float]:
    """The old procedure, and the seeds' two rules (rates of a right-direction call)."""
    rng = np.random.default_rng(sc.seed + 7)
    level_a, level_b = _level(sc)
    points = legacy_verdict.LOOKS
    verdicts = np.full(pairs, "UNKNOWN", dtype=object)
    runs = np.zeros(pairs, dtype=int)
    naive = t_hits = 0
    drift = DRIFT_PER_RUN if sc.drift == "trend" else 0.0
    for p in range(pairs):
        a_parts, b_parts, clock, prev = [], [], 0.0, 0
        for n in points:
            m = n - prev
            prev = n
            first_a = rng.random() < 0.5 if n > points[0] else True  # seeds: A then B
            t_a = clock + np.arange(m) + (0 if first_a else m)
            t_b = clock + np.arange(m) + (m if first_a else 0)
            clock += 2 * m
            sa, sb = (x[0] for x in _slot_shift(rng, sc, 1))
            a_parts.append(level_a + sa - drift * t_a + _noise(rng, sc, (m,)))
            b_parts.append(level_b + sb - drift * t_b + _noise(rng, sc, (m,)))
        a, b = np.exp(np.concatenate(a_parts)), np.exp(np.concatenate(b_parts))
        # The A/A cells ran after the pair, one after the other, like any two cells.
        sa, sb = (x[0] for x in _slot_shift(rng, sc, 1))
        t0 = 2 * SEEDS_RUNS
        aa_a = np.exp(BASE + sa - drift * (t0 + np.arange(5)) + _noise(rng, sc, (5,)))
        aa_b = np.exp(BASE + sb - drift * (t0 + 5 + np.arange(5)) + _noise(rng, sc, (5,)))
        v, n_used, ratio = legacy_verdict.verdict(a, b, legacy_verdict.band(aa_a, aa_b))
        if v == "DIFFERENT" and sc.effect * math.log(ratio) < 0:
            v = "WRONG"
        verdicts[p], runs[p] = v, n_used
        a5, b5 = a[:SEEDS_RUNS], b[:SEEDS_RUNS]
        r = a5.mean() / b5.mean()
        naive += bool(r > 1 + NAIVE_BAND if sc.effect > 0 else abs(r - 1) > NAIVE_BAND)
        pv = ttest_ind(a5, b5, equal_var=False).pvalue
        t_hits += bool(pv < 0.05 and (r > 1 or sc.effect == 0))
    return Outcome(verdicts, runs), naive / pairs, t_hits / pairs


# --- table ------------------------------------------------------------------------------


def scenarios(aa_pairs: int, power_pairs: int) -> list[Scenario]:
    out: list[Scenario] = []
    seed = MASTER_SEED
    for drift in ("none", "trend", "blocks", "process", "arm"):
        for cv in (0.02, 0.03, 0.05):
            seed += 1
            out.append(Scenario(cv, 0.0, drift, aa_pairs, seed))
    for cv, effect in ((0.02, 0.03), (0.02, 0.05), (0.03, 0.05), (0.05, 0.05), (0.05, 0.10)):
        for drift in ("none", "trend"):
            seed += 1
            out.append(Scenario(cv, effect, drift, power_pairs, seed))
    seed += 1
    out.append(Scenario(0.03, 0.0, "none", aa_pairs, seed, dist="normal"))
    seed += 1
    out.append(Scenario(0.03, 0.05, "none", power_pairs, seed, dist="normal"))
    # The same procedure with `[verdict] negligible_pct = 1`: DIFFERENT must clear ±1 %.
    for cv in (0.02, 0.03, 0.05):
        seed += 1
        out.append(Scenario(cv, 0.0, "arm", aa_pairs, seed, negligible=BAND))
    for cv, effect in ((0.02, 0.03), (0.03, 0.05), (0.05, 0.05)):
        seed += 1
        out.append(Scenario(cv, effect, "none", power_pairs, seed, negligible=BAND))
    return out


def _p95(runs: np.ndarray) -> float:
    return float(np.percentile(runs, 95))


def _pct(x: float) -> str:
    return f"{x:7.2%}"


def render(rows: list[tuple[Scenario, Outcome, Outcome, float, float]], legacy_pairs: int,
           seconds: float, check_pairs: int) -> str:
    head = (f"{'scenario':<24}{'pairs':>6} | {'DIFF':>7} {'SAME':>7} {'SAME<=20':>8} "
            f"{'UNKNOWN':>7} {'mean':>5} {'p95':>4} | {'DIFF':>7} {'SAME':>7} {'UNKNOWN':>7} "
            f"{'mean':>5} {'p95':>4} | {'±2%':>7} {'t':>7}")
    title = (f"{'':<30} | {'new (runs/arm: mean, p95)':<51} | "
             f"{f'old, {legacy_pairs} pairs':<38} | {'seeds, 5 runs':<15}")
    lines = [title, head, "-" * len(head)]
    for sc, new, old, naive, tt in rows:
        lines.append(
            f"{sc.label:<24}{sc.pairs:>6} | {_pct(new.rate('DIFFERENT'))} "
            f"{_pct(new.rate('SAME'))} {_pct(new.rate_by('SAME', SAME_BY)):>8} "
            f"{_pct(new.rate('UNKNOWN'))} {new.runs.mean():5.1f} {_p95(new.runs):4.0f} | "
            f"{_pct(old.rate('DIFFERENT'))} {_pct(old.rate('SAME'))} "
            f"{_pct(old.rate('UNKNOWN'))} {old.runs.mean():5.1f} {_p95(old.runs):4.0f} | "
            f"{_pct(naive)} {_pct(tt)}")
        for name, o in (("new", new), ("old", old)):
            if o.rate("WRONG"):
                lines.append(f"{'':<30}   {name}: {o.rate('WRONG'):.2%} DIFFERENT in the wrong "
                             "direction")
    lines += ["", *goals([(sc, new) for sc, new, *_ in rows], check_pairs), "",
              *legend(seconds)]
    return "\n".join(lines)


def _wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson interval of a binomial rate (two-sided 95 % by default)."""
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n), (centre + spread) / (1 + z * z / n)


def _upper(k: float, n: int) -> float:
    """One-sided 95 % upper bound of a binomial rate (Wilson), to read FPRs against 1 %."""
    return _wilson(k, n, 1.645)[1]


def _judged(lo: float, point: float, hi: float, goal: float, at_most: bool) -> str:
    """A goal read against a simulated figure and its 95 % interval: met or missed only
    when the whole interval says so; a goal inside the interval is within simulation error
    of the design, and more pairs, not a luckier seed, would settle it."""
    ok = (lambda x: x <= goal) if at_most else (lambda x: x >= goal)
    if ok(lo) and ok(hi):
        return "met"
    if not ok(lo) and not ok(hi):
        return "NOT MET"
    return f"within simulation error ({'met' if ok(point) else 'missed'} by the estimate)"


def _fpr_judged(k: float, n: int) -> str:
    lo, hi = _wilson(k, n)
    return f"(95% {lo:.2%}-{hi:.2%}) {_judged(lo, k / n, hi, GOAL_FPR, at_most=True)}"


def _spread(p: float, n: int) -> float:
    """Half-width of a rate's 95 % interval from `n` simulated requests (normal approx.)."""
    return 1.96 * math.sqrt(p * (1.0 - p) / n)


def _mean_spread(runs: np.ndarray) -> float:
    """Half-width of the 95 % interval of the mean runs per arm."""
    return 1.96 * float(runs.std(ddof=1) / math.sqrt(runs.size))


def _sigma(cv: float) -> float:
    return math.sqrt(math.log1p(cv * cv))


Z95 = float(norm.isf(0.05))  # one side of SAME's error budget


def same_ceiling(cv: float, runs: int, margin: float = verdict.DEFAULT_MARGIN,
                 offset: float = 0.0) -> float:
    """The highest rate at which *any* procedure can call an unchanged build SAME by `runs`
    runs per arm while calling SAME at most 5 % of the time when the ratio sits at the
    margin. SAME-by-`runs` is itself a test on the first `runs` runs whose error at the
    margin is at most the procedure's; with the noise known and normal, the best such test
    (Neyman-Pearson) is |theta_hat| < m - 1.645·se, se = sigma·sqrt(2/runs), true at a
    ratio of 1 with probability 2·Phi(m/se - 1.645) - 1. Estimating the noise only lowers
    it. Pairing arms within rounds removes what both arms share (round shifts) but not
    run-to-run noise, which is what the CV here is. With a true `offset` the same region
    is shifted off centre: Phi((m - d)/se - 1.645) - Phi((-m - d)/se + 1.645)."""
    se = _sigma(cv) * math.sqrt(2.0 / runs)
    m, d = math.log1p(margin), math.log1p(offset)
    return float(max(norm.cdf((m - d) / se - Z95) - norm.cdf((-m - d) / se + Z95), 0.0))


def runs_for_same(cv: float, goal: float = GOAL_SAME,
                  margin: float = verdict.DEFAULT_MARGIN) -> float:
    """Runs per arm at which `same_ceiling` reaches `goal` (inverting it)."""
    z = Z95 + float(norm.isf((1.0 - goal) / 2.0))
    return 2.0 * (z * _sigma(cv) / math.log1p(margin)) ** 2


def margin_for_same(cv: float, runs: int, goal: float = GOAL_SAME) -> float:
    """The smallest margin at which `same_ceiling` reaches `goal` by `runs` runs."""
    z = Z95 + float(norm.isf((1.0 - goal) / 2.0))
    return math.expm1(z * _sigma(cv) * math.sqrt(2.0 / runs))


def _fixed_n(cv: float, effect: float) -> float:
    """Runs per arm of a single-look z test, two-sided alpha 1 %, power 95 %."""
    return 2.0 * ((2.5758 + 1.6449) * _sigma(cv) / math.log1p(effect)) ** 2


def wald_mean_runs(cv: float, effect: float = 0.05, alpha: float = GOAL_FPR / 2,
                   power: float = 0.95, null: float = 0.0) -> float:
    """Wald's lower bound on the mean runs per arm, at the alternative, of *any* sequential
    test of `null` against `effect` (looks after every run, noise known) whose one-sided
    error is `alpha` and power `power`: E[N] >= (p ln(p/a) + (1-p) ln((1-p)/(1-a))) / KL,
    KL = (log(1+effect) - log(1+null))^2 / (4 sigma^2) per run of each arm."""
    p, a = power, alpha
    info = p * math.log(p / a) + (1 - p) * math.log((1 - p) / (1 - a))
    kl = (math.log1p(effect) - math.log1p(null)) ** 2 / (4.0 * _sigma(cv) ** 2)
    return info / kl


def offset_fpr_floor(cv: float, found: float = GOAL_FOUND_CV5, effect: float = 0.05,
                     offset: float = ARM_OFFSET, runs: int = MAX_RUNS) -> float:
    """The lowest rate at which any procedure that finds a +`effect` change `found` of the
    time within `runs` runs per arm calls a real +`offset` difference DIFFERENT. What it
    does by `runs` runs is a test on the first `runs` runs of each arm; between the two
    simple hypotheses +offset and +effect the best one (Neyman-Pearson) rejects when the
    mean log-ratio is large, with the cut set by the power at +effect, and calls +offset
    DIFFERENT with probability 1 - Phi(z_effect - z_found - z_offset), z_x = log(1+x)/se,
    se = sigma sqrt(2/runs). Estimating the noise only raises the floor."""
    se = _sigma(cv) * math.sqrt(2.0 / runs)
    z = (math.log1p(effect) - math.log1p(offset)) / se - float(norm.isf(1.0 - found))
    return float(norm.sf(z))


def found_ceiling(cv: float, fpr: float = GOAL_FPR, effect: float = 0.05,
                  offset: float = ARM_OFFSET, runs: int = MAX_RUNS) -> float:
    """The converse of `offset_fpr_floor`: the highest rate of finding +`effect` within
    `runs` runs per arm for a procedure that calls +`offset` DIFFERENT at most `fpr` of
    the time."""
    se = _sigma(cv) * math.sqrt(2.0 / runs)
    return float(norm.cdf((math.log1p(effect) - math.log1p(offset)) / se - float(norm.isf(fpr))))


def _fpr_goal(sc: Scenario, o: Outcome) -> list[str]:
    fpr = o.rate("DIFFERENT") + o.rate("WRONG")
    same = o.rate_by("SAME", SAME_BY)
    offset = ARM_OFFSET if sc.drift == "arm" else 0.0
    out = [f"  {sc.label:<22} FPR {fpr:.2%} {_fpr_judged(fpr * o.verdicts.size, o.verdicts.size)}"
           f"; SAME by {SAME_BY} runs {same:.1%} {'met' if same >= GOAL_SAME else 'NOT MET'}"]
    pad = " " * 26
    if fpr > GOAL_FPR and offset and not sc.negligible:
        floor = offset_fpr_floor(sc.cv)
        if floor > GOAL_FPR:
            out.append(f"{pad}cannot be met beside '+5% CV {sc.cv:.0%} found >= 80 % within "
                       f"{MAX_RUNS}': any procedure that finds +5 % that often calls a real "
                       f"+1 % DIFFERENT >= {floor:.2%} (Neyman-Pearson on {MAX_RUNS} runs)")
        out.append(f"{pad}a real 1 % difference, inside the margin: negligible_pct = 1 "
                   "holds it to alpha by construction (band rows), at their cost")
    if same < GOAL_SAME:
        ceiling = same_ceiling(sc.cv, SAME_BY, offset=offset)
        if ceiling >= GOAL_SAME:
            out.append(f"{pad}possible in principle: the ceiling at CV {sc.cv:.0%} by "
                       f"{SAME_BY} runs is {ceiling:.1%}")
        elif offset:
            out.append(f"{pad}cannot be met: no procedure exceeds {ceiling:.1%} at CV "
                       f"{sc.cv:.0%} by {SAME_BY} runs with a real +1 % (SAME wrong <= 5 % "
                       f"at ±{verdict.DEFAULT_MARGIN:.0%})")
        else:
            out.append(f"{pad}cannot be met: no procedure exceeds {ceiling:.1%} at CV "
                       f"{sc.cv:.0%} by {SAME_BY} runs (SAME wrong <= 5 % at "
                       f"±{verdict.DEFAULT_MARGIN:.0%}); 90 % needs >= "
                       f"{runs_for_same(sc.cv):.0f} runs/arm, or a margin_pct of "
                       f"{margin_for_same(sc.cv, SAME_BY):.1%} at {SAME_BY}")
    return out


def _found_goal_cv3(sc: Scenario, o: Outcome) -> list[str]:
    found = o.rate("DIFFERENT")
    mean = float(o.runs.mean())
    spread = _mean_spread(o.runs)
    f_half = _spread(found, o.verdicts.size)
    both = (_judged(found - f_half, found, found + f_half, 0.95, at_most=False),
            _judged(mean - spread, mean, mean + spread, 12.0, at_most=True))
    # The goal is both at once: it reads as the worse of the two.
    worst = max(both, key=lambda v: ("NOT MET" in v, "missed" in v, v != "met"))
    ok = found >= 0.95 and mean <= 12
    out = [f"  {sc.label:<22} found {found:.1%} (± {f_half:.1%}) with mean {mean:.2f} "
           f"(± {spread:.2f} by simulation) runs/arm (goal >= 95 %, mean <= 12): {worst}"]
    if not ok:
        why = (f"the band rows test {sc.effect - sc.negligible:.0%} beyond the band, so "
               "their target is larger (a repo's choice, not the default)" if sc.negligible
               else "the t test's few degrees of freedom and a target read from early runs "
               "cost the rest")
        out.append(f"{'':<26}not ruled out by arithmetic: Wald's bound for any sequential "
                   f"test (noise known) is {wald_mean_runs(sc.cv, null=sc.negligible):.1f} "
                   f"runs/arm; one look needs {_fixed_n(sc.cv, sc.effect):.1f}; {why}")
    return out


def _found_goal_cv5(sc: Scenario, o: Outcome) -> list[str]:
    found = o.rate_by("DIFFERENT", MAX_RUNS)
    half = _spread(found, o.verdicts.size)
    out = [f"  {sc.label:<22} found {found:.1%} (± {half:.1%} by simulation) within "
           f"{MAX_RUNS} runs/arm (goal >= 80 %): "
           f"{_judged(found - half, found, found + half, GOAL_FOUND_CV5, at_most=False)}"]
    if sc.negligible and found < GOAL_FOUND_CV5:
        out.append(f"{'':<26}cannot be met with a ±{sc.negligible:.0%} band: holding a real "
                   f"+{sc.negligible:.0%} to <= 1 % caps it at {found_ceiling(sc.cv):.1%}")
    return out


PREVIOUS_LOOKS = (4, 8, 12, 16, 20, 24, 28, 30)


def tradeoff(pairs: int, fpr_pairs: int) -> list[str]:
    """The +5 % goals against each other, over designs of the DIFFERENT boundary: the
    power the target is sized for, the spending shape, the first look, and the previous
    design (spending by share of a fixed 30-run schedule, gamma -4, looks every 4 runs in
    mirrored pairs of rounds). Each design's worst-case FPR (SAME off, steady drift,
    CV 5 %) and its FPR when every script start adds its own 1 % offset ('process',
    CV 2 %) are printed beside it."""
    every2_from6 = (*range(6, MAX_RUNS, 2), MAX_RUNS)
    base = Scenario(0.0, 0.0, "none", pairs, MASTER_SEED)
    designs = [(f"target for power {p:.3g}, gamma {looks.GAMMA_DIFFERENT:+.0f}",
                replace(base, power=p)) for p in (0.95, 0.99, 0.995)]
    designs += [(f"power {looks.DESIGN_POWER:.3g}, gamma {g:+.0f}", replace(base, gamma=g))
                for g in (-2.0, 1.0)]
    designs += [("the same, first look at 6 runs", replace(base, looks=every2_from6)),
                ("previous: by share of the schedule, gamma -4, looks every 4, pairs",
                 replace(base, gamma=-4.0, looks=PREVIOUS_LOOKS, by_schedule=True))]
    out = []
    for name, design in designs:
        fast, slow = (simulate_new(replace(design, cv=cv, effect=0.05,
                                           seed=MASTER_SEED + seed))
                      for cv, seed in ((0.03, 101), (0.05, 102)))
        worst, starts = (simulate_new(replace(design, cv=cv, drift=drift, pairs=fpr_pairs,
                                              seed=MASTER_SEED + seed, margin=margin))
                         for cv, drift, seed, margin in ((0.05, "trend", 104, 0.0),
                                                         (0.02, "process", 105, 0.03)))
        out.append(f"{name}: CV 3 % found {fast.rate('DIFFERENT'):.1%}, mean "
                   f"{fast.runs.mean():.2f} runs/arm; CV 5 % found "
                   f"{slow.rate_by('DIFFERENT', MAX_RUNS):.1%} by {MAX_RUNS}; FPR worst "
                   f"{worst.rate('DIFFERENT'):.2%}, process {starts.rate('DIFFERENT'):.2%}")
    return out


def worst_case_fpr(pairs: int) -> list[str]:
    """FPR with SAME switched off (margin 0), so no false alarm is pre-empted by a SAME stop:
    the DIFFERENT boundaries' own error over all looks."""
    out = []
    for drift in ("none", "trend"):
        o = simulate_new(Scenario(0.05, 0.0, drift, pairs, MASTER_SEED + 103, margin=0.0))
        fpr = o.rate("DIFFERENT") + o.rate("WRONG")
        out.append(f"  A/A {drift}, SAME off, {pairs} pairs: FPR {fpr:.2%} "
                   f"{_fpr_judged(fpr * pairs, pairs)}")
    return out


def goal_lines(rows: list[tuple[Scenario, Outcome]]) -> list[str]:
    """Every row a goal of issue 16 reads, judged, and the wrong-direction count."""
    out = []
    for sc, o in rows:
        if sc.dist != "lognormal":
            continue
        if sc.effect == 0 and sc.drift in ("none", "trend", "arm"):
            out += _fpr_goal(sc, o)
        if sc.effect == 0.05 and sc.cv == 0.03:
            out += _found_goal_cv3(sc, o)
        if sc.effect == 0.05 and sc.cv == 0.05:
            out += _found_goal_cv5(sc, o)
    wrong = sum(int((o.verdicts == "WRONG").sum()) for _, o in rows)
    total = sum(o.verdicts.size for sc, o in rows if sc.effect)
    out.append(f"  wrong-direction DIFFERENT over all scenarios: {wrong} of {total} requests "
               f"with an effect ({'met' if wrong == 0 else 'NOT MET, and cannot be'})")
    if wrong:
        out.append(f"{'':<26}no test that ever says DIFFERENT makes it 0: under a real "
                   "change one way it crosses the other way's boundary less often than "
                   f"under none, so at most alpha/2 = {looks.DEFAULT_ALPHA / 2:.1%} of the time:")
    for sc, o in rows:
        if k := int((o.verdicts == "WRONG").sum()):
            out.append(f"{'':<26}{sc.label}: {k} of {o.verdicts.size} "
                       f"({k / o.verdicts.size:.4%})")
    return out


def goal_scenarios(aa_pairs: int, power_pairs: int) -> list[Scenario]:
    """Just the scenarios the goals name (A/A at CV 2/3/5 %, +5 % at CV 3 and 5 %, with and
    without drift), for `--goals-only`: at its default pairs a rate of 1 % is read to
    ±0.03 % and a power of 80 % to ±0.25 %, which settles rows the full table leaves
    within simulation error."""
    out: list[Scenario] = []
    seed = MASTER_SEED + 800
    for drift in ("none", "trend"):
        for cv, effect, pairs in ((0.02, 0.0, aa_pairs), (0.03, 0.0, aa_pairs),
                                  (0.05, 0.0, aa_pairs), (0.03, 0.05, power_pairs),
                                  (0.05, 0.05, power_pairs)):
            seed += 1
            out.append(Scenario(cv, effect, drift, pairs, seed))
    return out


def goals(rows: list[tuple[Scenario, Outcome]], check_pairs: int) -> list[str]:
    out = ["Goals (new procedure; 'band1%' rows: negligible_pct = 1, not the default):",
           *goal_lines(rows)]
    out += worst_case_fpr(check_pairs)
    out.append("  +5 % goals against each other (designs of the DIFFERENT boundary; used: "
               f"target for power {looks.DESIGN_POWER:.3g}, gamma "
               f"{looks.GAMMA_DIFFERENT:+.0f}, looks every {looks.RUN_STEP} from "
               f"{looks.MIN_RUNS}), "
               f"{check_pairs // 10} pairs each, FPRs on {check_pairs // 4}:")
    out += [f"{'':<4}{line}" for line in tradeoff(check_pairs // 10, check_pairs // 4)]
    out += [f"{'':<4}Spending by the target rather than by the schedule is what brings both "
            "+5 % goals within reach",
            f"{'':<4}at once: the schedule's clock spends as slowly at CV 3 % as at CV 5 %. "
            "The price is the 'process'",
            f"{'':<4}column: an offset of its own per script start, which the model leaves "
            "out, weighs most",
            f"{'':<4}at the early looks this design stops at; the plan's A/A pair is the "
            "check for it.",
            "  Offset goal against the CV 5 % goal: the default (no band) keeps CV 5 %; a "
            "repo that",
            "  wants a steady 1 % called SAME sets negligible_pct = 1 (band rows)."]
    return out


def legend(seconds: float) -> list[str]:
    return [
        "A/A rows: DIFF = false-positive rate (either direction). Effect rows: DIFF = power",
        "(right direction). SAME<=20: SAME reached by 20 runs per arm. mean/p95: runs per arm",
        "used until the verdict (or the budget: 30 new, 20 old); the old procedure also ran",
        "a 5 v 5 A/A pair per request, not counted. 'arm' rows are a real 1 % difference.",
        "'blocks' rows add a 1 % shift shared by both arms of a round: the rounds-as-blocks",
        "fit removes it (same rates as 'none'); no pairing removes per-run noise, which is",
        "what CV means here, hence the SAME ceilings above.",
        f"new: DIFFERENT over all looks <= {looks.DEFAULT_ALPHA:.0%}, SAME when outside the "
        f"±{verdict.DEFAULT_MARGIN:.0%} margin <= {looks.SAME_ALPHA:.0%} per side; "
        f"fixed seed {MASTER_SEED}; {seconds:.0f} s.",
    ]


# --- the whole plan: the pair's own noise against noise pooled over the plan's cells -----


@dataclass(frozen=True)
class PlanCase:
    cv: float
    effect: float
    drift: str
    pairs: int
    seed: int
    noisy: int | None = None  # a cell (runner_sim.CELLS) with twice the others' sd

    @property
    def label(self) -> str:
        kind = "A/A" if self.effect == 0 else f"+{self.effect:.0%}"
        two = f" 2xsd:{runner_sim.CELLS[self.noisy]}" if self.noisy is not None else ""
        return f"{kind:>4} CV {self.cv:.0%} {self.drift}{two}"


@dataclass(frozen=True)
class Design:
    """A DIFFERENT boundary and where the sigma comes from (None: the pair's own)."""

    name: str
    gamma: float = looks.GAMMA_DIFFERENT
    power: float = looks.DESIGN_POWER
    pooled: bool = False
    take_max: bool = True


CURRENT = Design("pair's own noise (current)")
POOLED = Design("pooled, guard F 10 %, max(own, pooled)", pooled=True)


def simulate_plan(case: PlanCase, design: Design, margin: float = verdict.DEFAULT_MARGIN,
                  ) -> tuple[Outcome, float]:
    """The main comparison's outcome when the runner judges the whole plan, and the share
    of its looks that borrowed the pooled sigma."""
    schedule = looks.look_schedule(MAX_RUNS)
    sc = Scenario(case.cv, case.effect, case.drift, case.pairs, case.seed)
    v, runs, used = runner_sim.simulate(
        np.random.default_rng(case.seed), case.pairs, effect=case.effect, drift=case.drift,
        noise=lambda rng, shape: _noise(rng, sc, shape), schedule=schedule,
        rounds=runner_rounds(schedule), margin=margin,
        negligible=verdict.DEFAULT_NEGLIGIBLE, arm_offset=ARM_OFFSET, shift_sd=SHIFT_SD,
        drift_per_run=DRIFT_PER_RUN, pooled_noise=design.pooled, noisy=case.noisy,
        take_max=design.take_max, gamma=design.gamma, power=design.power)
    return Outcome(v, runs), used


def plan_cases(aa_pairs: int, power_pairs: int) -> list[PlanCase]:
    out: list[PlanCase] = []
    seed = MASTER_SEED + 500
    for drift in ("none", "trend", "blocks", "process", "arm"):
        for cv in (0.02, 0.03, 0.05):
            seed += 1
            out.append(PlanCase(cv, 0.0, drift, aa_pairs, seed))
    for noisy in (3, 0):
        seed += 1
        out.append(PlanCase(0.03, 0.0, "none", aa_pairs, seed, noisy))
    for cv, effect, drift, noisy in ((0.02, 0.03, "none", None), (0.03, 0.05, "none", None),
                                     (0.03, 0.05, "trend", None), (0.05, 0.05, "none", None),
                                     (0.05, 0.05, "trend", None), (0.03, 0.05, "none", 3)):
        seed += 1
        out.append(PlanCase(cv, effect, drift, power_pairs, seed, noisy))
    return out


def _cells(o: Outcome) -> str:
    return (f"{_pct(o.rate('DIFFERENT') + o.rate('WRONG'))} {_pct(o.rate('SAME'))} "
            f"{_pct(o.rate_by('SAME', SAME_BY)):>8} {o.runs.mean():5.1f} {_p95(o.runs):4.0f}")


def _plan_goals(rows: list[tuple[PlanCase, Outcome, Outcome, float]]) -> list[str]:
    """The goal rows, side by side: (current, pooled) for every goal."""
    def aa(pick: str) -> list[tuple[PlanCase, Outcome, Outcome]]:
        return [(c, a, b) for c, a, b, _ in rows if c.effect == 0 and c.noisy is None
                and (c.drift == pick if pick else c.drift not in ("process", "arm"))]

    def fpr(o: Outcome) -> float:
        return o.rate("DIFFERENT") + o.rate("WRONG")

    out = [f"  {'goal':<46}{CURRENT.name:<30}{POOLED.name}"]

    def line(goal: str, cur: str, new: str) -> None:
        out.append(f"  {goal:<46}{cur:<30}{new}")

    for name, pick in (("FPR <= 1 % (none, trend, blocks): max", ""),
                       ("'process' FPR (outside the model): max", "process"),
                       ("'arm' (a real +1 %) DIFFERENT: max", "arm")):
        worst = [max(fpr(x[i]) for x in aa(pick)) for i in (1, 2)]
        size = aa(pick)[0][1].verdicts.size
        line(name, *(f"{w:.2%} (95% upper {_upper(w * size, size):.2%})" for w in worst))
    for c, a, b, _ in rows:
        if c.noisy is not None and c.effect == 0:
            line(f"FPR, {runner_sim.CELLS[c.noisy]} at 2x sd", f"{fpr(a):.2%}", f"{fpr(b):.2%}")
    for c, a, b in aa("none"):
        line(f"SAME by {SAME_BY} >= 90 %, A/A CV {c.cv:.0%} none",
             *(f"{o.rate_by('SAME', SAME_BY):.1%}" for o in (a, b)))
    for c, a, b, _ in rows:
        if c.effect == 0.05 and c.cv == 0.03 and c.noisy is None:
            line(f"+5 % CV 3 % {c.drift}: >= 95 %, mean <= 12",
                 *(f"{o.rate('DIFFERENT'):.1%}, mean {o.runs.mean():.2f} ± "
                   f"{_mean_spread(o.runs):.2f}" for o in (a, b)))
        if c.effect == 0.05 and c.cv == 0.05:
            line(f"+5 % CV 5 % {c.drift}: >= 80 % by 30",
                 *(f"{(f := o.rate_by('DIFFERENT', MAX_RUNS)):.1%} ± "
                   f"{_spread(f, o.verdicts.size):.1%}" for o in (a, b)))
    wrong = [sum(int((x[i].verdicts == "WRONG").sum()) for x in rows) for i in (1, 2)]
    line("wrong-direction DIFFERENT", *(str(w) for w in wrong))
    return out


def plan_tradeoff(pairs: int, fpr_pairs: int) -> list[str]:
    """Pooling with spending designs that stop sooner, against the same FPR checks."""
    designs = [CURRENT, POOLED, Design("pooled, no max", pooled=True, take_max=False)]
    out = []
    for d in designs:
        fast, slow = (simulate_plan(PlanCase(cv, 0.05, "none", pairs, MASTER_SEED + s), d)[0]
                      for cv, s in ((0.03, 601), (0.05, 602)))
        worst = simulate_plan(PlanCase(0.05, 0.0, "trend", fpr_pairs, MASTER_SEED + 603), d,
                              margin=0.0)[0]
        starts, two = (simulate_plan(PlanCase(cv, 0.0, drift, fpr_pairs, MASTER_SEED + s,
                                              noisy), d)[0]
                       for cv, drift, s, noisy in ((0.02, "process", 604, None),
                                                   (0.03, "none", 605, 3)))
        out.append(f"{d.name}: CV 3 % mean {fast.runs.mean():.1f}, CV 5 % found "
                   f"{slow.rate_by('DIFFERENT', MAX_RUNS):.1%}; FPR SAME off (trend, CV 5 %) "
                   f"{worst.rate('DIFFERENT'):.2%}, process {starts.rate('DIFFERENT'):.2%}, "
                   f"2x sd {two.rate('DIFFERENT'):.2%}")
    return out


def first_look_at_two(cv: float = 0.03, effect: float = 0.05, z: float = 4.0) -> float:
    """How often a DIFFERENT-only first look at 2 runs per arm, boundary `z`, with the
    noise known (a t on any df only stops less), stops a +`effect` change: the most such a
    look can take off the mean is this share of the runs saved."""
    se = _sigma(cv) * math.sqrt(2.0 / 2)
    return float(norm.sf(z - math.log1p(effect) / se))


def render_plan(aa_pairs: int, power_pairs: int) -> str:
    rows = []
    for case in plan_cases(aa_pairs, power_pairs):
        current, _ = simulate_plan(case, CURRENT)
        pooled, used = simulate_plan(case, POOLED)
        rows.append((case, current, pooled, used))
    head = (f"{'scenario':<38}{'pairs':>6} | {'DIFF':>7} {'SAME':>7} {'SAME<=20':>8} "
            f"{'mean':>5} {'p95':>4} | {'DIFF':>7} {'SAME':>7} {'SAME<=20':>8} {'mean':>5} "
            f"{'p95':>4} {'borrow':>6}")
    lines = ["Whole plan, as the runner runs it (5 cells: 2x2 + A/A replica, 4 ratio "
             "comparisons escalated",
             "together; the main one, spec/no_spec @ graph, counted; effect and 'arm' offset "
             "on spec + graph):",
             f"{'':<44} | {CURRENT.name:<34} | {POOLED.name}", head, "-" * len(head)]
    for case, current, pooled, used in rows:
        lines.append(f"{case.label:<38}{case.pairs:>6} | {_cells(current)} | {_cells(pooled)} "
                     f"{used:6.0%}")
    lines += ["", "Goals on the whole plan, side by side:", *_plan_goals(rows), "",
              f"  Designs (the +5 % rows on {power_pairs // 2} pairs, FPRs on {aa_pairs // 2}):"]
    lines += [f"    {x}" for x in plan_tradeoff(power_pairs // 2, aa_pairs // 2)]
    lines += ["  A DIFFERENT-only first look at 2 runs per arm (boundary z 4, noise known) stops "
              f"+5 % at CV 3 % {first_look_at_two():.1%}",
              "  of the time: it cannot move the mean."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    # Enough pairs that a rate of 1 % is read to about ±0.1 % and a power of 80 % to
    # about ±0.6 % (95 %): the goals sit that close to what the design achieves.
    ap.add_argument("--pairs", type=int, default=None,
                    help="A/A pairs per scenario (40,000; 400,000 with --goals-only)")
    ap.add_argument("--check-pairs", type=int, default=40000,
                    help="A/A pairs of the SAME-off FPR check (a tenth for the trade-off)")
    ap.add_argument("--power-pairs", type=int, default=None,
                    help="pairs per effect scenario (20,000; 100,000 with --goals-only)")
    ap.add_argument("--legacy-pairs", type=int, default=300,
                    help="pairs for the old procedure (one request at a time: slow)")
    ap.add_argument("--plan-pairs", type=int, default=20000,
                    help="A/A pairs per whole-plan scenario (half as many per effect)")
    ap.add_argument("--plan-only", action="store_true", help="print the whole-plan section only")
    ap.add_argument("--goals-only", action="store_true",
                    help="only the goals' scenarios, at 400,000 A/A and 100,000 effect pairs "
                         "unless --pairs / --power-pairs say otherwise (about 90 s)")
    args = ap.parse_args()
    aa = args.pairs or (400_000 if args.goals_only else 40_000)
    power = args.power_pairs or (100_000 if args.goals_only else 20_000)
    if args.goals_only:
        t0 = time.perf_counter()
        rows = [(sc, simulate_new(sc)) for sc in goal_scenarios(aa, power)]
        print(f"Goals of issue 16, {aa} A/A and {power} effect pairs a row, each read "
              "against its 95 % interval:")
        print("\n".join(goal_lines(rows)))
        print(f"fixed seed {MASTER_SEED}; {time.perf_counter() - t0:.0f} s.")
        return
    if args.plan_only:
        print(render_plan(args.plan_pairs, args.plan_pairs // 2))
        return
    t0 = time.perf_counter()
    rows = []
    for sc in scenarios(aa, power):
        new = simulate_new(sc)
        old, naive, tt = simulate_old(sc, min(args.legacy_pairs, sc.pairs))
        rows.append((sc, new, old, naive, tt))
    print(render(rows, args.legacy_pairs, time.perf_counter() - t0, args.check_pairs))
    print()
    print(render_plan(args.plan_pairs, args.plan_pairs // 2))


if __name__ == "__main__":
    main()
