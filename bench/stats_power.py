"""False-positive rate and power of triagebot's verdict procedure vs the seeds' protocol.

Run from the repo root:  .venv/bin/python bench/stats_power.py [--pairs N] [--jobs J]

Simulation. Per-run throughput of an arm is lognormal (normal in the "norm" rows: the
rank test is distribution-free, so the A/A rate must not move) with the given CV around a
median (100 tok/s for B, 100·(1+effect) for A): "effect 5 %" is median(A)/median(B) = 1.05.
Every simulated request also gets its own A/A calibration pair (5 v 5 runs of B's
distribution) from which the noise band is measured, as a plan's A/A cells would be.

Procedures, side by side on the same simulated runs:

* ours: triagebot.analyze.stats.next_step from 5 runs per arm, escalating by 5 up to 20
  (looks at 5/10/15/20) until DIFFERENT or SAME; the power column counts DIFFERENT in the
  right direction.
* seeds ±2 %: the protocol of the seed reports (000_*: RUNS = 5, statistics.mean, print
  mean_a/mean_b). The reporters state no rule; they read the printed ratio. Our honest
  reading of "0.97x is slower" is: a ratio of means beyond ±2 % is called a difference.
* seeds t: the most a careful reporter adds to that protocol: Welch's t-test on the same
  5 v 5 runs, different when p < 0.05.

Fixed seeds: the same command prints the same table.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.stats import ttest_ind

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from triagebot.analyze.stats import next_step, noise_band

MAX_RUNS = 20
SEEDS_RUNS = 5
NAIVE_BAND = 0.02
AA_RUNS = 5
BASE = 100.0
MASTER_SEED = 20240611


@dataclass(frozen=True)
class Scenario:
    cv: float
    effect: float
    pairs: int
    seed: int
    dist: str = "lognormal"

    @property
    def label(self) -> str:
        kind = "A/A" if self.effect == 0 else f"+{self.effect:.0%}"
        return f"{kind:>4} CV {self.cv:.0%} {self.dist[:4]}"


@dataclass
class Tally:
    ours_diff: int = 0
    ours_wrong_dir: int = 0
    ours_same: int = 0
    ours_unknown: int = 0
    ours_runs: int = 0
    naive_diff: int = 0
    ttest_diff: int = 0
    pairs: int = 0


def _draw(rng: np.random.Generator, dist: str, median: float, cv: float, n: int) -> np.ndarray:
    if dist == "normal":
        return median * (1.0 + cv * rng.normal(0.0, 1.0, n))
    sigma = math.sqrt(math.log1p(cv * cv))
    return median * np.exp(rng.normal(0.0, sigma, n))


def _ours(
    a: np.ndarray, b: np.ndarray, aa: tuple[np.ndarray, np.ndarray], effect: float
) -> tuple[str, int]:
    """Run the escalation loop the CLI runs; (verdict, runs per arm used). A DIFFERENT
    with ratio < 1 under a positive effect is reported apart: it is not power."""
    band = noise_band(*aa)
    runs = SEEDS_RUNS
    while True:
        d = next_step(a[:runs], b[:runs], band, runs, MAX_RUNS)
        if d.action == "stop":
            verdict = d.comparison.verdict
            if verdict == "DIFFERENT" and effect > 0 and (d.comparison.ratio or 1.0) < 1.0:
                verdict = "WRONG_DIRECTION"
            return verdict, runs
        runs += d.more_runs_per_arm


def _seeds(a: np.ndarray, b: np.ndarray, effect: float) -> tuple[bool, bool]:
    """(ratio-of-means rule says different, Welch t says different), right direction only
    (for A/A any call counts: the true ratio is 1)."""
    a5, b5 = a[:SEEDS_RUNS], b[:SEEDS_RUNS]
    ratio = a5.mean() / b5.mean()
    naive = ratio > 1 + NAIVE_BAND if effect > 0 else abs(ratio - 1) > NAIVE_BAND
    p = ttest_ind(a5, b5, equal_var=False).pvalue
    t = bool(p < 0.05 and (ratio > 1 or effect == 0))
    return bool(naive), t


def run_scenario(sc: Scenario) -> Tally:
    tally = Tally(pairs=sc.pairs)
    children = np.random.SeedSequence(sc.seed).spawn(sc.pairs)
    for child in children:
        rng = np.random.default_rng(child)
        b = _draw(rng, sc.dist, BASE, sc.cv, MAX_RUNS)
        a = _draw(rng, sc.dist, BASE * (1 + sc.effect), sc.cv, MAX_RUNS)
        aa = (_draw(rng, sc.dist, BASE, sc.cv, AA_RUNS), _draw(rng, sc.dist, BASE, sc.cv, AA_RUNS))
        verdict, runs = _ours(a, b, aa, sc.effect)
        tally.ours_runs += runs
        if verdict == "DIFFERENT":
            tally.ours_diff += 1
        elif verdict == "WRONG_DIRECTION":
            tally.ours_wrong_dir += 1
        elif verdict == "SAME":
            tally.ours_same += 1
        else:
            tally.ours_unknown += 1
        naive, t = _seeds(a, b, sc.effect)
        tally.naive_diff += naive
        tally.ttest_diff += t
    return tally


def _pct(k: int, n: int) -> str:
    return f"{k / n:7.2%}"


def render(results: list[tuple[Scenario, Tally]], seconds: float) -> str:
    head = (
        f"{'scenario':<15}{'pairs':>6} | {'ours DIFF':>9} {'SAME':>7} {'UNKNOWN':>8} "
        f"{'runs/arm':>8} | {'seeds ±2%':>9} | {'seeds t':>8}"
    )
    lines = [head, "-" * len(head)]
    for sc, t in results:
        n = t.pairs
        lines.append(
            f"{sc.label:<15}{n:>6} | {_pct(t.ours_diff, n):>9} "
            f"{_pct(t.ours_same, n)} {_pct(t.ours_unknown, n):>8} "
            f"{t.ours_runs / n:8.1f} | {_pct(t.naive_diff, n):>9} | {_pct(t.ttest_diff, n):>8}"
        )
        if t.ours_wrong_dir:
            lines.append(f"{'':<15}{'':>6}   ({t.ours_wrong_dir} DIFFERENT in the wrong direction)")
    lines += [
        "",
        "A/A rows: DIFF = false-positive rate, either direction (target <= 1 % at alpha 0.01).",
        "Effect rows: DIFF = power (DIFFERENT with ratio > 1); seeds columns count a",
        "correct-direction call. runs/arm: seeds' protocol always uses 5; ours adds an A/A",
        f"calibration pair of {AA_RUNS} v {AA_RUNS} runs per request (not in the column).",
        "ours: MWU p < per-look alpha (0.008 at 5 runs, 0.00067 at 10/15/20) AND the 95 %",
        "bootstrap CI of the ratio of medians outside the A/A noise band (floor ±1 %).",
        f"seeds ±2%: ratio of 5-run means beyond ±{NAIVE_BAND:.0%}; seeds t: Welch t, p < 0.05.",
        f"logn/norm: lognormal/normal run-to-run noise; fixed seed {MASTER_SEED}; {seconds:.0f} s.",
    ]
    return "\n".join(lines)


def scenarios(aa_pairs: int, power_pairs: int) -> list[Scenario]:
    out = []
    for i, cv in enumerate((0.02, 0.05)):
        for j, effect in enumerate((0.0, 0.03, 0.05, 0.10)):
            pairs = aa_pairs if effect == 0 else power_pairs
            out.append(Scenario(cv, effect, pairs, MASTER_SEED + 100 * i + j))
    # Normal noise too: the rank test is distribution-free, so the A/A rate must not move.
    for i, cv in enumerate((0.02, 0.05)):
        out.append(Scenario(cv, 0.0, aa_pairs, MASTER_SEED + 1000 + i, dist="normal"))
        out.append(Scenario(cv, 0.05, power_pairs, MASTER_SEED + 1010 + i, dist="normal"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2000, help="A/A pairs per CV (>= 2000)")
    ap.add_argument("--power-pairs", type=int, default=1000, help="pairs per effect size")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args()
    todo = scenarios(args.pairs, args.power_pairs)
    t0 = time.perf_counter()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            tallies = list(pool.map(run_scenario, todo))
    else:
        tallies = [run_scenario(sc) for sc in todo]
    print(render(list(zip(todo, tallies, strict=True)), time.perf_counter() - t0))


if __name__ == "__main__":
    main()
