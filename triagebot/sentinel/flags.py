"""What in one case's figures at one release needs a maintainer's look, each in one line.

A case is flagged when the release crashed or refused the configuration; and, per mode,
when speculation stopped paying (faster than no speculation at the previous release,
measured in the same job, and no longer faster now), when the speed-up fell beyond the
margin (the ratio of ratios, new over previous, lies wholly below 1 - margin), when
acceptance fell beyond its interval (the new interval lies wholly below the previous
one), or when greedy outputs with speculation differ from those without. An
inconclusive case (the previous release failed in this job) is not flagged: nothing was
compared.
"""

from __future__ import annotations

import math

from triagebot.sentinel.models import CaseFigures, Flag, Interval, ModeFigures

# z of a two-sided 95 % interval.
Z95 = 1.96


def flags_for(figures: CaseFigures, margin: float) -> list[Flag]:
    """The flags of one case at one release; `margin` as a fraction (0.05: 5 %)."""
    def flag(kind: str, reason: str, mode: ModeFigures | None = None) -> Flag:
        return Flag.model_validate({
            "case_id": figures.case_id, "release": figures.release,
            "previous": figures.previous, "kind": kind,
            "mode": mode.mode if mode else None, "reason": reason})

    if figures.status in ("crashed", "refused"):
        verb = "crashed" if figures.status == "crashed" else "refused the configuration"
        line = figures.error_line or "no line from the engine"
        return [flag(figures.status, f"{figures.release} {verb}: {line}")]
    if figures.status != "ok":
        return []
    out: list[Flag] = []
    for mode in figures.modes:
        for kind, reason in mode_problems(mode, figures.release, figures.previous, margin):
            out.append(flag(kind, reason, mode))
    return out


def mode_problems(mode: ModeFigures, release: str, previous: str | None,
                  margin: float) -> list[tuple[str, str]]:
    """(kind, reason) of each problem in one mode's figures."""
    where = f"under {mode.mode}"
    now = ratio_words(mode.spec_ratio, mode.spec_ci, mode.verdict)
    then = ratio_words(mode.previous_spec_ratio, mode.previous_spec_ci, mode.previous_verdict)
    found: list[tuple[str, str]] = []
    if previous is not None and pays(mode.previous_verdict, mode.previous_spec_ratio) \
            and mode.verdict in ("SAME", "DIFFERENT") \
            and not pays(mode.verdict, mode.spec_ratio):
        found.append(("stopped_paying", f"speculation stopped paying {where}: spec/no-spec "
                                        f"{now} at {release}, {then} at {previous}"))
    if previous is not None and fell(mode.ratio_of_ratios, mode.ror_ci, mode.ror_verdict,
                                     margin):
        change = ratio_words(mode.ratio_of_ratios, mode.ror_ci, mode.ror_verdict)
        found.append(("speedup_fell",
                      f"the speed-up fell {where}: {release}'s spec/no-spec is {change} of "
                      f"{previous}'s, beyond the {margin:.0%} margin"))
    if previous is not None and below(mode.acceptance_ci, mode.previous_acceptance_ci):
        rate = percent(mode.acceptance_rate, mode.acceptance_ci)
        rate_then = percent(mode.previous_acceptance, mode.previous_acceptance_ci)
        found.append(("acceptance_fell", f"acceptance fell {where}: {rate} at {release}, "
                                         f"{rate_then} at {previous}"))
    if mode.outputs_equal is False:
        before = ""
        if previous is not None and mode.previous_outputs_equal is not None:
            before = (f" ({previous}'s were equal)" if mode.previous_outputs_equal
                      else f" (as at {previous})")
        found.append(("outputs_diverged",
                      f"greedy outputs with speculation differ from those without {where} "
                      f"at {release}{before}"))
    return found


def pays(verdict: str | None, ratio: float | None) -> bool:
    """Speculation is faster than no speculation, beyond noise."""
    return verdict == "DIFFERENT" and ratio is not None and ratio > 1.0


def fell(ratio: float | None, ci: Interval | None, verdict: str | None, margin: float) -> bool:
    """The ratio of ratios lies below 1 - margin: its whole interval where it has one,
    else a DIFFERENT verdict with the point below."""
    if ci is not None:
        return ci[1] < 1.0 - margin
    return verdict == "DIFFERENT" and ratio is not None and ratio < 1.0 - margin


def below(new: Interval | None, old: Interval | None) -> bool:
    """The new interval lies wholly below the old one."""
    return new is not None and old is not None and new[1] < old[0]


def acceptance_interval(accepted: float, drafted: float, z: float = Z95) -> Interval | None:
    """Wilson's interval for accepted / drafted tokens (None without drafts)."""
    if drafted <= 0:
        return None
    rate = min(max(accepted / drafted, 0.0), 1.0)
    denom = 1.0 + z * z / drafted
    centre = (rate + z * z / (2 * drafted)) / denom
    half = z * math.sqrt(rate * (1 - rate) / drafted + z * z / (4 * drafted * drafted)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def ratio_words(value: float | None, ci: Interval | None, verdict: str | None) -> str:
    """`0.91x [0.86, 0.96] (DIFFERENT)`; `-` where not measured."""
    if value is None:
        return "-"
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else ""
    return f"{value:.2f}x{interval}" + (f" ({verdict})" if verdict else "")


def percent(value: float | None, ci: Interval | None) -> str:
    """`53 % [48, 58]`; `-` where not measured."""
    if value is None:
        return "-"
    interval = f" [{ci[0]:.0%}, {ci[1]:.0%}]".replace("%", "") if ci is not None else ""
    return f"{value:.0%}{interval}"
