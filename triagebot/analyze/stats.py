"""What a verdict means, in code (design.md §5).

Samples are per-run values of a higher-is-better metric (tok/s) for one cell. All
intervals are percentile bootstraps drawn from a seeded `numpy.random.Generator`, so the
same samples always give the same report. Nothing here raises on bad data: empty, single,
NaN, zero or constant samples come back as UNKNOWN with a reason.

The rules, exactly:

**Noise band** (`noise_band`). Two cells with identical configuration (the A/A pair) are
run like any other pair. Let r_AA = median(A) / median(A'). The band is the ratio interval
[e^-δ, e^δ] with

    δ = max(ln(1 + floor), |ln r_AA|),   floor = 1 %.

That is: a difference counts as noise if it is no bigger than the difference between two
runs of the same thing, and never narrower than ±1 % (below that, GPU clocks and
allocator luck decide, and a single A/A pair can be lucky). We use the A/A *point* ratio,
not its CI edge: the CI of the compared pair already carries sampling noise, and counting
it twice would leave no power at CV 5 %. Because |ln r_AA| still contains the A/A pair's
own sampling noise, δ is biased wide, which costs power, never false positives. With no
usable A/A pair the band is ±2 % (`DEFAULT_BAND`, source "default") and the result says so.

**Verdict** (`decide`), for the ratio R = median(a) / median(b) with its 95 % bootstrap CI:

* DIFFERENT iff the Mann-Whitney U two-sided p < alpha (default 0.01, per look, below)
  **and** the CI lies wholly outside the band;
* SAME iff the CI lies wholly inside the band (and the band is no wider than ±10 %: a
  runner that noisy cannot vouch for sameness);
* UNKNOWN otherwise, and for any degenerate input.

**Escalation** (`next_step`). Runs per arm follow the schedule 5, 10, 15, ... up to
`max_runs` (always the last look), as Pinpoint adds attempts on UNKNOWN. Each look tests
at its own alpha and the per-look alphas sum to the overall alpha (Bonferroni over looks),
so the chance that an A/A comparison is ever called DIFFERENT is at most alpha however the
looks are correlated, and the noise-band requirement only lowers it further. The split is
front-loaded: 80 % of alpha (0.008) goes to the first look because with 5 v 5 runs the
smallest two-sided exact p is 2/252 = 0.0079 (complete separation), so a large effect can
stop after 5 runs; the other 20 % is shared by the later looks, where n >= 10 makes tiny
p-values attainable and a strict threshold costs little. If the first look cannot reach
80 % of alpha at all (fewer than 5 runs), it gets none and the later looks share alpha
evenly. The p-value is distribution-free under the null (exact when there are no ties), so
this bound holds for any run-time distribution, not just the simulated ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray
from scipy.stats import mannwhitneyu

from triagebot.analyze.findings_models import (
    CellSummary,
    ComparisonResult,
    Decision,
    Interaction,
    NoiseBand,
    Verdict,
)
from triagebot.model import RunResult

FloatArray = NDArray[np.float64]
Samples = Sequence[float] | FloatArray

DEFAULT_ALPHA: Final = 0.01
CI_LEVEL: Final = 0.95
RESAMPLES: Final = 2000
SEED: Final = 0
BAND_FLOOR: Final = 0.01
DEFAULT_BAND: Final = 0.02
MAX_BAND_FOR_SAME: Final = 0.10
MIN_RUNS: Final = 5
RUN_STEP: Final = 5
FIRST_LOOK_SHARE: Final = 0.8
EXACT_MWU_MAX_N: Final = 30


# --- cleaning ---------------------------------------------------------------------------


def _clean(samples: Samples | None) -> tuple[FloatArray, int]:
    """Finite values as float64, and how many were dropped (NaN/inf: a run that broke)."""
    if samples is None:
        return np.empty(0), 0
    x = np.asarray(samples, dtype=np.float64).ravel()
    keep = np.isfinite(x)
    return x[keep], int(x.size - keep.sum())


def _problem(x: FloatArray, label: str, need: int = 2) -> str | None:
    """Why `x` cannot enter a ratio-of-medians bootstrap, or None when it can."""
    if x.size < need:
        return f"{label} has {x.size} finite run(s); need at least {need}"
    if np.any(x <= 0):
        return f"{label} has non-positive values (a 0 tok/s run is a failed run)"
    return None


def samples_from(results: Iterable[RunResult]) -> list[float]:
    """tok/s of every measured run of the results that finished ok (warm-ups are not in
    `runs`)."""
    return [m.tok_s for r in results if r.status == "ok" for m in r.runs]


# --- bootstrap --------------------------------------------------------------------------


def _boot_medians(x: FloatArray, rng: np.random.Generator, resamples: int) -> FloatArray:
    """Medians of `resamples` resamples of x, all drawn in one vectorised call.

    Indices into the *sorted* sample are sorted instead of the values: the middle order
    statistics of a resample are then two lookups, a few times faster than np.median.
    """
    n = x.size
    xs = np.sort(x)
    idx = np.sort(rng.integers(0, n, size=(resamples, n)), axis=1)
    return 0.5 * (xs[idx[:, (n - 1) // 2]] + xs[idx[:, n // 2]])


def _tails(level: float) -> tuple[float, float]:
    return (1.0 - level) / 2.0, 1.0 - (1.0 - level) / 2.0


def bootstrap_median_ci(
    samples: Samples, *, level: float = CI_LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the median, or None with fewer than 2 finite values."""
    x, _ = _clean(samples)
    if x.size < 2:
        return None
    meds = _boot_medians(x, np.random.default_rng(seed), resamples)
    lo, hi = np.quantile(meds, _tails(level))
    return float(lo), float(hi)


