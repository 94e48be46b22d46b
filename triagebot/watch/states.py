"""The state a watch step puts the thread in, with its one-line reason.

- *config no longer valid*: the release removed a key the configuration needs (named);
- *broken*: the release crashed or refused the configuration (its line quoted);
- *inconclusive*: the deciding comparison stayed UNKNOWN within the step's budget;
- *fixed*: the deciding comparison is SAME, or now lies on the other side of 1;
- *back*: the report holds again after a release where it was fixed;
- *worse*: it holds, and the new release's ratio is further from 1 than the last
  release's, measured side by side, by more than the margin;
- *still reproduced*: it holds, no worse than before.

A release that could not tell (broken, inconclusive, config) never counts as the fixed
release a later *back* refers to: only decided states do.
"""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.watch.models import (
    DECIDED,
    Direction,
    Ratio,
    Reading,
    WatchRow,
    WatchState,
)


def judge(reading: Reading, earlier: Sequence[WatchRow], direction: Direction
          ) -> tuple[WatchState, str]:
    """The state of the thread after `reading`, given the rows before it (oldest first)
    and the side of 1 the report's ratio lies on."""
    if reading.invalid:
        return "config_invalid", f"{reading.release}: {reading.invalid}"
    if reading.crash:
        return "broken", f"{reading.release} fails: {reading.crash}"
    ratio = reading.ratio
    name = reading.comparison or "the deciding comparison"
    if ratio is None or ratio.value is None or ratio.verdict == "UNKNOWN":
        why = ratio.reason if ratio is not None and ratio.reason else "no verdict"
        return "inconclusive", f"{name} is UNKNOWN at {reading.release}: {why}"
    figure = f"{name} {describe(ratio)}"
    if not holds(ratio, direction):
        if ratio.verdict == "SAME":
            return "fixed", (f"{figure}: SAME, within ±{reading.margin:.0%} at "
                             f"{reading.release}")
        return "fixed", f"{figure}: DIFFERENT {_other(direction)} 1, reversed"
    last = next((row for row in reversed(earlier) if row.state in DECIDED), None)
    if last is not None and last.state == "fixed":
        return "back", f"{figure} at {reading.release}, after {last.release} had fixed it"
    if reading.against and _further(reading.change, direction, reading.margin):
        change = reading.change
        assert change is not None and change.value is not None
        return "worse", (f"{figure}, {change.value:.2f}x of {reading.against}'s ratio "
                         f"(side by side, beyond ±{reading.margin:.0%})")
    since = f" as at {reading.against}" if reading.against else ""
    return "reproduced", f"{figure}: DIFFERENT {direction} 1{since}"


def holds(ratio: Ratio, direction: Direction) -> bool:
    """Whether the report's symptom shows: the ratio DIFFERENT on the report's side."""
    if ratio.verdict != "DIFFERENT" or ratio.value is None:
        return False
    return ratio.value < 1 if direction == "below" else ratio.value > 1


def direction_of(symptom: str | None, ratio: Ratio | None) -> Direction:
    """The side of 1 the report's ratio lies on: a slowdown is below, otherwise where the
    first measured ratio lay."""
    if symptom in ("spec_slower_than_baseline", "graph_slower_than_eager"):
        return "below"
    if ratio is not None and ratio.value is not None and ratio.value > 1:
        return "above"
    return "below"


def describe(ratio: Ratio) -> str:
    """`0.58x [0.55, 0.61] (24 v 24 runs)`."""
    if ratio.value is None:
        return "no ratio"
    ci = (f" [{ratio.ci_low:.2f}, {ratio.ci_high:.2f}]"
          if ratio.ci_low is not None and ratio.ci_high is not None else "")
    runs = f" ({ratio.n_a} v {ratio.n_b} runs)" if ratio.n_a or ratio.n_b else ""
    return f"{ratio.value:.2f}x{ci}{runs}"


def _further(change: Ratio | None, direction: Direction, margin: float) -> bool:
    """The new ratio over the old one is DIFFERENT and away from 1 beyond the margin."""
    if change is None or change.value is None or change.verdict != "DIFFERENT":
        return False
    if direction == "below":
        return change.value < 1 - margin
    return change.value > 1 + margin


def _other(direction: Direction) -> str:
    return "above" if direction == "below" else "below"


def stop_after(rows: Sequence[WatchRow], fixed_in_a_row: int) -> bool:
    """Whether the last `fixed_in_a_row` decided rows are all fixed (the watch may end)."""
    decided = [r for r in rows if r.state in DECIDED]
    tail = decided[-fixed_in_a_row:]
    return len(tail) == fixed_in_a_row and all(r.state == "fixed" for r in tail)
