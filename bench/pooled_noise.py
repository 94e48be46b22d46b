"""Run-to-run noise pooled over every cell of a plan, and when a comparison may borrow it.

Evaluated by `bench/stats_power.py` (its "whole plan" section) and not used by triagebot:
measured on the plan as the runner runs it, it is not better than the pair's own noise on
every goal (the bench prints the numbers), so the verdict keeps the pair's estimate.

A plan runs several cells on one runner with one workload (the 2x2 eager/graph x spec
off/on matrix and an A/A replica, say), in the same rounds. Run-to-run noise of log
throughput is a property of the runner and the workload, so it is estimated once over all
cells, not again from each pair's few runs: the model is

    log y = level of the cell + level of the round + e,    e ~ N(0, sigma^2) for every cell,

fitted by least squares over every run of every cell in the rounds the comparison has run
so far (its window; cells that stopped earlier count with the rounds they ran). The
residual sum of squares has N - rank degrees of freedom instead of the pair's own
(runs - rounds - 1): 14 instead of 5 at the first look of a five-cell plan, 20 to 28
instead of 11 at the second (as many cells as still run). What the rounds-as-blocks pair
fit (`blocks.fit`) calls noise, the model here calls noise too: differences between a
cell's script starts within a round land in the residuals of both, so a start that adds an
offset of its own widens both alike.

**Homogeneity guard.** Borrowing is only right when the pair is no noisier than the rest.
The pair's own residual sum of squares SS_own (df_own) is part of the pooled SS_pool
(df_pool); under the model the remainder SS_pool - SS_own is independent of it with
df_pool - df_own degrees of freedom, so F = (SS_own / df_own) / (remainder / its df) is
F-distributed, and a pair whose F exceeds the upper `HOMOGENEITY_ALPHA` quantile keeps its
own estimate (the procedure without pooling). A pair that passes uses

    sigma = max(own sigma, pooled sigma) on df_pool degrees of freedom

(`take_max`; without it the pooled sigma alone), never a smaller sigma than its own.
Why this keeps the error budget under homogeneity: with the arms balanced within rounds,
theta is a contrast of cell levels, independent of every residual; the F statistic (a
ratio of two independent chi-squares) is independent of their sum, so the pooled t is
still Student t on df_pool given that the pair passed, and the max only shrinks |T|. A
pair that fails has, if anything, a large own SS, so its own t is conservative too. When
the noise is not homogeneous (one cell of the pair with twice the sd) the F test on 5 and
9 degrees of freedom at the first look misses it often, and the bench measures what gets
through beside the homogeneous rows.

Assumptions beyond `blocks.py`'s: one sigma for every cell unless the guard says
otherwise; a cell's i-th result is round i for every cell (the runner escalates the cells
of a comparison together, in lockstep with the others still running).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray
from scipy.stats import f as f_dist

from triagebot.analyze.blocks import BlockFit, FloatArray

HOMOGENEITY_ALPHA: Final = 0.10
CellRounds = Sequence[FloatArray]  # one cell: rounds of shape (batch, runs)


@dataclass(frozen=True)
class PooledNoise:
    """Residual sum of squares of the all-cells model, shape (batch,), on `df` degrees."""

    ss: FloatArray
    df: FloatArray


def pool(cells: Sequence[CellRounds], window: int | None = None) -> PooledNoise:
    """Least squares of the cell + round model over the first `window` rounds of every
    cell (all rounds if None). Every round array of every cell shares one batch shape."""
    parts: list[FloatArray] = []
    cell_of: list[int] = []
    round_of: list[int] = []
    batch: tuple[int, ...] = (1,)
    for c, rounds in enumerate(cells):
        for r, x in enumerate(rounds[:window] if window is not None else rounds):
            arr = np.asarray(x, dtype=np.float64)
            batch = tuple(arr.shape[:-1])
            n = arr.shape[-1]
            if n:
                parts.append(arr.reshape(-1, n))
                cell_of += [c] * n
                round_of += [r] * n
    if not parts:
        return PooledNoise(np.zeros(batch), np.zeros(batch))
    y = np.concatenate(parts, axis=-1).T  # (runs, batch)
    cols = [np.asarray(cell_of) == c for c in sorted(set(cell_of))]
    cols += [np.asarray(round_of) == r for r in sorted(set(round_of))[1:]]
    design = np.stack(cols, axis=1).astype(np.float64)
    beta, _, rank, _ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ beta
    ss = (resid**2).sum(axis=0).reshape(batch)
    return PooledNoise(ss, np.full(batch, float(y.shape[0] - rank)))


def borrow(fit: BlockFit, pooled: PooledNoise | None, alpha: float = HOMOGENEITY_ALPHA,
           take_max: bool = True) -> tuple[BlockFit, NDArray[np.bool_]]:
    """The pair's fit with the pooled sigma and df where the guard lets it borrow them,
    and where it did."""
    if pooled is None:
        return fit, np.zeros(fit.theta.shape, dtype=bool)
    own_df = fit.df
    rest_df = pooled.df - own_df
    with np.errstate(invalid="ignore", divide="ignore"):
        own_ss = fit.sigma**2 * own_df
        rest_ss = pooled.ss - own_ss
        ratio = (own_ss / own_df) / (rest_ss / rest_df)
        cut = f_dist.isf(alpha, np.maximum(own_df, 1.0), np.maximum(rest_df, 1.0))
        shared = pooled.ss / pooled.df
        sigma = np.sqrt(np.maximum(fit.sigma**2, shared) if take_max else shared)
        se = fit.se * sigma / fit.sigma
    use = ((own_df > 0) & (rest_df > 0) & (rest_ss > 0) & np.isfinite(ratio) & (ratio <= cut)
           & np.isfinite(se))
    return BlockFit(theta=fit.theta, se=np.where(use, se, fit.se),
                    df=np.where(use, pooled.df, own_df), sigma=np.where(use, sigma, fit.sigma),
                    rounds=fit.rounds), use
