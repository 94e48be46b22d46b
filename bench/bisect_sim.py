"""How many steps a bisect takes, and how often it names the wrong point, under noise.

Run from the repo root:  .venv/bin/python bench/bisect_sim.py [--trials N] [--quick]

Model. A range of N candidates has its change at a uniformly drawn point. Each step is a
full repro at the probed point: the report's main comparison (spec / no-spec, say) has a
true ratio of `--old` (default 1.00) before the change and `--new` (default 0.90) after.
Per-run throughput is lognormal with the given CV; runs come in rounds (A B | B A) and
every round shifts both arms by N(0, 1 %). The step's verdict is decided by
`triagebot.analyze.verdict.next_step`, the same group-sequential rule and escalation
(looks at 4, 8, ..., 40 runs per arm: a bisect step's budget) as `triagebot repro`, read
as the repro's outcome for a "spec is slower" report: DIFFERENT below 1 is bad, any other
decided verdict good, UNKNOWN at the last look a skip. A broken build (probability
`--broken`, fixed per point) is a skip that costs no runs. The search itself is
`triagebot.bisect.search`, unchanged.

Speed: a step's verdict depends only on whether its point is before or after the change,
so each (state, CV) gets a pool of independently simulated steps and a bisect draws from
it; the pools are the expensive part. Fixed seeds: the same command prints the same table.

Columns: mean and 95th percentile of steps, log2 N + 2 (the goal at CV 3 %), the share
of bisects that named a wrong point (an exact answer that is wrong, or an "one of these"
answer that leaves the true point out), and the share left unresolved (skips next to the
change, so the answer is a set rather than one point).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from triagebot.analyze import looks, verdict
from triagebot.bisect import search
from triagebot.bisect.ranges import BisectRange
from triagebot.bisect.runner import BisectSettings
from triagebot.bisect.search import Step

# A bisect step escalates past a repro's default ceiling (Budget().max_runs), as Pinpoint
# adds repeats where the answer is unclear: at CV 3 % an unchanged point needs ~25 runs
# per arm to be called SAME within ±3 %, and every UNKNOWN is a skip. The same number as
# BisectSettings.step_max_runs.
MAX_RUNS: int = BisectSettings.model_fields["step_max_runs"].default
ROUND_SHIFT = 0.01
SEED = 20261125
GOAL_WRONG = 0.01


@dataclass(frozen=True)
class Pool:
    verdicts: np.ndarray  # 0 good, 1 bad, 2 skip
    runs: np.ndarray
    p: np.ndarray  # the main comparison's p-value (1.0 where none)


def one_step(ratio: float, cv: float, rng: np.random.Generator,
             margin: float) -> tuple[int, int, float]:
    """(verdict code, runs per arm, p-value) of one simulated repro at a point."""
    sigma = math.sqrt(math.log1p(cv * cv))
    a_rounds: list[np.ndarray] = []
    b_rounds: list[np.ndarray] = []
    have = 0
    schedule = looks.look_schedule(MAX_RUNS)
    while True:
        target = next(n for n in schedule if n > have) if have < schedule[-1] else have
        more = target - have
        # Two mirrored rounds per look, each shifting both arms alike.
        for half in (more // 2, more - more // 2):
            if half <= 0:
                continue
            shift = rng.normal(0.0, ROUND_SHIFT)
            a_rounds.append(np.exp(math.log(100 * ratio) + shift
                                   + rng.normal(0.0, sigma, half)))
            b_rounds.append(np.exp(math.log(100.0) + shift + rng.normal(0.0, sigma, half)))
        have = target
        decision = verdict.next_step(a_rounds, b_rounds, have, MAX_RUNS, margin=margin)
        if decision.action == "stop":
            res = decision.comparison
            p = 1.0 if res.p_value is None else res.p_value
            if res.verdict == "UNKNOWN":
                return 2, have, p
            slower = res.verdict == "DIFFERENT" and (res.ratio or 1.0) < 1.0
            return (1 if slower else 0), have, p


def make_pool(ratio: float, cv: float, size: int, seed: int, margin: float) -> Pool:
    rng = np.random.default_rng(seed)
    got = [one_step(ratio, cv, rng, margin) for _ in range(size)]
    return Pool(np.array([g[0] for g in got]), np.array([g[1] for g in got]),
                np.array([g[2] for g in got]))


def one_bisect(n: int, old: Pool, new: Pool, broken: float,
               rng: np.random.Generator) -> tuple[int, bool, bool, int]:
    """(steps, wrong, unresolved, runs) of one simulated bisect over n candidates."""
    points = [str(k) for k in range(n + 1)]
    rng_ = BisectRange(level="release", direction="regress", points=points,
                       good=points[0], bad=points[-1])
    change = int(rng.integers(1, n + 1))
    dead = rng.random(n + 1) < broken
    steps: list[Step] = []
    runs = 0
    budget = search.step_budget(n)
    while (k := search.next_index(rng_, steps)) is not None and len(steps) < budget:
        if dead[k]:
            steps.append(Step(point=points[k], verdict="skip"))
            continue
        pool = new if k >= change else old
        draw = int(rng.integers(0, len(pool.verdicts)))
        code = int(pool.verdicts[draw])
        runs += int(pool.runs[draw])
        word = ("good", "bad", "skip")[code]
        steps.append(Step(point=points[k], verdict=word,  # type: ignore[arg-type]
                          p_value=float(pool.p[draw])))
    out = search.outcome(rng_, steps)
    named = [int(p) for p in [*out.skipped, out.first_new]]
    # An answer that is not a single point (skips beside the change, or the step budget
    # spent) is unresolved; it is wrong only when the points it names leave the change out.
    untested = [int(p) for p in out.untested]
    wrong = change not in named and change not in untested
    return len(steps), wrong, not out.exact, runs


def clean_check(sizes: list[int]) -> list[str]:
    """With an exact predicate, every change point within ceil(log2 N) (+1 allowed)."""
    lines = []
    for n in sizes:
        points = [str(k) for k in range(n + 1)]
        rng_ = BisectRange(level="release", direction="regress", points=points,
                           good=points[0], bad=points[-1])
        worst = 0
        for change in range(1, n + 1):
            steps: list[Step] = []
            while (k := search.next_index(rng_, steps)) is not None:
                steps.append(Step(point=points[k], verdict="bad" if k >= change else "good"))
            assert search.outcome(rng_, steps).first_new == points[change]
            worst = max(worst, len(steps))
        bound = math.ceil(math.log2(n)) + 1
        lines.append(f"clean predicate N={n:>3}: worst {worst} steps over all {n} change "
                     f"points (bound ceil(log2 N)+1 = {bound}) "
                     f"{'ok' if worst <= bound else 'OVER'}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000, help="bisects per row")
    ap.add_argument("--pool", type=int, default=600, help="simulated steps per state")
    ap.add_argument("--old", type=float, default=1.00, help="true ratio before the change")
    ap.add_argument("--new", type=float, default=0.90, help="true ratio after the change")
    ap.add_argument("--margin", type=float, default=0.03,
                    help="SAME margin of each step's verdict (the repo's margin_pct)")
    ap.add_argument("--quick", action="store_true", help="fewer rows and trials")
    args = ap.parse_args()
    sizes = [8, 32, 128, 512]
    cvs = [0.02, 0.03, 0.05, 0.10]
    brokens = [0.0, 0.05, 0.10]
    if args.quick:
        sizes, cvs, brokens = [8, 512], [0.03, 0.10], [0.0, 0.10]
        args.trials, args.pool = min(args.trials, 500), min(args.pool, 200)
    for line in clean_check(sizes):
        print(line)
    print(f"\nnoisy predicate: ratio {args.old:.2f} -> {args.new:.2f}, SAME margin "
          f"±{args.margin:.0%}, {args.trials} bisects per row, {args.pool} simulated repros "
          "per state and CV")
    print(f"{'N':>4} {'CV':>4} {'broken':>6} | {'mean':>5} {'p95':>4} {'goal':>5} | "
          f"{'wrong':>6} {'unres':>6} | runs/arm/step")
    master = np.random.default_rng(SEED)
    verdicts = []
    for cv in cvs:
        old = make_pool(args.old, cv, args.pool, int(master.integers(1 << 31)), args.margin)
        new = make_pool(args.new, cv, args.pool, int(master.integers(1 << 31)), args.margin)
        for n in sizes:
            for broken in brokens:
                rng = np.random.default_rng(int(master.integers(1 << 31)))
                got = [one_bisect(n, old, new, broken, rng) for _ in range(args.trials)]
                steps = np.array([g[0] for g in got])
                wrong = float(np.mean([g[1] for g in got]))
                unres = float(np.mean([g[2] for g in got]))
                runs = sum(g[3] for g in got) / max(1, steps.sum())
                goal = math.log2(n) + 2
                print(f"{n:>4} {cv:>4.0%} {broken:>6.0%} | {steps.mean():>5.2f} "
                      f"{np.percentile(steps, 95):>4.0f} {goal:>5.1f} | {wrong:>6.2%} "
                      f"{unres:>6.2%} | {runs:.1f}")
                if cv == 0.03:
                    verdicts.append(wrong <= GOAL_WRONG and steps.mean() <= goal)
    print(f"\ngoals at CV 3 % (wrong culprit <= {GOAL_WRONG:.0%}, mean steps <= log2 N + 2): "
          f"{'met' if verdicts and all(verdicts) else 'NOT met'} in "
          f"{sum(verdicts)}/{len(verdicts)} rows")


if __name__ == "__main__":
    main()
