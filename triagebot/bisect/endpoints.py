"""What kind of point good= and bad= name, and the level a bisect therefore starts at.

A release (`0.17.0`) starts at releases; a nightly (`0.25.1.dev202607100938`) at the
nightlies between the two ends; a commit SHA (7 to 40 hex digits) at the first-parent
commits between the two ends, read from GitHub's compare API, where a release on the
other side stands for its `v<release>` tag. A nightly names no commit, so a nightly and a
SHA together are refused rather than guessed at.

Order is checked here where the points say it: releases by version, two nightlies by
build time (their dev numbers mix 8- and 12-digit dates), a release and a nightly by
version. Two SHAs say nothing about their order; the compare API's status does
(`triagebot.bisect.shas`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from triagebot.bisect.ranges import (
    BisectError,
    BisectRange,
    Direction,
    Level,
    build_time,
    check_direction,
    is_sha,
    is_version,
    oriented,
    version_key,
)

Kind = Literal["release", "nightly", "commit"]


def classify(value: str) -> Kind:
    """The kind of one endpoint; a BisectError that says what to write for anything else.

    All-digit strings are versions, never SHAs ("20260611" is no commit); a SHA must have
    a letter a-f or be written with one, as git prints them."""
    text = value.strip().lower()
    if is_version(text):
        if build_time(text) is not None:
            return "nightly"
        if "dev" in text:
            raise BisectError(f"{value[:40]!r} is a dev build whose number is not a build "
                              "date: name a release (0.17.1), a nightly "
                              "(0.22.2.dev20260611) or a commit SHA")
        return "release"
    if is_sha(text):
        return "commit"
    more = "; a SHA of digits only needs more of its digits" if text.isdigit() else ""
    raise BisectError(f"{value[:40]!r} is not a release (0.17.1), a nightly "
                      f"(0.22.2.dev20260611) or a commit SHA (7 to 40 hex digits){more}")


def start_level(good: str, bad: str, direction: Direction) -> tuple[Level, str]:
    """The level a bisect from good to bad starts at, and the sentence that says why.
    Refuses the pairs that cannot be bisected: the same point twice, a nightly with a SHA,
    and an order the points themselves show to be inverted."""
    kinds = {classify(good), classify(bad)}
    if good.strip().lower() == bad.strip().lower():
        raise BisectError(f"good and bad are both {good}: the range is empty")
    if kinds == {"nightly", "commit"}:
        raise BisectError("a nightly names no commit: give a commit SHA (or the release) "
                          "for both ends, or two nightlies/releases")
    if "commit" in kinds:
        short = good[:10] if classify(good) == "commit" else bad[:10]
        return "commit", (f"starts at commits: {short} is a commit SHA, so the first-parent "
                          "commits between the two ends are searched directly")
    if "nightly" in kinds:
        check_nightly_order(good, bad, direction)
        return "nightly", ("starts at nightlies: an end is a nightly build, so the "
                           "nightlies built between the two ends are searched directly")
    check_direction(good, bad, direction, version_key(good) < version_key(bad))
    return "release", "starts at releases: both ends are releases"


def check_nightly_order(good: str, bad: str, direction: Direction) -> None:
    """Two nightlies by build time, a nightly and a release by version; a clear error
    where good and bad are the same build or in the wrong order for `direction`."""
    tg, tb = build_time(good), build_time(bad)
    if tg is not None and tb is not None:
        if tg == tb:
            raise BisectError(f"good={good} and bad={bad} were built at the same time: the "
                              "range is empty")
        check_direction(good, bad, direction, tg < tb)
        return
    check_direction(good, bad, direction, version_key(good) < version_key(bad))


def tag_or_sha(value: str) -> str:
    """The git ref of an endpoint on the compare API: a release's `v<release>` tag (the
    engines' tags read v0.20.0), a SHA as given."""
    return f"v{value}" if classify(value) == "release" else value.strip().lower()


def _after(version: str, end: str) -> bool:
    """Whether nightly `version` was built after `end` (a nightly, or a release, which a
    nightly follows when its version is higher)."""
    t_v, t_end = build_time(version), build_time(end)
    if t_v is not None and t_end is not None:
        return t_v > t_end
    return version_key(version) > version_key(end)


def nightly_span(known: Sequence[str], releases: Sequence[str], good: str, bad: str, *,
                 direction: Direction = "regress") -> BisectRange:
    """The nightlies the index lists between good and bad (nightlies, or a nightly and a
    release), oldest build first, with the two ends. An end the index does not list is a
    clear error naming the nearest builds it does."""
    check_nightly_order(good, bad, direction)
    builds = sorted({v for v in known if build_time(v) is not None},
                    key=lambda v: (build_time(v), version_key(v)))
    for name, value in (("good", good), ("bad", bad)):
        if classify(value) == "release" and value not in releases:
            raise BisectError(f"{name}={value} is not a release the index lists")
        if classify(value) == "nightly" and value not in builds:
            when = build_time(value)
            assert when is not None
            near = sorted(builds, key=lambda v: abs((build_time(v) or when) - when))[:3]
            raise BisectError(f"{name}={value} is not a nightly the index lists"
                              + (f": the nearest are {', '.join(near)}" if near else ""))
    older, newer = oriented(good, bad, direction)
    inside = [v for v in builds if v not in (older, newer)
              and _after(v, older) and not _after(v, newer)]
    return BisectRange.over("nightly", direction, [older, *inside, newer])
