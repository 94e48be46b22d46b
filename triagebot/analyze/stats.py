"""Per-cell summaries, the A/A noise measurement and the ratio-of-ratios interaction.

The verdict on a comparison lives in `verdict.py`; this module describes cells and the
runner. Samples are per-run values of a higher-is-better metric (tok/s). Intervals here
are percentile bootstraps drawn from a seeded `numpy.random.Generator`, so the same samples
always give the same report. Nothing here raises on bad data: empty, single, NaN, zero or
constant samples come back with a reason.

**A/A pair** (`noise_band`). Two cells with identical configuration run like any other
pair. Their ratio of medians r_AA says how far apart two runs of the same thing land on
this runner, with process starts and drift between them; the report shows it beside the
practical margin. It no longer gates verdicts (a single 5 v 5 pair is too noisy a
yardstick); when it is wider than the margin, the report says the runner cannot vouch for
differences that small. With no usable A/A pair the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Final

import numpy as np

from triagebot.analyze.arrays import FloatArray, Samples
from triagebot.analyze.findings_models import CellSummary, Interaction, NoiseBand
from triagebot.analyze.verdict import DEFAULT_ALPHA, margin_band
from triagebot.analyze.verdict_words import Verdict
from triagebot.run_result import RunResult

CI_LEVEL: Final = 0.95
RESAMPLES: Final = 2000
SEED: Final = 0
BAND_FLOOR: Final = 0.01
DEFAULT_BAND: Final = 0.02


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


def cpu_samples_from(results: Iterable[RunResult]) -> list[float] | None:
    """Output tokens per CPU second of every measured run, or None when a run did not
    record its CPU time (a cell is summarised on one footing or not at all)."""
    runs = [m for r in results if r.status == "ok" for m in r.runs]
    if not runs or any(not m.cpu_s for m in runs):
        return None
    return [m.output_tokens / m.cpu_s for m in runs if m.cpu_s]


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


# --- interaction ------------------------------------------------------------------------


def interaction(
    top: tuple[Samples, Samples],
    bottom: tuple[Samples, Samples],
    band: NoiseBand | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    name: str = "",
    level: float = CI_LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Interaction:
    """(a1/b1) / (a2/b2) with a bootstrap CI, where `top` is (a1, b1) and `bottom` is
    (a2, b2): e.g. spec/no-spec under graph over eager.

    There is no rank test for a ratio of ratios, so the verdict uses the CI alone, at the
    strictness alpha asks for: DIFFERENT when the (1 - alpha) CI lies outside the band,
    SAME when the `level` CI lies inside it. The band is the practical margin widened by √2
    on the log scale: four cells carry four independent process offsets, a ratio two.
    """
    base_band = band or margin_band()
    wide = _band(
        base_band.half_width * math.sqrt(2.0),
        **base_band.model_dump(exclude={"low", "high", "half_width", "note"}),
        note=(base_band.note + "; ×√2 for a ratio of ratios").lstrip("; "),
    )
    xs = [_clean(s)[0] for s in (*top, *bottom)]
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
