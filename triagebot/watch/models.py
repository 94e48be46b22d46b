"""The watch's data: one row per release, and what a step measured."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from triagebot.analyze.verdict_words import Verdict
from triagebot.frozen import Frozen

WatchState = Literal["reproduced", "fixed", "worse", "back", "broken", "config_invalid",
                     "inconclusive"]
# How a state reads in a table or a comment.
STATE_WORDS: dict[str, str] = {
    "reproduced": "still reproduced", "fixed": "fixed", "worse": "worse", "back": "back",
    "broken": "broken", "config_invalid": "config no longer valid",
    "inconclusive": "inconclusive",
}
# States that say where the report stands (the others say a release could not tell).
DECIDED: tuple[str, ...] = ("reproduced", "fixed", "worse", "back")
# Which side of 1 the deciding ratio sits on while the report holds: "below" for a
# slowdown (spec/no_spec < 1), "above" for a ratio the report says is too high.
Direction = Literal["below", "above"]


class Ratio(Frozen):
    """A ratio with its interval, verdict and runs, as the step's analysis gave it."""

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: Verdict = "UNKNOWN"
    n_a: int = 0
    n_b: int = 0
    reason: str = ""


class Reading(Frozen):
    """What one watch step measured at `release`, against `against` where it ran both.

    `crash` is the line a release failed on (it crashed or refused the configuration);
    `invalid` says which configuration key the release no longer takes. Either leaves
    the ratios unset."""

    release: str
    against: str | None = None
    comparison: str = ""
    ratio: Ratio | None = None
    # The new release's ratio over the old one's, measured in the same job.
    change: Ratio | None = None
    crash: str = ""
    invalid: str = ""
    margin: float = Field(default=0.03, gt=0.0, le=0.5)


class WatchRow(Frozen):
    """One release in the Watch table."""

    release: str
    against: str | None = None
    date: str = ""
    comparison: str = ""
    ratio: Ratio | None = None
    change: Ratio | None = None
    state: WatchState
    reason: str
    job_url: str = ""
    runner_minutes: float = Field(default=0.0, ge=0.0)

    @property
    def words(self) -> str:
        return STATE_WORDS[self.state]


class WatchRunSpec(Frozen):
    """What a watch run (a job of the App) measures: `release` against `against` (None:
    the first release measured), the comparison that decided the report."""

    release: str
    against: str | None = None
    comparison: str
    direction: Direction = "below"
    date: str = ""  # the release's date, as its feed gave it
    # The index a nightly is installed from, where the repo names one ("": the runner's).
    index: str = ""
