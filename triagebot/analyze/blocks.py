"""The log-ratio of two arms with rounds as blocks, and the drift check.

Runs are done in rounds (`triagebot/run/schedule.py`): in every round each arm's script
starts once and measures a few runs, and successive rounds mirror each other's order
(A B | B A, "ABBA"). The model for the log throughput of run i of arm j in round r is

    log y = mu_r + theta * [j is A] + e,    e independent, mean 0, variance sigma^2,

so each round is a block with its own level mu_r. Anything that moves the machine between
rounds (another tenant, clocks, temperature) moves both arms of the round alike and drops
out of theta; a slow drift within a round favours whichever arm ran first, and the mirrored
order of the next round gives the same advantage to the other arm, so a linear drift
cancels over each pair of rounds. theta is the log of the ratio of geometric means, the
least-squares estimate is a weighted mean of the per-round differences, and
var(theta) = sigma^2 / sum_r w_r with w_r = 1 / (1/n_A,r + 1/n_B,r).

Assumptions, stated so the report can be held to them: runs within a round are
exchangeable apart from a linear drift; the process start of a round adds no offset of its
own beyond e (the A/A pair, whose two cells run in separate processes, is the check: a
process offset shows up there as an A/A difference); log throughput is roughly normal
(the t test on means of 5+ runs tolerates the usual skew).

Every function takes a batch: each round is an array of shape (batch, runs), so the power
simulation evaluates thousands of simulated requests in one call and the report evaluates
one, through the same code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from triagebot.analyze.arrays import FloatArray

Rounds = Sequence[FloatArray]


@dataclass(frozen=True)
class BlockFit:
    """theta = log(A/B) with its standard error; arrays of shape (batch,)."""

    theta: FloatArray
    se: FloatArray
    df: FloatArray
    sigma: FloatArray  # residual sd of log throughput: the run-to-run CV, drift removed
    rounds: int  # rounds in which both arms ran


@dataclass(frozen=True)
class Trend:
    """Linear change of log throughput per round, fitted within each arm."""

    slope: FloatArray
    se: FloatArray
    df: FloatArray


def _shape(rounds: Rounds) -> tuple[int, ...]:
    for r in rounds:
        return tuple(r.shape[:-1])
    return (1,)


def _aligned(a: Rounds,
             b: Rounds) -> tuple[list[FloatArray], list[FloatArray], tuple[int, ...]]:
    """Both arms as float arrays with as many rounds each, and the batch shape."""
    batch = _shape([*a, *b])
    empty = np.empty((*batch, 0))
    n = max(len(a), len(b))

    def pad(rounds: Rounds) -> list[FloatArray]:
        return [np.asarray(r, dtype=np.float64) for r in rounds] + [empty] * (n - len(rounds))

    return pad(a), pad(b), batch


def fit(log_a: Rounds, log_b: Rounds) -> BlockFit:
    """Least squares for the block model above. Rounds are aligned by position."""
    a, b, batch = _aligned(log_a, log_b)
    wsum = np.zeros(batch)
    wd = np.zeros(batch)
    within = np.zeros(batch)
    levels = 0
    runs = 0
    diffs: list[tuple[float, FloatArray]] = []
    both = 0
    for ra, rb in zip(a, b, strict=True):
        na, nb = ra.shape[-1], rb.shape[-1]
        runs += na + nb
        levels += 1 if na + nb else 0
        for r, n in ((ra, na), (rb, nb)):
            if n:
                within += ((r - r.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
        if na and nb:
            w = 1.0 / (1.0 / na + 1.0 / nb)
            d = ra.mean(axis=-1) - rb.mean(axis=-1)
            wsum += w
            wd += w * d
            diffs.append((w, d))
            both += 1
    df = float(runs - levels - 1)
    if both == 0:
        nan = np.full(batch, np.nan)
        return BlockFit(nan, nan, np.full(batch, df), nan, 0)
    theta = wd / wsum
    between = sum((w * (d - theta) ** 2 for w, d in diffs), np.zeros(batch))
    with np.errstate(invalid="ignore", divide="ignore"):
        sigma2 = (within + between) / df if df > 0 else np.full(batch, np.nan)
    sigma = np.sqrt(sigma2)
    return BlockFit(theta, sigma / np.sqrt(wsum), np.full(batch, df), sigma, both)


def trend(log_a: Rounds, log_b: Rounds) -> Trend:
    """Drift within the comparison: slope of log throughput on time, per round.

    Time of run i of m in round r is r + (i + 0.5) / m, each arm keeping its own level, so
    a real difference between the arms is not mistaken for drift. Only rounds are known
    here, not where in its round a cell ran, which blurs the slope a little but not its
    sign.
    """
    a, b, batch = _aligned(log_a, log_b)
    sxx = np.zeros(batch)
    sxy = np.zeros(batch)
    syy = np.zeros(batch)
    n = 0
    for arm in (a, b):
        times = [r + (np.arange(x.shape[-1]) + 0.5) / max(x.shape[-1], 1)
                 for r, x in enumerate(arm)]
        if not any(t.size for t in times):
            continue
        t = np.concatenate(times)
        y = np.concatenate([x for x in arm], axis=-1)
        tc = t - t.mean()
        yc = y - y.mean(axis=-1, keepdims=True)
        sxx += float((tc**2).sum())
        sxy += (yc * tc).sum(axis=-1)
        syy += (yc**2).sum(axis=-1)
        n += t.size
    df = float(n - 3)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = sxy / sxx
        resid = (syy - slope * sxy) / df if df > 0 else np.full(batch, np.nan)
        se = np.sqrt(np.maximum(resid, 0.0) / sxx)
    return Trend(slope, se, np.full(batch, df))