def summarize_cell(
    samples: Samples, *, level: float = CI_LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> CellSummary:
    """Median with bootstrap CI, mean, CV and n of one cell's runs."""
    x, dropped = _clean(samples)
    if x.size == 0:
        return CellSummary(n=0, dropped=dropped, ci_level=level, reason="no finite runs")
    mean = float(x.mean())
    cv = float(x.std(ddof=1) / mean) if x.size >= 2 and mean > 0 else None
    ci = bootstrap_median_ci(x, level=level, resamples=resamples, seed=seed)
    reason = None
    if ci is None:
        reason = "one run: no CI or CV"
    elif mean <= 0:
        reason = "mean is not positive: CV undefined"
    return CellSummary(
        n=int(x.size),
        median=float(np.median(x)),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        ci_level=level,
        mean=mean,
        cv=cv,
        minimum=float(x.min()),
        maximum=float(x.max()),
        dropped=dropped,
        reason=reason,
    )


def _boot_log_ratio(
    a: FloatArray, b: FloatArray, rng: np.random.Generator, resamples: int
) -> FloatArray:
    return np.log(_boot_medians(a, rng, resamples)) - np.log(_boot_medians(b, rng, resamples))


def ratio_of_medians_ci(
    a: Samples,
    b: Samples,
    *,
    level: float = CI_LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float, float] | None:
    """(median(a)/median(b), CI low, CI high), or None when either side is unusable.

    Arms are resampled independently (they are independent runs); the percentile interval
    is taken on the log ratio, which makes a/b and b/a mirror images.
    """
    xa, _ = _clean(a)
    xb, _ = _clean(b)
    if _problem(xa, "a") or _problem(xb, "b"):
        return None
    logs = _boot_log_ratio(xa, xb, np.random.default_rng(seed), resamples)
    lo, hi = np.quantile(logs, _tails(level))
    return float(np.median(xa) / np.median(xb)), float(math.exp(lo)), float(math.exp(hi))


# --- rank test --------------------------------------------------------------------------


def mann_whitney_p(a: Samples, b: Samples) -> tuple[float | None, str]:
    """Two-sided Mann-Whitney U p-value and the method used.

    Exact when there are no ties and both arms are small (the normal approximation is
    poorest exactly in the tails we test at); with ties, the normal approximation with tie
    correction, as Pinpoint does.
    """
    xa, _ = _clean(a)
    xb, _ = _clean(b)
    if xa.size == 0 or xb.size == 0:
        return None, "no data"
    pooled = np.concatenate([xa, xb])
    if np.ptp(pooled) == 0:
        return 1.0, "all values tied"
    ties = np.unique(pooled).size < pooled.size
    exact = not ties and max(xa.size, xb.size) <= EXACT_MWU_MAX_N
    method = "exact" if exact else "asymptotic"
    res = mannwhitneyu(xa, xb, alternative="two-sided", method=method)
    return float(res.pvalue), f"mann-whitney-u {method}"


def min_attainable_p(n_a: int, n_b: int) -> float:
    """Smallest two-sided exact Mann-Whitney p for these sizes: complete separation."""
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


# --- noise band -------------------------------------------------------------------------


def _band(half_width: float, **fields: object) -> NoiseBand:
    return NoiseBand(
        low=math.exp(-half_width), high=math.exp(half_width), half_width=half_width, **fields
    )


def default_band(note: str = "", *, half_width_pct: float = DEFAULT_BAND) -> NoiseBand:
    """±2 % when there is no A/A pair to measure noise from; the result says so."""
    why = note or "no A/A pair in the plan"
    return _band(
        math.log1p(half_width_pct),
        source="default",
        floor=BAND_FLOOR,
        note=f"{why}: default band ±{half_width_pct:.0%}, not measured on this runner",
    )


def noise_band(
    aa_a: Samples | None = None,
    aa_b: Samples | None = None,
    *,
    floor: float = BAND_FLOOR,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> NoiseBand:
    """Band δ = max(ln(1+floor), |ln(median(A)/median(A'))|) from the A/A pair (module doc)."""
    if aa_a is None or aa_b is None:
        return default_band()
    xa, _ = _clean(aa_a)
    xb, _ = _clean(aa_b)
    problem = _problem(xa, "A/A first cell") or _problem(xb, "A/A second cell")
    if problem:
        return default_band(f"A/A pair unusable ({problem})")
    ci = ratio_of_medians_ci(xa, xb, resamples=resamples, seed=seed)
    assert ci is not None  # _problem already ruled out every None case
    ratio, lo, hi = ci
    measured = abs(math.log(ratio))
    half = max(math.log1p(floor), measured)
    note = f"A/A pair ({xa.size} v {xb.size} runs) differs by {ratio - 1:+.2%}" + (
        f"; floor ±{floor:.0%} applies" if half > measured else ""
    )
    if half > math.log1p(MAX_BAND_FOR_SAME):
        note += f"; wider than ±{MAX_BAND_FOR_SAME:.0%}, so this runner cannot call SAME"
    return _band(
        half,
        source="aa_pair",
        floor=floor,
        aa_ratio=ratio,
        aa_ci_low=lo,
        aa_ci_high=hi,
        aa_n_a=int(xa.size),
        aa_n_b=int(xb.size),
        note=note,
    )


# --- verdict ----------------------------------------------------------------------------


def decide(
    p: float | None, alpha: float, ci_low: float | None, ci_high: float | None, band: NoiseBand
) -> tuple[Verdict, str]:
    """The three-way rule of design.md §5 (see the module docstring)."""
    if p is None or ci_low is None or ci_high is None:
        return "UNKNOWN", "no p-value or CI"
    outside = ci_low > band.high or ci_high < band.low
    inside = band.low <= ci_low and ci_high <= band.high
    ci_txt = f"CI [{ci_low:.3f}, {ci_high:.3f}]"
    band_txt = f"band [{band.low:.3f}, {band.high:.3f}]"
    if outside and p < alpha:
        return "DIFFERENT", f"p={p:.2g} < {alpha:.2g} and {ci_txt} outside {band_txt}"
    if inside:
        if band.half_width > math.log1p(MAX_BAND_FOR_SAME):
            return "UNKNOWN", f"{ci_txt} inside {band_txt}, but that band is too wide to vouch"
        real = f"; p={p:.2g}: real, but no bigger than A/A noise" if p < alpha else ""
        return "SAME", f"{ci_txt} inside {band_txt}{real}"
    if outside:
        return "UNKNOWN", f"{ci_txt} outside {band_txt} but p={p:.2g} >= {alpha:.2g}"
    return "UNKNOWN", f"{ci_txt} straddles {band_txt} (p={p:.2g})"


def _degenerate(xa: FloatArray, xb: FloatArray, dropped: int) -> tuple[str | None, bool]:
    """(why the pair cannot be compared, whether more runs could fix it)."""
    note = f" ({dropped} non-finite run(s) dropped)" if dropped else ""
    for x, label in ((xa, "a"), (xb, "b")):
        problem = _problem(x, f"arm {label}")
        if problem:
            return problem + note, x.size < 2 and not np.any(x <= 0)
    if np.ptp(xa) == 0 and np.ptp(xb) == 0:
        return "no run-to-run spread in either arm: the CI would be a point", False
    return None, True


def compare(
    a: Samples,
    b: Samples,
    band: NoiseBand | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    name: str = "",
    level: float = CI_LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> ComparisonResult:
    """Ratio median(a)/median(b) with CI, Mann-Whitney p and the verdict against `band`."""
    return _compare(
        a, b, band, alpha=alpha, name=name, level=level, resamples=resamples, seed=seed
    )[0]


def _compare(
    a: Samples,
    b: Samples,
    band: NoiseBand | None,
    *,
    alpha: float,
    name: str,
    level: float,
    resamples: int,
    seed: int,
) -> tuple[ComparisonResult, bool]:
    """compare() plus whether more runs could turn an UNKNOWN into something else."""
    band = band or default_band()
    xa, da = _clean(a)
    xb, db = _clean(b)
    base = {
        "name": name,
        "n_a": int(xa.size),
        "n_b": int(xb.size),
        "alpha": alpha,
        "band": band,
        "ci_level": level,
    }
    meds: dict[str, float | None] = {
        "median_a": float(np.median(xa)) if xa.size else None,
        "median_b": float(np.median(xb)) if xb.size else None,
    }
    problem, fixable = _degenerate(xa, xb, da + db)
    if problem:
        ratio = None
        ma, mb = meds["median_a"], meds["median_b"]
        if ma is not None and mb is not None and ma > 0 and mb > 0:
            ratio = ma / mb
        res = ComparisonResult(**base, **meds, ratio=ratio, verdict="UNKNOWN", reason=problem)
        return res, fixable
    ci = ratio_of_medians_ci(xa, xb, level=level, resamples=resamples, seed=seed)
    assert ci is not None  # _degenerate already ruled out every None case
    p, method = mann_whitney_p(xa, xb)
    verdict, reason = decide(p, alpha, ci[1], ci[2], band)
    if da + db:
        reason += f" ({da + db} non-finite run(s) dropped)"
    res = ComparisonResult(
        **base,
        **meds,
        ratio=ci[0],
        ci_low=ci[1],
        ci_high=ci[2],
        p_value=p,
        p_method=method,
        verdict=verdict,
        reason=reason,
    )
    return res, True


# --- interaction ------------------------------------------------------------------------


def interaction(
    a1: Samples,
    b1: Samples,
    a2: Samples,
    b2: Samples,
    band: NoiseBand | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    name: str = "",
    level: float = CI_LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interaction:
    """(a1/b1) / (a2/b2) with a bootstrap CI, e.g. spec/no-spec under graph over eager.

    There is no rank test for a ratio of ratios, so the verdict uses the CI alone, at the
    strictness alpha asks for: DIFFERENT when the (1 - alpha) CI lies outside the band,
    SAME when the `level` CI lies inside it. The band is the comparison band widened by √2
    on the log scale: four cells carry four independent process offsets, a ratio two.
    """
    base_band = band or default_band()
    wide = _band(
        base_band.half_width * math.sqrt(2.0),
        **base_band.model_dump(exclude={"low", "high", "half_width", "note"}),
        note=(base_band.note + "; ×√2 for a ratio of ratios").lstrip("; "),
    )
    xs = [_clean(s)[0] for s in (a1, b1, a2, b2)]
    counts = {"n_a1": xs[0].size, "n_b1": xs[1].size, "n_a2": xs[2].size, "n_b2": xs[3].size}
    head = {
        "name": name,
        "band": wide,
        "ci_level": level,
        "strict_ci_level": 1.0 - alpha,
        **{k: int(v) for k, v in counts.items()},
    }
    problems = [_problem(x, lbl) for x, lbl in zip(xs, ("a1", "b1", "a2", "b2"), strict=True)]
    problem = next((p for p in problems if p), None)
    if problem is None and all(np.ptp(x) == 0 for x in xs):
        problem = "no run-to-run spread in any cell: the CI would be a point"
    if problem:
        return Interaction(**head, verdict="UNKNOWN", reason=problem)
    meds = [float(np.median(x)) for x in xs]
    r1, r2 = meds[0] / meds[1], meds[2] / meds[3]
    rng = np.random.default_rng(seed)
    logs = _boot_log_ratio(xs[0], xs[1], rng, resamples) - _boot_log_ratio(
        xs[2], xs[3], rng, resamples
    )
    lo, hi = np.exp(np.quantile(logs, _tails(level)))
    slo, shi = np.exp(np.quantile(logs, _tails(1.0 - alpha)))
    verdict: Verdict
    if shi < wide.low or slo > wide.high:
        verdict, reason = "DIFFERENT", f"{1 - alpha:.0%} CI [{slo:.3f}, {shi:.3f}] outside band"
    elif wide.low <= lo and hi <= wide.high:
        verdict, reason = "SAME", f"{level:.0%} CI [{lo:.3f}, {hi:.3f}] inside band"
    else:
        verdict, reason = "UNKNOWN", f"{level:.0%} CI [{lo:.3f}, {hi:.3f}] overlaps band edge"
    return Interaction(
        **head,
        ratio_1=r1,
        ratio_2=r2,
        ratio_of_ratios=r1 / r2,
        ci_low=float(lo),
        ci_high=float(hi),
        strict_ci_low=float(slo),
        strict_ci_high=float(shi),
        verdict=verdict,
        reason=reason,
    )


# --- escalation -------------------------------------------------------------------------


def look_schedule(max_runs: int, min_runs: int = MIN_RUNS, step: int = RUN_STEP) -> list[int]:
    """Runs per arm at each look: min_runs, +step, ..., and max_runs as the last look."""
    if max_runs <= min_runs:
        return [max(max_runs, 1)]
    looks = list(range(min_runs, max_runs, max(step, 1)))
    return [*looks, max_runs]


def look_alphas(schedule: Sequence[int], alpha: float = DEFAULT_ALPHA) -> list[float]:
    """Per-look thresholds summing to alpha (Bonferroni over looks; module docstring)."""
    if len(schedule) == 1:
        return [alpha]
    later = len(schedule) - 1
    first = FIRST_LOOK_SHARE * alpha
    if min_attainable_p(schedule[0], schedule[0]) >= first:
        return [0.0] + [alpha / later] * later
    return [first] + [(alpha - first) / later] * later


def next_step(
    samples_a: Samples,
    samples_b: Samples,
    noise_band: NoiseBand | None,
    runs_so_far: int,
    max_runs: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_runs: int = MIN_RUNS,
    step: int = RUN_STEP,
    name: str = "",
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Decision:
    """Look at a comparison after `runs_so_far` runs per arm: stop, or how many more.

    The look's index is the last schedule point <= runs_so_far, so a caller that follows
    the decisions spends each look's alpha once. Before the first schedule point nothing
    can be DIFFERENT (alpha 0) and the answer is always "run more".
    """
    schedule = look_schedule(max_runs, min_runs, step)
    alphas = look_alphas(schedule, alpha)
    reached = [i for i, n in enumerate(schedule) if n <= runs_so_far]
    look = reached[-1] if reached else 0
    look_alpha = alphas[look] if reached else 0.0
    result, fixable = _compare(
        samples_a,
        samples_b,
        noise_band,
        alpha=look_alpha,
        name=name,
        level=CI_LEVEL,
        resamples=resamples,
        seed=seed,
    )
    common = {
        "runs_so_far": runs_so_far,
        "max_runs": max_runs,
        "look": look,
        "looks_planned": len(schedule),
        "schedule": schedule,
        "comparison": result,
    }
    if not reached:
        more = schedule[0] - runs_so_far
        return Decision(
            **common,
            action="run_more",
            more_runs_per_arm=more,
            reason=f"fewer than {schedule[0]} runs per arm: run {more} more",
        )
    if result.verdict != "UNKNOWN":
        return Decision(
            **common, action="stop", reason=f"{result.verdict} at {runs_so_far} runs per arm"
        )
    if not fixable:
        return Decision(**common, action="stop", reason=f"more runs cannot help: {result.reason}")
    if look == len(schedule) - 1:
        return Decision(
            **common,
            action="stop",
            reason=f"UNKNOWN after {runs_so_far} runs per arm: budget spent",
        )
    more = schedule[look + 1] - runs_so_far
    return Decision(
        **common,
        action="run_more",
        more_runs_per_arm=more,
        reason=f"UNKNOWN ({result.reason}): run {more} more per arm",
    )
