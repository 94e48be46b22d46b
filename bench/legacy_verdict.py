"""The verdict procedure before issue 16, frozen here so the power bench can print it
beside the current one on the same simulated runs. Not used by triagebot itself.

Per look (5, 10, 15, 20 runs per arm): DIFFERENT iff the Mann-Whitney p < the look's
alpha (0.008 at the first look, 0.00067 at each later one: Bonferroni over looks) and the
95 % bootstrap CI of the ratio of medians lies outside the A/A noise band; SAME iff the CI
lies inside the band; the band is ±max(1 %, |log(median ratio)| of a 5 v 5 A/A pair).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import mannwhitneyu

LOOKS = (5, 10, 15, 20)
ALPHAS = (0.008, 0.002 / 3, 0.002 / 3, 0.002 / 3)
FLOOR = 0.01
RESAMPLES = 2000


def _boot_log_medians(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = x.size
    xs = np.sort(x)
    idx = np.sort(rng.integers(0, n, size=(RESAMPLES, n)), axis=1)
    return np.log(0.5 * (xs[idx[:, (n - 1) // 2]] + xs[idx[:, n // 2]]))


def band(aa_a: np.ndarray, aa_b: np.ndarray) -> float:
    """Log half-width of the A/A noise band."""
    return max(math.log1p(FLOOR), abs(math.log(np.median(aa_a) / np.median(aa_b))))


def verdict(a: np.ndarray, b: np.ndarray, half: float) -> tuple[str, int, float]:
    """(verdict, runs per arm used, ratio of medians) after escalating through LOOKS."""
    for n, alpha in zip(LOOKS, ALPHAS, strict=True):
        xa, xb = a[:n], b[:n]
        rng = np.random.default_rng(0)
        logs = _boot_log_medians(xa, rng) - _boot_log_medians(xb, rng)
        lo, hi = np.quantile(logs, (0.025, 0.975))
        ties = np.unique(np.concatenate([xa, xb])).size < 2 * n
        p = mannwhitneyu(xa, xb, alternative="two-sided",
                         method="asymptotic" if ties else "exact").pvalue
        ratio = float(np.median(xa) / np.median(xb))
        if (lo > half or hi < -half) and p < alpha:
            return "DIFFERENT", n, ratio
        if -half <= lo and hi <= half and half <= math.log1p(0.10):
            return "SAME", n, ratio
    return "UNKNOWN", LOOKS[-1], ratio
