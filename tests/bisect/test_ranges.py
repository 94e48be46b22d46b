"""Ranges: order, both directions, and every way a range can be wrong."""

from __future__ import annotations

import pytest

from triagebot.bisect.ranges import (
    BisectError,
    commit_range,
    finals,
    nightlies,
    release_range,
    version_key,
)

KNOWN = [f"1.{k}" for k in range(21)]  # 1.0 .. 1.20, listed out of order below


def test_release_range_orders_by_version_not_text() -> None:
    rng = release_range(list(reversed(KNOWN)), "1.2", "1.10")
    assert rng.points == [f"1.{k}" for k in range(2, 11)]
    assert rng.candidates == 8
    assert rng.direction == "regress"


def test_inverted_range_is_a_clear_error_that_names_the_fix() -> None:
    with pytest.raises(BisectError, match=r"newer than bad.*regress=success"):
        release_range(KNOWN, "1.10", "1.2")


def test_success_direction_takes_the_broken_point_first() -> None:
    rng = release_range(KNOWN, "1.10", "1.2", direction="success")
    assert rng.points[0] == "1.2" and rng.points[-1] == "1.10"
    with pytest.raises(BisectError, match="Swap them"):
        release_range(KNOWN, "1.2", "1.10", direction="success")


def test_empty_range() -> None:
    with pytest.raises(BisectError, match="empty"):
        release_range(KNOWN, "1.3", "1.3")


@pytest.mark.parametrize(("bad", "says"), [
    ("1.25", "past the newest known release, 1.20"),
    ("0.9", "before the oldest known release, 1.0"),
])
def test_point_outside_the_known_releases(bad: str, says: str) -> None:
    with pytest.raises(BisectError, match=says):
        release_range(KNOWN, "1.0" if bad != "0.9" else "1.3", bad)


def test_unknown_point_inside_names_its_neighbours() -> None:
    known = ["0.17.1", "0.18.0", "0.19.0"]
    with pytest.raises(BisectError, match=r"nearest known are 0\.17\.1, 0\.18\.0, 0\.19\.0"):
        release_range(known, "0.17.1", "0.18.5")


def test_malformed_version() -> None:
    with pytest.raises(BisectError, match="not a release"):
        release_range(KNOWN, "1.0; rm -rf /", "1.3")


def test_nightlies_sort_before_their_release() -> None:
    listed = ["0.22.2", "0.22.2.dev20260612", "0.22.2.dev20260611", "0.22.1", "0.22.2.post1"]
    assert finals(listed) == ["0.22.1", "0.22.2"]
    assert nightlies(listed) == ["0.22.2.dev20260611", "0.22.2.dev20260612"]
    assert sorted(listed, key=version_key) == [
        "0.22.1", "0.22.2.dev20260611", "0.22.2.dev20260612", "0.22.2", "0.22.2.post1"]


def test_commit_range_by_prefix_and_its_errors() -> None:
    commits = [f"a{k:x}" * 4 for k in range(1, 9)]  # 8 distinct 8-digit SHAs, oldest first
    rng = commit_range(commits, commits[1][:7], commits[6])
    assert rng.level == "commit" and rng.points == commits[1:7]
    with pytest.raises(BisectError, match="not on the first-parent history"):
        commit_range(commits, "abcdef0", commits[3])
    with pytest.raises(BisectError, match="not a commit SHA"):
        commit_range(commits, "main", commits[3])
    with pytest.raises(BisectError, match="newer than bad"):
        commit_range(commits, commits[5], commits[2])
