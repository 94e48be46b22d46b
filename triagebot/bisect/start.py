"""Where a bisect starts, from what good= and bad= name (`triagebot.bisect.endpoints`):
the range of that level, the commits and wheel index where it is the commit level, the
release whose keys plan its steps, and the sentence the report shows about it.

The listings are passed in as callables, so only the level that needs one reads it (the
nightly index for nightlies, GitHub's compare API for SHAs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import Field

from triagebot.bisect import endpoints, ranges
from triagebot.bisect.ranges import BisectRange, Direction
from triagebot.bisect.rank import CommitInfo
from triagebot.bisect.runner import CommitPlan
from triagebot.frozen import Frozen

ShaPlan = Callable[[str, str, Direction], CommitPlan]


class Start(Frozen):
    range: BisectRange
    why: str
    commits: list[CommitInfo] = Field(default_factory=list)
    index: str = ""
    plan_version: str = ""


def first_level(good: str, bad: str, direction: Direction, releases: Sequence[str],
                sha_plan: ShaPlan, nightlies: Callable[[], Sequence[str]]) -> Start:
    """The first level's range; a BisectError for a pair that cannot be bisected."""
    level, why = endpoints.start_level(good, bad, direction)
    if level == "release":
        return Start(range=ranges.release_range(releases, good, bad, direction=direction),
                     why=why)
    if level == "nightly":
        rng = endpoints.nightly_span(ranges.nightlies(nightlies()), releases, good, bad,
                                     direction=direction)
        return Start(range=rng, why=why)
    found = sha_plan(good, bad, direction)
    # A commit has no release table: plan with the release end's keys, else the newest
    # release's (the commits between two SHAs are recent main-branch ones).
    named = [p for p in (good, bad) if endpoints.classify(p) == "release"]
    version = named[0] if named else (releases[-1] if releases else "")
    if not version:
        raise ranges.BisectError("the package index lists no release to plan the commit "
                                 "steps with")
    return Start(range=found.range, why=f"{why}; steps are planned with {version}'s keys",
                 commits=found.commits, index=found.index, plan_version=version)
