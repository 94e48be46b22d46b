"""What the runner does with a whole plan, simulated: `bench/stats_power.py` prints it.

The plan is the sample's: the 2x2 matrix no_spec/spec x eager/graph and an A/A replica of
spec + graph, five cells. The four ratio comparisons are judged at every look; a cell runs
again (the next round, reversing or repeating the one before as
`triagebot/run/schedule.balanced_turn` picks) while any comparison it is in is
UNKNOWN, the A/A replica only in the first pair of rounds, as
`triagebot/run/orchestrate.py` escalates. Within a round the cells that run start one
after another in a shuffled order, which later rounds reverse or repeat,
so with the 'trend' drift a cell's place in the round moves its runs in time. The effect
(and the 'arm' offset) is on spec + graph and its replica, so the main comparison
(spec/no_spec @ graph) sees it; its verdict is the one counted. `noisy` gives one cell twice
the run-to-run sd of the others (the homogeneity guard's case).

Both procedures run on the same simulated runs: `pooled=False` judges every comparison from
its own pair of cells (the procedure before pooling), `pooled=True` borrows the plan-wide
noise estimate through `bench/pooled_noise.py` (the design evaluated, not adopted).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from bench import pooled_noise as pooled
from triagebot.analyze import blocks, looks

CELLS = ("no_spec eager", "no_spec graph", "spec eager", "spec graph", "A/A spec graph")
MAIN = (3, 1)
RATIOS = (MAIN, (2, 0), (1, 0), (3, 2))
EFFECT_CELLS = (3, 4)
REPLICA = 4


def turn(sign: np.ndarray, lean: np.ndarray) -> np.ndarray:
    """The orientation of the next round (+1: the first round's order, -1: reversed), as
    `schedule.balanced_turn` picks it from `lean`, the sum over earlier rounds of their
    orientation times their runs squared: the orientation that is behind, and on a tie the
    reverse of the last round's (`sign`)."""
    return np.where(sign * lean >= 0, -sign, sign)


def simulate(
    rng: np.random.Generator, pairs: int, *, effect: float, drift: str,
    noise: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray],
    schedule: list[int], rounds: list[tuple[int, int]], margin: float, negligible: float,
    arm_offset: float, shift_sd: float, drift_per_run: float, pooled_noise: bool,
    noisy: int | None = None, guard: float = pooled.HOMOGENEITY_ALPHA, take_max: bool = True,
    gamma: float = looks.GAMMA_DIFFERENT, power: float = looks.DESIGN_POWER,
) -> tuple[np.ndarray, np.ndarray, float]:
    """(verdicts of the main comparison, runs per arm when it stopped, share of its looks
    that borrowed the pooled sigma). `noise(rng, shape)` draws the log noise of a run;
    `noisy` doubles one cell's."""
    ncell = len(CELLS)
    level = np.zeros(ncell)
    for c in EFFECT_CELLS:
        level[c] = math.log1p(effect) + (math.log1p(arm_offset) if drift == "arm" else 0.0)
    scale = np.ones(ncell)
    if noisy is not None:
        scale[noisy] = 2.0
    data: list[list[np.ndarray]] = [[] for _ in range(ncell)]
    ran: list[list[np.ndarray]] = [[] for _ in range(ncell)]  # (pairs,) bool per round
    alive = np.ones((len(RATIOS), pairs), dtype=bool)
    closed = np.zeros((len(RATIOS), pairs), dtype=bool)  # DIFFERENT spent, per comparison
    active = np.ones((pairs, ncell), dtype=bool)
    history = np.zeros(pairs, dtype=np.int64)  # which cells ran, look by look
    verdicts = np.full(pairs, "UNKNOWN", dtype=object)
    runs = np.full(pairs, schedule[-1])
    clock = np.zeros(pairs)
    keys = np.zeros((pairs, ncell))
    borrowed: list[float] = []
    done = 0  # runs per arm so far: the first look sees the plan's 5, not its nominal 4
    sign = np.ones(pairs)
    lean = np.zeros(pairs)
    for i, (k, m) in enumerate(rounds):
        done += m
        if i == 0:  # later rounds reverse or repeat it (`schedule.balanced_turn`)
            keys = rng.random((pairs, ncell))
        else:
            sign = turn(sign, lean)
        lean = lean + sign * m * m
        order = np.where(active, keys * sign[:, None], np.inf)
        place = np.argsort(np.argsort(order, axis=1), axis=1)  # 0.. among the active
        within = np.arange(m)[None, :]
        blk = rng.normal(0.0, shift_sd, pairs) if drift == "blocks" else np.zeros(pairs)
        for c in range(ncell):
            t = clock[:, None] + place[:, c:c + 1] * m + within
            start = rng.normal(0.0, shift_sd, pairs) if drift == "process" else 0.0
            trend = drift_per_run * t if drift == "trend" else 0.0
            data[c].append(level[c] + blk[:, None] + np.asarray(start)[..., None]
                           - trend + scale[c] * noise(rng, (pairs, m)))
            ran[c].append(active[:, c].copy())
        clock = clock + active.sum(axis=1) * m
        if i + 1 < len(rounds) and rounds[i + 1][0] == k:
            continue
        history = history * 32 + (active.astype(np.int64) << np.arange(ncell)).sum(axis=1)
        pool = (_pooled(data, ran, history, np.asarray(alive.any(axis=0)))
                if pooled_noise else None)
        for j, (a, b) in enumerate(RATIOS):
            if not alive[j].any():
                continue
            fit = blocks.fit(data[a], data[b])
            fit, used = pooled.borrow(fit, pool, guard, take_max)
            seen = looks.judge(fit, schedule, k, closed[j], looks.Rule(
                margin=margin, negligible=negligible, gamma=gamma, power=power))
            closed[j] = seen.closed
            codes = seen.codes
            decided = alive[j] & ((codes != looks.UNKNOWN) | seen.futile)
            if j == 0:
                borrowed.append(float(used[alive[0]].mean()) if alive[0].any() else 0.0)
                wrong = decided & (codes == looks.DIFFERENT) & (fit.theta * effect < 0)
                verdicts[decided & (codes == looks.SAME)] = "SAME"
                verdicts[decided & (codes == looks.DIFFERENT)] = "DIFFERENT"
                verdicts[wrong] = "WRONG"
                runs[decided] = done
            alive[j] &= ~decided
        # The next round: the cells of every comparison still UNKNOWN.
        active = np.zeros((pairs, ncell), dtype=bool)
        for j, (a, b) in enumerate(RATIOS):
            active[:, a] |= alive[j]
            active[:, b] |= alive[j]
    return verdicts, runs, float(np.mean(borrowed)) if borrowed else 0.0


def _pooled(data: list[list[np.ndarray]], ran: list[list[np.ndarray]], history: np.ndarray,
            alive: np.ndarray) -> pooled.PooledNoise:
    """The plan-wide fit for every simulated request, one least-squares call per pattern
    of which cells ran when (requests with the same pattern share a design)."""
    pairs = history.size
    ss = np.full(pairs, np.nan)
    df = np.zeros(pairs)
    for code in np.unique(history[alive]):
        rows = np.flatnonzero(alive & (history == code))
        cells = [[x[rows] if r[rows[0]] else x[rows, :0] for x, r in zip(xs, rs, strict=True)]
                 for xs, rs in zip(data, ran, strict=True)]
        fit = pooled.pool(cells)
        ss[rows], df[rows] = fit.ss, fit.df
    return pooled.PooledNoise(ss, df)
